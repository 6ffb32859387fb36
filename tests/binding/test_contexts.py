"""NDK contexts from Python (bindings/contexts.hpp, docs/architecture.md "Contexts"): a
qp_context or request_context is any object, returned as the same object in results; an int
stays an int; the binding holds an object only while the provider may still return it."""

import gc
import sys
import weakref

import pytest

import ndk
from ndk import MrFlag, OpFlag, Status


class Marker:
    """A context object that can be weakly referenced."""


@pytest.fixture
def pair():
    with ndk.open_adapter("soft") as srv, ndk.open_adapter("soft") as cli:
        a, b = ndk.testing.connect_pair(cli, srv, cq_depth=64)
        yield a, b


def registered(endpoint, size=4096, flags=MrFlag.ALLOW_LOCAL_WRITE):
    buf = bytearray(size)
    mr = endpoint.pd.create_mr().get(timeout=5)
    mr.register(buf, flags=flags).get(timeout=5)
    return buf, mr


def send_to(a, b, n):
    src, smr = registered(a)
    for _ in range(n):
        assert a.qp.send([smr.sge(0, 16)]) == Status.SUCCESS
    a.cq.wait_results(n, timeout=5)
    return src, smr


def test_objects_none_and_ints_come_back_as_given(pair):
    a, b = pair
    _, mr = registered(b)
    marker, text = Marker(), "a string context"
    given = [marker, None, 7, text, 0, 2**64 - 1]
    for context in given:
        assert b.qp.receive([mr.sge(0, 64)], request_context=context) == Status.SUCCESS
    keep = send_to(a, b, len(given))
    results = b.cq.wait_results(len(given), timeout=5)
    got = [r.request_context for r in results]
    assert got[0] is marker and got[1] is None and got[3] is text
    assert got[2] == 7 and type(got[2]) is int
    assert got[4] == 0 and got[5] == 2**64 - 1
    assert "request_context=None" in repr(results[1]) and "request_context=7" in repr(results[2])
    del keep


# Where the binding's handles for object contexts lie (bindings/contexts.hpp): an int there
# is held like an object, so that it cannot alias one.
HANDLE_BASE = 0xFFFF_C000_0000_0000


def test_an_int_equal_to_a_held_objects_id_or_handle_comes_back_as_that_int(pair):
    """An int request context equal to id() of a held object context came back as that object,
    and the object's completion as an int: contexts that cannot alias."""
    a, b = pair
    _, mr = registered(b)
    marker = Marker()
    given = [marker, id(marker), HANDLE_BASE, HANDLE_BASE + 16, HANDLE_BASE + 32, marker]
    for context in given:
        assert b.qp.receive([mr.sge(0, 64)], request_context=context) == Status.SUCCESS
    keep = send_to(a, b, len(given))
    got = [r.request_context for r in b.cq.wait_results(len(given), timeout=5)]
    assert got[0] is marker and got[5] is marker
    assert got[1:5] == given[1:5] and all(type(g) is int for g in got[1:5])
    del keep


def test_a_qp_context_int_equal_to_another_qps_object_context_stays_an_int():
    marker = Marker()
    with ndk.open_adapter("soft") as ad:
        pd = ad.create_pd().get(timeout=5)
        cq = ad.create_cq(8).get(timeout=5)
        qps = [pd.create_qp(cq, cq, qp_context=c).get(timeout=5)
               for c in (marker, id(marker), HANDLE_BASE + 16)]
        buf = bytearray(64)
        mr = pd.create_mr().get(timeout=5)
        mr.register(buf, flags=MrFlag.ALLOW_LOCAL_WRITE).get(timeout=5)
        for qp in qps:
            assert qp.receive([mr.sge(0, 8)], request_context=1) == Status.SUCCESS
            qp.flush()
        got = [r.qp_context for r in cq.wait_results(3, timeout=5)]
        assert got[0] is marker and got[1:] == [id(marker), HANDLE_BASE + 16]


def test_the_reference_is_dropped_once_the_completion_is_retrieved(pair):
    a, b = pair
    _, mr = registered(b)
    marker = Marker()
    baseline = sys.getrefcount(marker)
    dead = weakref.ref(gone := Marker())
    assert b.qp.receive([mr.sge(0, 64)], request_context=marker) == Status.SUCCESS
    assert b.qp.receive([mr.sge(0, 64)], request_context=gone) == Status.SUCCESS
    del gone
    assert dead() is not None, "the binding holds the context while the request is posted"
    assert sys.getrefcount(marker) == baseline + 1
    keep = send_to(a, b, 2)
    results = b.cq.get_results_ex(2)
    assert results[0].request_context is marker
    del results
    gc.collect()
    assert sys.getrefcount(marker) == baseline
    assert dead() is None
    del keep


def test_the_same_object_on_many_requests_is_held_once_per_request(pair):
    a, b = pair
    _, mr = registered(b)
    marker = Marker()
    baseline = sys.getrefcount(marker)
    for _ in range(3):
        assert b.qp.receive([mr.sge(0, 64)], request_context=marker) == Status.SUCCESS
    keep = send_to(a, b, 2)
    assert [r.request_context for r in b.cq.wait_results(2, timeout=5)] == [marker, marker]
    assert sys.getrefcount(marker) == baseline + 1  # the third receive is still posted
    b.qp.flush()
    (flushed,) = b.cq.wait_results(1, timeout=5)
    assert flushed.status == Status.CANCELLED and flushed.request_context is marker
    del flushed
    assert sys.getrefcount(marker) == baseline
    del keep


