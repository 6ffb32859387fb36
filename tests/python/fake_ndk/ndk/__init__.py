"""A stand-in for the ``ndk`` package, for testing its pure-Python modules without the extension.

It defines only the part of the API that ``ndk.testing``, ``ndk.conformance`` and ``ndk.cli``
use, and appends the real ``python/ndk`` directory to ``__path__``: ``import ndk.testing``
then loads the real module, while ``import ndk`` gets this file instead of the real
``__init__`` (which imports the compiled ``ndk._core``).

Providers:
  "soft"  accepts knobs; a knob named like an info field overrides that field, as the real soft
          provider's info-override knob does.
  "plain" accepts no knobs: ``open_adapter("plain", x=1)`` raises ``KnobsNotSupported``.
Objects are strict like the soft provider: closing an object twice raises ``ValueError`` and
closing an adapter with a child still open raises ``NdkError``. ``opened`` lists every adapter
opened, so tests can check that fixtures closed them.

The validation layer, as far as the plugin and the CLI see it: ``open_adapter(validate=...)``
with the process-wide default (``set_validate_default``/``validate_default``), the
``_open_hooks`` the plugin registers, ``rules()`` (three of the real rules), and adapters with
``validated``, ``validation`` (a session that outlives the adapter) and ``violations()``.  The
soft provider's knob ``misbehave="RULE-ID"`` makes ``create_pd`` record a violation of that
rule on a validated adapter (``misbehave="A,B"``: one of each).
"""

from __future__ import annotations

import enum
import os
from collections import namedtuple

IS_FAKE = True
__path__.append(os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 4, "python", "ndk")))


def _compiled():
    """The real package's compiled extension: the stand-in has none (None)."""
    return None


class Status(enum.IntEnum):
    """The statuses the pure-Python modules compare with (ndk._environment)."""

    INVALID_ADDRESS = 0xC0000141
    DEVICE_NOT_READY = 0xC00000A3
    NOT_SUPPORTED = 0xC00000BB


class NdkError(Exception):
    """A failed NDK call."""

    status = None


class KnobsNotSupported(ValueError):
    """The provider does not take knobs."""


AdapterInfo = namedtuple(
    "AdapterInfo", "vendor_id device_id max_cq_depth max_srq_depth max_initiator_request_sge"
)
_DEFAULT_INFO = AdapterInfo(0x1234, 0x1, 65536, 4096, 4)
_ACCEPTS_KNOBS = {"soft": True, "plain": False}
OWN_ADDRESSES = ("192.0.2.32",)  # what an adapter opened without address= holds

opened: list["Adapter"] = []
_validate_default = False
_open_hooks: list = []

Rule = namedtuple("Rule", "id side severity section summary")
_RULES = [
    Rule("CREATE-COMPLETION-INLINE", "provider", "error", "1.0",
         "A create that returned anything but STATUS_PENDING never calls its completion."),
    Rule("STATUS-UNDOCUMENTED", "provider", "warning", "1.1-1.10",
         "A function returns a status its reference page documents | \"other\" is allowed."),
    Rule("CQ-CONCURRENT-CALL", "consumer", "error", "3.2",
         "NdkGetCqResults and NdkArmCq are never called concurrently on one CQ."),
]
Violation = namedtuple("Violation", "rule object call message section side severity")


def rules():
    return list(_RULES)


def validate_default():
    return _validate_default


def set_validate_default(validate):
    global _validate_default
    previous, _validate_default = _validate_default, validate
    return previous


class ValidationSession:
    def __init__(self):
        self.log = []

    def violations(self):
        return list(self.log)

    def clear(self):
        self.log.clear()


class _Call:
    """What a creation call returns: ``.get(timeout)`` waits for the object."""

    def __init__(self, value):
        self._value = value

    def get(self, timeout=None):
        return self._value


class _Object:
    def __init__(self, parent=None):
        self._closed = False  # private on purpose: fixtures must cope with a second close
        self._parent = parent
        self.children = []
        if parent is not None:
            parent.children.append(self)

    @property
    def is_closed(self):
        return self._closed

    def close(self):
        if self._closed:
            raise ValueError("object already closed")
        if any(not child.is_closed for child in self.children):
            raise NdkError("STATUS_DEVICE_BUSY: close the children first")
        self._closed = True


class ProtectionDomain(_Object):
    pass


class CompletionQueue(_Object):
    def __init__(self, parent, depth):
        super().__init__(parent)
        self.depth = depth


class Adapter(_Object):
    def __init__(self, provider, knobs, validate=False):
        super().__init__()
        knobs = dict(knobs)
        self._misbehave = [rule for rule in str(knobs.pop("misbehave", "")).split(",") if rule]
        self.timeout_ms = knobs.pop("validate_timeout_ms", None)
        # knob address= (soft's): the adapter's addresses; without it, the one it holds itself
        address = knobs.pop("address", None)
        self.addresses = address.split(",") if address else list(OWN_ADDRESSES)
        unknown = set(knobs) - set(AdapterInfo._fields)
        if unknown:
            raise ValueError(f"unknown knobs: {sorted(unknown)}")
        self.provider = provider
        self._info = _DEFAULT_INFO._replace(**knobs)
        self.validation = ValidationSession() if validate else None

    @property
    def validated(self):
        return self.validation is not None

    def violations(self):
        return self.validation.violations() if self.validation else []

    def clear_violations(self):
        if self.validation:
            self.validation.clear()

    def query_info(self):
        return self._info

    def create_pd(self):
        pd = ProtectionDomain(self)
        if self.validation is not None:
            for rule_id in self._misbehave:
                rule = next(r for r in _RULES if r.id == rule_id)
                self.validation.log.append(Violation(
                    rule.id, f"PD#{len(self.children)}", "NdkCreatePd", f"misbehave={rule.id}",
                    rule.section, rule.side, rule.severity))
        return _Call(pd)

    def create_cq(self, cq_depth):
        return _Call(CompletionQueue(self, cq_depth))


def _run_scoped_knobs(provider, options):
    """What the soft provider declares (core/src/providers/soft/soft_builtin.cpp): shm_fabric
    with transport=shm (or soft:shm) when the options name none."""
    base, _, qualifier = provider.partition(":")
    if base not in _ACCEPTS_KNOBS:
        raise NdkError(f"no provider named {provider!r}")
    transport = options.get("transport", qualifier)
    return ["shm_fabric"] if base == "soft" and transport == "shm" and "shm_fabric" not in options else []


def providers():
    return list(_ACCEPTS_KNOBS)


def open_adapter(provider, *, version=(2, 0), validate=None, **knobs):
    validate = _validate_default if validate is None else bool(validate)
    if provider not in _ACCEPTS_KNOBS:
        raise NdkError(f"no provider named {provider!r}")
    if not validate and any(key.startswith("validate_") for key in knobs):
        raise ValueError("validate_ options need validate=True")
    provider_knobs = [key for key in knobs if not key.startswith("validate_")]
    if provider_knobs and not _ACCEPTS_KNOBS[provider]:
        raise KnobsNotSupported(f"provider {provider!r} takes no knobs")
    adapter = Adapter(provider, knobs, validate)
    opened.append(adapter)
    for hook in list(_open_hooks):
        hook(adapter)
    return adapter
