"""Adapter methods written in Python: its addresses, manual progress, logical address mappings.

Installed on ``ndk.Adapter`` by ``ndk/__init__.py``.  Addresses and progress go through the
provider's knobs (docs/knobs.md): a provider without them raises ndk.KnobsNotSupported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Union

from ._errors import KnobsNotSupported
from ._knobs import get_knob, set_knob
from ._status import Status

if TYPE_CHECKING:
    from ._core import Adapter, LamCall, Mdl


def addresses(adapter: Adapter) -> Optional[list[str]]:
    """The adapter's IP addresses (knob ``address``: "192.0.2.1,2001:db8::1"), in order; None
    when the provider does not say (it has no ``address`` knob)."""
    if not adapter.has_knobs:
        return None
    status, text = adapter._get_knob("address")
    if status != Status.SUCCESS:
        return None
    return [host.strip() for host in text.split(",") if host.strip()]


def step(self: Adapter, n: int = 1) -> int:
    """Run up to ``n`` queued engine steps (transfers, completions, callbacks) of the adapter's
    miniport, with knob ``progress="manual"``; returns how many ran (knob ``step``)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"step count must be an int, not {type(n).__name__}")
    if n < 0:
        raise ValueError("step count must be >= 0")
    reply = set_knob(self, "step", n)
    try:
        return int(reply)
    except ValueError:
        raise ValueError(f"knob 'step' replied {reply!r}, not a count") from None


def pending_steps(adapter: Adapter) -> int:
    """How many engine steps are queued on the adapter's miniport (knob ``step``, read)."""
    text = get_knob(adapter, "step")
    try:
        return int(text)
    except ValueError:
        raise KnobsNotSupported(f"knob 'step' reads {text!r}, not a count") from None


def build_lam(self: Adapter, buffer: Union[Any, Mdl], length: Optional[int] = None,
              lam_size: Optional[int] = None) -> LamCall:
    """NdkBuildLAM -> ndk.LamCall, whose get() returns the ndk.Lam (adapter_page_array,
    adapter_page_count, fbo): logical addresses for ``buffer`` (a writable bytes-like object,
    or an ndk.Mdl as given), used in SGEs under pd.get_privileged_memory_region_token().

    length None: the whole buffer.  lam_size None: a mapping buffer big enough for the pages
    touched; an int passes that *pLAMSize (BUFFER_TOO_SMALL scenarios: the call's .lam.lam_size
    is then the size needed).  Documented: SUCCESS; PENDING; INVALID_PARAMETER (MDL range not
    virtually contiguous); INSUFFICIENT_RESOURCES (i/a); BUFFER_TOO_SMALL; other.
    """
    from . import _core

    return _core._build_lam(self, buffer, length, lam_size)


def install(adapter_class: type) -> None:
    setattr(adapter_class, "build_lam", build_lam)
    setattr(adapter_class, "addresses", property(addresses, doc=addresses.__doc__))
    setattr(adapter_class, "step", step)
    setattr(adapter_class, "pending_steps", property(pending_steps, doc=pending_steps.__doc__))
