"""Run-time knobs of an adapter's provider: ``adapter.knobs``.

Knobs are provider-defined text key/value pairs (core/include/ndk/provider.h); this class gives
them attribute syntax: ``ad.knobs.create_mode = "inline"``, ``ad.knobs.max_cq_depth = 16``,
``ad.knobs.fail("NdkCreatePd", Status.INSUFFICIENT_RESOURCES, mode="async")``.
See docs/knobs.md for the soft provider's knobs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._errors import KnobNotFound, KnobsNotSupported, KnobValueError, NdkError
from ._status import Status

if TYPE_CHECKING:
    from ._core import Adapter


def knob_text(value: Any) -> str:
    """The text form of a knob value."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, Status):
        return f"0x{int(value):08X}"
    if isinstance(value, (tuple, list)):
        if len(value) == 2 and all(isinstance(v, int) for v in value):
            return f"{value[0]}.{value[1]}" if value[0] > 0 and value[1] < 65536 else \
                f"{value[0]}-{value[1]}"
        return ",".join(str(v) for v in value)
    return str(int(value)) if isinstance(value, int) else str(value)


def knob_pairs(knobs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, text) pairs for ndk.open_adapter's keyword arguments; the adapter checks each as
    it checks a knob set at run time (ndk::knob_problem, docs/knobs.md)."""
    return [(key, knob_text(value)) for key, value in knobs.items()]


def set_knob(adapter: Adapter, key: str, value: Any) -> str:
    """Set knob ``key`` of ``adapter``'s provider to ``value``; return the provider's reply text.

    Raises ndk.KnobsNotSupported when the provider has no such knob (or no knobs),
    ndk.KnobValueError (a ValueError, as at ndk.open_adapter) when it rejects the value.
    """
    status, reply = adapter._set_knob(key, knob_text(value))
    if status == Status.NOT_SUPPORTED:
        raise KnobsNotSupported(
            f"provider {adapter.provider!r} has no knob {key!r}" + (f": {reply}" if reply else ""))
    if status != Status.SUCCESS:
        raise KnobValueError(status, reply or f"knob {key}={value!r} rejected: {Status(status)}")
    return reply


def knob_names(adapter: Adapter) -> list[str]:
    """The knobs the provider lists (its read-only knob ``knobs``), or [] if it lists none."""
    status, text = adapter._get_knob("knobs")
    if status != Status.SUCCESS:
        return []
    return [name for name in text.replace(",", "\n").split() if name]


def open_error(error: NdkError, knobs: Mapping[str, Any]) -> NdkError:
    """The exception ndk.open_adapter raises for the NdkError `error` of an open with `knobs`:
    a refused knob value is a KnobValueError (a ValueError, as for ``adapter.knobs.x = value``);
    an address another open adapter owns says how to free it."""
    if knobs and error.status == Status.INVALID_PARAMETER and \
            not str(error).startswith("OpenNDKAdapterHandler"):
        return KnobValueError(error.status, str(error))
    if error.status == Status.ADDRESS_ALREADY_EXISTS:
        return NdkError(error.status, f"{error}; another open adapter has it: close that one "
                        "first (ad.close(), or open it as `with ndk.open_adapter(...) as ad:`)")
    return error


def get_knob(adapter: Adapter, key: str) -> str:
    """The text value of knob ``key``; ndk.KnobsNotSupported when the provider has none."""
    status, value = adapter._get_knob(key)
    if status != Status.SUCCESS:
        raise KnobsNotSupported(f"provider {adapter.provider!r} has no knob {key!r}")
    return value


class Knobs:
    """The knobs of one adapter's provider (its miniport)."""

    __slots__ = ("_adapter",)
    _adapter: Adapter

    def __init__(self, adapter: Adapter) -> None:
        object.__setattr__(self, "_adapter", adapter)

    def _set(self, key: str, value: Any) -> None:
        set_knob(self._adapter, key, value)

    def __getattr__(self, key: str) -> Any:  # int or str: the provider decides
        if key.startswith("_"):
            raise AttributeError(key)
        status, value = self._adapter._get_knob(key)
        if status != Status.SUCCESS:
            raise KnobNotFound(f"provider {self._adapter.provider!r} has no knob {key!r}")
        return int(value) if value.isdigit() else value

    def __setattr__(self, key: str, value: Any) -> None:
        self._set(key, value)

    def fail(self, function: str, status: int, mode: str = "inline", count: int = 1) -> None:
        """Make the next ``count`` calls of NDK ``function`` (e.g. "NdkCreatePd") fail with
        ``status``, returned inline (mode="inline") or as STATUS_PENDING then through the
        completion (mode="async").  count=-1 fails every call until clear_failures()."""
        if mode not in ("inline", "async"):
            raise ValueError("mode must be 'inline' or 'async'")
        self._set("fail", f"{function} 0x{int(Status(status)):08X} {mode} {int(count)}")

    def clear_failures(self) -> None:
        """Disarm every failure armed with fail()."""
        self._set("clear_failures", "1")

    def __dir__(self) -> list[str]:
        """Every knob the provider lists (soft: its read-only knob ``knobs``), and the methods."""
        return sorted(set(knob_names(self._adapter)) | {"fail", "clear_failures"})

    def __repr__(self) -> str:
        """Every knob the provider lists, with its value where it has one to read."""
        shown = []
        keys = knob_names(self._adapter) or ["create_mode", "request_mode", "close_mode", "seed"]
        for key in keys:
            status, value = self._adapter._get_knob(key)
            shown.append(f"{key}={value.strip()!r}" if status == Status.SUCCESS else key)
        return f"<ndk.Knobs of {self._adapter.provider!r}: {', '.join(shown)}>"
