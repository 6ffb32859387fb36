"""Objects of one adapter passed to another adapter's calls (docs/semantics.md, OBJECT-OWN).

Every dispatch function that takes an object after the one it is called on (the CQs and SRQ
of NdkCreateQp / NdkCreateQpWithSrq, the MR and MW of NdkBind, NdkFastRegister and
NdkInvalidate, the QP and shared endpoint of NdkConnect / NdkConnectWithSharedEndpoint, the QP
of NdkAccept / NdkAcceptEx) is called with an object of another adapter, for every pairing of
an adapter opened with and without the validation layer, and across the soft and loop
providers.  Each layer and provider recognises only its own objects, by their address alone:
the call returns STATUS_INVALID_PARAMETER inline (QP-OBJECTS for the CQs; the same rule for
every object argument), completes nothing, and never follows the foreign pointer (before,
a plain adapter's CQ given to a validated adapter's create_qp killed the interpreter).
Afterwards both adapters close cleanly and a validated adapter has recorded no violation.

SGE and MR tokens are numbers the provider looks up in its own tables (SGE-TOKEN); no object
pointer crosses there, so they are not in the table.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

import ndk
from ndk import MrFlag, OpFlag, Status

TIMEOUT = 5.0
PAGE = 4096


@dataclass
class Objects:
    """What one adapter makes for the table, as far as its provider can (None otherwise)."""

    adapter: ndk.Adapter
    pd: Any = None
    cq: Any = None
    qp: Any = None
    mr: Any = None          # registered over `buffer`
    fast_mr: Any = None     # a fast-register MR, initialized for one page
    mw: Any = None
    srq: Any = None
    endpoint: Any = None    # a shared endpoint
    connector: Any = None   # a fresh connector (Connect)
    incoming: Any = None    # a connector a listener delivered (Accept)
    keep: list = field(default_factory=list)  # what must outlive the cases (buffers, clients)

    def close(self) -> None:
        self.adapter.close()
        for other in self.keep:
            if isinstance(other, ndk.Adapter):
                other.close()


def _incoming(provider: str, server: ndk.Adapter, keep: list) -> Any:
    """A connector that `server`'s listener delivered for a connect from another adapter of the
    same provider (plain), or None when the provider cannot connect here."""
    listener = server.create_listener().get(timeout=TIMEOUT)
    host = next(h for h in server.addresses if ":" not in h)
    assert listener.listen((host, 0)).wait(timeout=TIMEOUT) == Status.SUCCESS
    client = ndk.open_adapter(provider, validate=False)
    keep.extend([listener, client])
    pd = client.create_pd().get(timeout=TIMEOUT)
    cq = client.create_cq(8).get(timeout=TIMEOUT)
    qp = pd.create_qp(cq, cq).get(timeout=TIMEOUT)
    connector = client.create_connector().get(timeout=TIMEOUT)
    keep.append(connector.connect(qp, listener.get_local_address()))
    return listener.next_connection(timeout=TIMEOUT)


def make_objects(provider: str, validate: bool) -> Objects:
    adapter = ndk.open_adapter(provider, validate=validate)
    o = Objects(adapter)
    o.pd = adapter.create_pd().get(timeout=TIMEOUT)
    o.cq = adapter.create_cq(16).get(timeout=TIMEOUT)
    o.qp = o.pd.create_qp(o.cq, o.cq).get(timeout=TIMEOUT)
    buffer = bytearray(2 * PAGE)
    o.keep.append(buffer)
    o.mr = o.pd.create_mr().get(timeout=TIMEOUT)
    o.mr.register(buffer, flags=MrFlag.ALLOW_LOCAL_WRITE).get(timeout=TIMEOUT)
    if adapter.query_info().frmr_page_count >= 1:
        o.fast_mr = o.pd.create_mr(fast_register=True).get(timeout=TIMEOUT)
        o.fast_mr.initialize_fast_register_mr(1).get(timeout=TIMEOUT)
    if adapter.query_info().max_window_size > 0:
        o.mw = o.pd.create_mw().get(timeout=TIMEOUT)
    if adapter.query_info().max_srq_depth > 0:
        o.srq = o.pd.create_srq(8).get(timeout=TIMEOUT)
    o.connector = adapter.create_connector().get(timeout=TIMEOUT)
    if provider == "soft":
        host = next(h for h in adapter.addresses if ":" not in h)
        o.endpoint = adapter.create_shared_endpoint((host, 0)).get(timeout=TIMEOUT)
    o.incoming = _incoming(provider, adapter, o.keep)
    return o


def _somewhere(o: Objects) -> tuple[str, int]:
    """An address to connect to (nothing listens there: the call must not get that far)."""
    return (next(h for h in o.adapter.addresses if ":" not in h), 9)


# Each case: the objects the caller needs, the foreign ones it passes, and the call, given
# (own objects, foreign objects); it returns the Call or Status of the call.
@dataclass(frozen=True)
class Case:
    name: str
    own: tuple[str, ...]
    foreign: tuple[str, ...]
    call: Callable[[Objects, Objects], Any]


CASES = [
    Case("NdkCreateQp receive CQ", ("pd", "cq"), ("cq",),
         lambda o, f: o.pd.create_qp(f.cq, o.cq)),
    Case("NdkCreateQp initiator CQ", ("pd", "cq"), ("cq",),
         lambda o, f: o.pd.create_qp(o.cq, f.cq)),
    Case("NdkCreateQpWithSrq receive CQ", ("pd", "cq", "srq"), ("cq",),
         lambda o, f: o.pd.create_qp_with_srq(f.cq, o.cq, o.srq)),
    Case("NdkCreateQpWithSrq initiator CQ", ("pd", "cq", "srq"), ("cq",),
         lambda o, f: o.pd.create_qp_with_srq(o.cq, f.cq, o.srq)),
    Case("NdkCreateQpWithSrq SRQ", ("pd", "cq"), ("srq",),
         lambda o, f: o.pd.create_qp_with_srq(o.cq, o.cq, f.srq)),
    Case("NdkBind MR", ("qp", "mw"), ("mr",),
         lambda o, f: o.qp.bind(f.mr, o.mw, f.mr.address, 64, OpFlag.ALLOW_REMOTE_READ)),
    Case("NdkBind MW", ("qp", "mr"), ("mw",),
         lambda o, f: o.qp.bind(o.mr, f.mw, o.mr.address, 64, OpFlag.ALLOW_REMOTE_READ)),
    Case("NdkFastRegister MR", ("qp",), ("fast_mr",),
         lambda o, f: o.qp.fast_register(f.fast_mr, [0x10000], 0, 64, 0x10000)),
    Case("NdkInvalidate MR", ("qp",), ("fast_mr",),
         lambda o, f: o.qp.invalidate(f.fast_mr)),
    Case("NdkInvalidate MW", ("qp",), ("mw",),
         lambda o, f: o.qp.invalidate(f.mw)),
    Case("NdkConnect QP", ("connector",), ("qp",),
         lambda o, f: o.connector.connect(f.qp, _somewhere(o))),
    Case("NdkConnectWithSharedEndpoint QP", ("connector", "endpoint", "qp"), ("qp",),
         lambda o, f: o.connector.connect_with_shared_endpoint(f.qp, o.endpoint,
                                                               _somewhere(o))),
    Case("NdkConnectWithSharedEndpoint endpoint", ("connector", "qp"), ("endpoint",),
         lambda o, f: o.connector.connect_with_shared_endpoint(o.qp, f.endpoint,
                                                               _somewhere(o))),
    Case("NdkAccept QP", ("incoming",), ("qp",),
         lambda o, f: o.incoming.accept(f.qp)),
    Case("NdkAcceptEx QP", ("incoming",), ("qp",),
         lambda o, f: o.incoming.accept_ex(f.qp)),
]

LAYERINGS = {"plain": False, "validated": True}
PROVIDERS = [("soft", "soft"), ("soft", "loop"), ("loop", "soft")]
PAIRS = [(caller, arg, p, q) for (p, q) in PROVIDERS
         for caller, arg in itertools.product(LAYERINGS, repeat=2)]

_opened: dict[tuple[str, str, str, str], tuple[Objects, Objects]] = {}


@pytest.fixture(scope="module", autouse=True)
def _close_all():
    yield
    for own, foreign in _opened.values():
        own.close()
        foreign.close()


def objects_for(pair: tuple[str, str, str, str]) -> tuple[Objects, Objects]:
    if pair not in _opened:
        caller, arg, p, q = pair
        _opened[pair] = (make_objects(p, LAYERINGS[caller]), make_objects(q, LAYERINGS[arg]))
    return _opened[pair]


def _status(result: Any) -> Status:
    return Status(result.status) if isinstance(result, ndk.Call) else Status(result)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize("pair", PAIRS, ids=[f"{c}-{p}_gets_{a}-{q}" for c, a, p, q in PAIRS])
def test_a_foreign_object_argument_is_invalid_parameter(pair, case: Case) -> None:
    own, foreign = objects_for(pair)
    missing = [n for n in case.own if getattr(own, n) is None] + \
        [n for n in case.foreign if getattr(foreign, n) is None]
    if missing:
        pytest.skip(f"the {pair[2]} / {pair[3]} provider makes no {', '.join(missing)} "
                    "(NDK_ADAPTER_INFO)")
    validated = [side.adapter for side in (own, foreign) if side.adapter.validated]
    assert all(adapter.violations() == [] for adapter in validated)
    result = case.call(own, foreign)
    assert _status(result) == Status.INVALID_PARAMETER, case.name
    if isinstance(result, ndk.Call):
        assert result.completions == 0
    assert all(adapter.violations() == [] for adapter in validated), case.name


NDKPI_H = Path(__file__).resolve().parents[2] / "core" / "include" / "ndk" / "ndkpi.h"
OBJECT_TYPES = {"NDK_ADAPTER", "NDK_CQ", "NDK_PD", "NDK_MR", "NDK_MW", "NDK_SRQ", "NDK_QP",
                "NDK_CONNECTOR", "NDK_LISTENER", "NDK_SHARED_ENDPOINT", "NDK_OBJECT_HEADER"}


def functions_taking_objects(header: str) -> set[str]:
    """The dispatch-table members of ndkpi.h with an object parameter (NDK_XXX *) after the
    object called: what CASES must cover."""
    takes = set()
    for name, params in re.findall(r"typedef\s+\w+\s*\(\*\s*(NDK_FN_\w+)\)\s*\(([^;]*)\);",
                                   header):
        after_self = params.split(",")[1:]
        if any(re.match(r"\s*(?:const\s+)?(\w+)\s*\*\s*\w+\s*\)?\s*$", p) and
               re.match(r"\s*(?:const\s+)?(\w+)", p).group(1) in OBJECT_TYPES
               for p in after_self):
            takes.add(name)
    members = set()
    for body in re.findall(r"typedef struct _NDK_\w+_DISPATCH\s*\{(.*?)\}", header, re.S):
        for fn_type, member in re.findall(r"(NDK_FN_\w+)\s+(\w+);", body):
            if fn_type in takes:
                members.add(member)
    return members


def test_the_table_covers_every_dispatch_function_that_takes_an_object() -> None:
    """A dispatch function that takes an object joins CASES (read from ndkpi.h)."""
    expected = functions_taking_objects(NDKPI_H.read_text())
    assert "NdkCreateQp" in expected and "NdkBind" in expected  # the parse finds them
    assert {c.name.split()[0] for c in CASES} == expected
