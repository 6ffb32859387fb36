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
"""

from __future__ import annotations

import os
from collections import namedtuple

IS_FAKE = True
__path__.append(os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 4, "python", "ndk")))


class NdkError(Exception):
    """A failed NDK call."""


class KnobsNotSupported(ValueError):
    """The provider does not take knobs."""


AdapterInfo = namedtuple(
    "AdapterInfo", "vendor_id device_id max_cq_depth max_srq_depth max_initiator_request_sge"
)
_DEFAULT_INFO = AdapterInfo(0x1234, 0x1, 65536, 4096, 4)
_ACCEPTS_KNOBS = {"soft": True, "plain": False}

opened: list["Adapter"] = []


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
    def __init__(self, provider, knobs):
        super().__init__()
        unknown = set(knobs) - set(AdapterInfo._fields)
        if unknown:
            raise ValueError(f"unknown knobs: {sorted(unknown)}")
        self.provider = provider
        self._info = _DEFAULT_INFO._replace(**knobs)

    def query_info(self):
        return self._info

    def create_pd(self):
        return _Call(ProtectionDomain(self))

    def create_cq(self, cq_depth):
        return _Call(CompletionQueue(self, cq_depth))


def providers():
    return list(_ACCEPTS_KNOBS)


def open_adapter(provider, **knobs):
    if provider not in _ACCEPTS_KNOBS:
        raise NdkError(f"no provider named {provider!r}")
    if knobs and not _ACCEPTS_KNOBS[provider]:
        raise KnobsNotSupported(f"provider {provider!r} takes no knobs")
    adapter = Adapter(provider, knobs)
    opened.append(adapter)
    return adapter
