"""How the package's values show in IPython (``_repr_pretty_``) and notebooks
(``_repr_html_``): the layout, from each value's fields.

A leaf module (bindings/package_types.hpp): the binding's classes call :func:`pretty` and
:func:`html` from their ``_repr_pretty_`` / ``_repr_html_`` (bindings/bind_display.cpp, which
also makes their reprs hashable, as pprint needs), and the pure-Python value classes take them
as methods.  It imports nothing of the package.
"""

from __future__ import annotations

import dataclasses
import enum
import html as _html
from typing import Any, Iterable

# The fields shown for the bound value classes that have no _fields of their own, in the order
# a reader wants them.
BOUND_FIELDS = {
    "AdapterInfoQuery": ("status", "buffer_size", "info"),
    "Call": ("status", "completions", "completion_status", "done", "object"),
    "LamCall": ("status", "completions", "completion_status", "done", "lam"),
    "Lam": ("status", "lam_size", "fbo", "adapter_page_count", "mapped"),
    "Result": ("status", "nd_status", "bytes_transferred", "qp_context", "request_context"),
    "ResultEx": ("status", "nd_status", "type", "bytes_transferred", "qp_context",
                 "request_context", "provider_error_code", "type_specific_completion_output"),
    "Rule": ("id", "side", "severity", "section", "summary"),
    "Sge": ("virtual_address", "length", "memory_region_token"),
    "Violation": ("rule", "side", "severity", "section", "object", "call", "message"),
}


def fields(value: Any) -> list[tuple[str, Any]]:
    """(name, value) of what a value shows: its ``_display_items()``, else its ``_fields``
    (AdapterInfo, named tuples), dataclass fields, or :data:`BOUND_FIELDS`."""
    items = getattr(value, "_display_items", None)
    if items is not None:
        return list(items())
    names: Iterable[str] = getattr(type(value), "_fields", None) or ()
    if not names and dataclasses.is_dataclass(value):
        names = [field.name for field in dataclasses.fields(value)]
    if not names:
        names = BOUND_FIELDS.get(type(value).__name__, ())
    return [(name, getattr(value, name)) for name in names]


def _shown(value: Any) -> str:
    if isinstance(value, enum.Enum):
        return str(value)  # the package's enums print their NDK name
    return repr(value)


def pretty(value: Any, printer: Any, cycle: bool) -> None:
    """IPython's ``_repr_pretty_``: ``ndk.Name(field=value, ...)``, one field a line when it
    does not fit."""
    name = f"ndk.{type(value).__name__}"
    if cycle:
        printer.text(f"{name}(...)")
        return
    with printer.group(4, f"{name}(", ")"):
        for index, (field, item) in enumerate(fields(value)):
            if index:
                printer.text(",")
                printer.breakable()
            else:
                printer.breakable("")
            printer.text(f"{field}=")
            printer.pretty(item)


def html(value: Any) -> str:
    """A notebook's ``_repr_html_``: the value's fields as a two-column table."""
    rows = "".join(
        f"<tr><th style=\"text-align:left\">{_html.escape(field)}</th>"
        f"<td style=\"text-align:left\"><code>{_html.escape(_shown(item))}</code></td></tr>"
        for field, item in fields(value))
    return (f"<table><caption style=\"text-align:left\"><b>ndk.{type(value).__name__}</b>"
            f"</caption>{rows}</table>")