def test_a_post_that_fails_inline_lets_go_at_once():
    with ndk.open_adapter("soft") as ad:
        pd = ad.create_pd().get(timeout=5)
        cq = ad.create_cq(8).get(timeout=5)
        qp = pd.create_qp(cq, cq).get(timeout=5)
        buf = bytearray(64)
        mr = pd.create_mr().get(timeout=5)
        mr.register(buf).get(timeout=5)
        marker = Marker()
        baseline = sys.getrefcount(marker)
        status = qp.send([mr.sge(0, 8)], request_context=marker)  # not connected
        assert status != Status.SUCCESS
        assert sys.getrefcount(marker) == baseline


def test_qp_context_objects_come_back_in_every_result_and_go_with_the_adapter():
    marker = Marker()
    dead = weakref.ref(marker)
    with ndk.open_adapter("soft") as ad:
        pd = ad.create_pd().get(timeout=5)
        cq = ad.create_cq(8).get(timeout=5)
        qp = pd.create_qp(cq, cq, qp_context=marker).get(timeout=5)
        plain = pd.create_qp(cq, cq, qp_context=5).get(timeout=5)
        buf = bytearray(64)
        mr = pd.create_mr().get(timeout=5)
        mr.register(buf, flags=MrFlag.ALLOW_LOCAL_WRITE).get(timeout=5)
        for q in (qp, qp, plain):
            assert q.receive([mr.sge(0, 8)], request_context=1) == Status.SUCCESS
        qp.flush()
        plain.flush()
        results = cq.wait_results(3, timeout=5)
        assert [r.status for r in results] == [Status.CANCELLED] * 3
        assert results[0].qp_context is marker and results[1].qp_context is marker
        assert results[2].qp_context == 5
        del results, marker
        gc.collect()
        assert dead() is not None, "held while the adapter is open: every result carries it"
    gc.collect()
    assert dead() is None, "the adapter's close let go of its qp_context"


def test_a_silent_request_is_held_until_the_adapter_closes():
    marker = Marker()
    dead = weakref.ref(marker)
    with ndk.open_adapter("soft") as srv, ndk.open_adapter("soft") as cli:
        a, b = ndk.testing.connect_pair(cli, srv)
        _, rmr = registered(b)
        assert b.qp.receive([rmr.sge(0, 64)]) == Status.SUCCESS
        _, smr = registered(a)
        assert a.qp.send([smr.sge(0, 8)], flags=OpFlag.SILENT_SUCCESS,
                         request_context=marker) == Status.SUCCESS
        b.cq.wait_results(1, timeout=5)
        del marker
        gc.collect()
        assert dead() is not None  # a successful silent request never completes
        del a, b
    gc.collect()
    assert dead() is None


def test_srq_receive_and_post_many_take_objects(pair):
    a, b = pair
    _, mr = registered(b)
    marker = Marker()
    baseline = sys.getrefcount(marker)
    assert b.qp.post_many("receive", [mr.sge(0, 64), mr.sge(64, 64)],
                          request_context=marker) == (2, Status.SUCCESS)
    assert sys.getrefcount(marker) == baseline + 1  # one reference, counted twice
    keep = send_to(a, b, 2)
    out = bytearray(2 * 40)
    assert b.cq.poll_into(out, min_results=2, timeout=5) == 2
    # The array keeps the raw handle (an int from the handles' range, not id()); the object is
    # let go.
    handle = int.from_bytes(out[16:24], "little")
    assert handle >= HANDLE_BASE and handle == int.from_bytes(out[56:64], "little")
    assert sys.getrefcount(marker) == baseline
    del keep
    with ndk.open_adapter("soft") as ad:
        pd = ad.create_pd().get(timeout=5)
        srq = pd.create_srq(8).get(timeout=5)
        buf = bytearray(64)
        smr = pd.create_mr().get(timeout=5)
        smr.register(buf, flags=MrFlag.ALLOW_LOCAL_WRITE).get(timeout=5)
        assert srq.receive([smr.sge(0, 64)], request_context=marker) == Status.SUCCESS
        assert sys.getrefcount(marker) == baseline + 1
    assert sys.getrefcount(marker) == baseline


def test_result_values_compare_and_pickle_with_their_contexts(pair):
    import pickle

    a, b = pair
    _, mr = registered(b)
    assert b.qp.receive([mr.sge(0, 64)], request_context=("tag", 3)) == Status.SUCCESS
    keep = send_to(a, b, 1)
    (result,) = b.cq.wait_results(1, timeout=5)
    copy = pickle.loads(pickle.dumps(result))
    assert copy == result and hash(copy) == hash(result)
    assert copy.request_context == ("tag", 3) and copy.type == ndk.OpType.RECEIVE
    assert result._asdict()["request_context"] == ("tag", 3)
    assert set(result._asdict()) == set(ndk.ResultEx._fields)
    del keep
