"""NDK_MW: NdkCreateMw, NdkCloseMw (digest 1.2, 1.5)."""

from __future__ import annotations

import pytest

import ndk
from ndk import MrFlag, OpFlag, OpType, Status
from ndk.testing import OpenAdapter

from ndk.scenario import (CLIENT, CREATE_MODES, SERVER, TIMEOUT, drain, expect_closed,
                          expect_created)
from ndk.scenario.resources import connect_sides, connected_pair, Side
from ndk.scenario.work_requests import region
from ndk.scenario.counts import expect_count_enforced, reported_count


@pytest.mark.rule("MW-CREATE")
@pytest.mark.digest("1.2")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_create_mw(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 1.2 (NdkCreateMw), 1.0: SUCCESS inline or PENDING then exactly one completion
    with SUCCESS and the MW (object type Mw 5)."""
    adapter = open_adapter(create_mode=mode)
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    mw = expect_created(pd.create_mw(), mode)
    assert mw.object_type == ndk.ObjectType.MW


@pytest.mark.rule("MW-CREATE-RESOURCES")
@pytest.mark.digest("3.7")
@pytest.mark.reference("CAPS")
def test_create_mw_beyond_max_mw_count(open_adapter: OpenAdapter) -> None:
    """digest 3.7 (NDIS_NDK_CAPABILITIES MaxMwCount: the MWs the miniport holds) and 1.2
    (NdkCreateMw: INSUFFICIENT_RESOURCES, i/a). docs/semantics.md CAPS (a reference choice):
    MaxMwCount creates succeed (stated); the next fails and gives no object (stated), with
    INSUFFICIENT_RESOURCES; after a close, a create succeeds again."""
    adapter = open_adapter()
    count = reported_count(adapter, "max_mw_count")
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    expect_count_enforced(count, pd.create_mw)


@pytest.mark.rule("MW-CLOSE")
@pytest.mark.digest("1.5")
def test_close_unbound_mw(pd: ndk.Pd) -> None:
    """digest 1.0, 1.5: closing an MW that was never bound succeeds (STATUS_SUCCESS with no
    close completion, or STATUS_PENDING and one); using it afterwards raises
    ndk.ObjectClosedError."""
    mw = pd.create_mw().get(timeout=TIMEOUT)
    expect_closed(mw.close())
    assert mw.closed
    with pytest.raises(ndk.ObjectClosedError):
        mw.get_remote_token_from_mw()


@pytest.mark.rule("MW-MANY")
@pytest.mark.digest("1.2")
def test_many_windows_on_one_pd(pd: ndk.Pd) -> None:
    """digest 1.2: a PD holds any number of MWs (no cap configured); each is a distinct
    object, and closing one leaves the others open."""
    windows = [pd.create_mw().get(timeout=TIMEOUT) for _ in range(8)]
    expect_closed(windows[3].close())
    assert [w.is_open for w in windows] == [True] * 3 + [False] + [True] * 4


@pytest.mark.rule("MW-BOUND-QP-CLOSE")
@pytest.mark.digest("3.1")
def test_close_qps_a_window_was_bound_through(open_adapter: OpenAdapter) -> None:
    """digest 3.1 (closing an object completes: SUCCESS inline, or PENDING and one completion),
    1.5 (a type 2 window is bound through a QP): a window bound through one QP and then,
    without an Invalidate, through a second QP of the same PD (the second Bind's status is not
    this rule's), then every connector and QP closed: each close completes SUCCESS and the
    window closes after them.  docs/semantics.md VERBS-MW-QP-REF (rxe holds the QP of a type 2
    window's bind, and refuses a second bind of a bound window)."""
    client = open_adapter(address=CLIENT)
    server = open_adapter(address=SERVER)
    first = connected_pair(client, server)
    a = Side(client, pd=first[0].pd, cq=first[0].cq)
    second = connect_sides(a, Side(server), listener=first[1].listener)
    target = region(a.pd, flags=MrFlag.ALLOW_LOCAL_WRITE)
    window = a.pd.create_mw().get(timeout=TIMEOUT)
    for context, side in enumerate((first[0], second[0]), start=1):
        assert side.qp.bind(target.mr, window, target.address, 1024,
                            flags=OpFlag.ALLOW_REMOTE_READ, request_context=context) == \
            Status.SUCCESS
        (result,) = drain(a.cq, 1)
        assert (result.type, result.request_context) == (OpType.BIND, context)
    for side in (*first, *second):
        expect_closed(side.connector.close())
    for side in (*first, *second):
        expect_closed(side.qp.close())
    expect_closed(window.close())
