"""Memory access on connected QPs: RDMA Write and Read, memory windows (Bind, Invalidate),
fast-register MRs, the privileged token, remote invalidation (digest 1.4, 1.5, 1.7, 2.3, 2.4,
2.5, 2.6, 3.2, 3.4, 4.2; docs/semantics.md DATA-STATUS, QP-ERROR, POST-CHECKS,
MW-DEREGISTER, QP-WRITE-INLINE)."""

from __future__ import annotations

import pytest

import ndk
from ndk import AdapterFlag, MrFlag, OpFlag, OpType, Status
from ndk.testing import Pair

from ndk.scenario import (drain, expect_no_completion, expect_request, pattern, set_adapter_flags,
                          Side, TIMEOUT)
from ndk.scenario.stated import stated
from ndk.scenario.work_requests import (build_lam, expect_connection_failed, expect_refused,
                                        expect_result, fast_register, fast_register_mr, FR_BASE,
                                        most_pages, one, PAGE, READ_SINK, Region, region,
                                        REMOTE_ALL, REMOTE_READ, REMOTE_WRITE, unregistered_sge)

FR_REMOTE = OpFlag.ALLOW_LOCAL_WRITE | OpFlag.ALLOW_REMOTE_READ | OpFlag.ALLOW_REMOTE_WRITE
FR_LOCAL_SINK = OpFlag.ALLOW_LOCAL_WRITE | OpFlag.RDMA_READ_SINK


# --- RDMA Write ----------------------------------------------------------------------------


@pytest.mark.rule("WRITE-DATA")
@pytest.mark.digest("1.7")
def test_write_moves_bytes(pair: Pair) -> None:
    """digest 1.7 (NdkWrite: sgl to the peer's RemoteAddress under RemoteToken): the bytes
    land at the remote region's start, nothing else changes; the writer's completion is WRITE
    SUCCESS; the target's QP consumes no receive and gets no completion."""
    a, b = pair
    source = region(a.pd, fill=pattern(1500, seed=1))
    target = region(b.pd, 4096, flags=REMOTE_WRITE, fill=b"\x99" * 4096)
    assert b.qp.receive([target.sge(0, 64)], request_context=5) == Status.SUCCESS
    assert a.qp.write([source.sge(0, 1500)], target.address, target.remote_token,
                      request_context=0x77) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.WRITE, 0x77)
    assert bytes(target.buf[:1500]) == pattern(1500, seed=1)
    assert bytes(target.buf[1500:]) == b"\x99" * (4096 - 1500)
    expect_no_completion(b.cq)
    b.qp.flush()   # the receive was still queued: it is the one flushed
    expect_result(b.cq, Status.CANCELLED, OpType.RECEIVE, 5)


@pytest.mark.rule("WRITE-REMOTE-OFFSET")
@pytest.mark.digest("1.7")
def test_write_at_remote_offset_with_gather(pair: Pair) -> None:
    """digest 1.4 (the registered range's virtual address is an index), 1.7, 2.4: a write to
    RemoteAddress = region address + 1000 gathers its two SGEs to [1000, 1000 + total) and
    leaves both sides of that range untouched."""
    a, b = pair
    source = region(a.pd, fill=pattern(4096, seed=2))
    target = region(b.pd, 4096, flags=REMOTE_WRITE)
    sgl = [source.sge(500, 40), source.sge(0, 24)]
    assert a.qp.write(sgl, target.address + 1000, target.remote_token, request_context=1) == \
        Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.WRITE, 1)
    data = pattern(4096, seed=2)
    assert bytes(target.buf[1000:1064]) == data[500:540] + data[0:24]
    assert bytes(target.buf[:1000]) == bytes(1000)
    assert bytes(target.buf[1064:]) == bytes(4096 - 1064)


@pytest.mark.rule("WRITE-INLINE")
@pytest.mark.digest("1.7")
@pytest.mark.reference("QP-WRITE-INLINE")
@pytest.mark.pair(inline_data_size=64)
def test_inline_write_from_unregistered_memory(pair: Pair) -> None:
    """digest 1.7 (NDK_SGE: with INLINE the token is ignored), 6 item 9 (InlineDataSize
    covers send or write). docs/semantics.md QP-WRITE-INLINE: an INLINE write is accepted and
    its bytes, from memory never registered, arrive."""
    a, b = pair
    source = bytearray(pattern(40, seed=3))
    target = region(b.pd, flags=REMOTE_WRITE)
    assert a.qp.write([unregistered_sge(source, 0, 40, token=0)], target.address + 8,
                      target.remote_token, flags=OpFlag.INLINE, request_context=2) == \
        Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.WRITE, 2)
    assert bytes(target.buf[8:48]) == pattern(40, seed=3)


@pytest.mark.rule("WRITE-BEYOND-REMOTE")
@pytest.mark.digest("4.2")
@pytest.mark.reference("DATA-STATUS")
@pytest.mark.parametrize("offset, length", [(4096 - 16, 32), (4096, 1), (-8, 16)],
                         ids=["across-end", "past-end", "before-start"])
def test_write_outside_remote_region(pair: Pair, offset: int, length: int) -> None:
    """digest 1.7 (NdkRead: REMOTE_RESOURCES beyond the remote memory), 4.2 (ND2 REMOTE_ERROR
    = STATUS_REMOTE_RESOURCES). docs/semantics.md DATA-STATUS: a remote range outside the
    region -> REMOTE_RESOURCES; nothing is written; the connection ends (QP-ERROR)."""
    a, b = pair
    source = region(a.pd, fill=pattern(64))
    target = region(b.pd, 4096, flags=REMOTE_WRITE)
    assert a.qp.write([source.sge(0, length)], target.address + offset, target.remote_token,
                      request_context=3) == Status.SUCCESS
    expect_refused(a.cq, Status.REMOTE_RESOURCES, OpType.WRITE, 3,
                   "digest 4.2")
    assert bytes(target.buf) == bytes(4096)
    expect_connection_failed(a, b, source, target)


@pytest.mark.rule("WRITE-READ-ONLY-REGION")
@pytest.mark.digest("2.6")
@pytest.mark.reference("DATA-STATUS")
def test_write_to_region_without_remote_write(pair: Pair) -> None:
    """digest 2.6 (NDK_MR_FLAG_ALLOW_REMOTE_WRITE), 4.2 (ND2 ACCESS_VIOLATION).
    docs/semantics.md DATA-STATUS: a remote token without the access -> ACCESS_VIOLATION; the
    region (registered for remote read only) is unchanged; QP-ERROR afterwards."""
    a, b = pair
    source = region(a.pd, fill=pattern(64))
    target = region(b.pd, flags=MrFlag.ALLOW_LOCAL_WRITE | MrFlag.ALLOW_REMOTE_READ,
                    fill=b"\x42" * 4096)
    assert a.qp.write([source.sge(0, 64)], target.address, target.remote_token,
                      request_context=4) == Status.SUCCESS
    expect_refused(a.cq, Status.ACCESS_VIOLATION, OpType.WRITE, 4,
                   "digest 2.6")
    assert bytes(target.buf) == b"\x42" * 4096
    expect_connection_failed(a, b, source, target)


@pytest.mark.rule("WRITE-LOCAL-SGE-INVALID")
@pytest.mark.digest("4.2")
@pytest.mark.reference("DATA-STATUS")
@pytest.mark.parametrize("problem", [
    "outside",
    # a token the queue's PD never registered breaks SGE-TOKEN on purpose (docs/validation.md)
    pytest.param("remote-token", marks=pytest.mark.expect_violation("SGE-TOKEN")),
    pytest.param("unknown-token", marks=pytest.mark.expect_violation("SGE-TOKEN")),
])
def test_write_with_bad_local_sge(pair: Pair, problem: str) -> None:
    """digest 2.4 (a non-privileged token names a VirtualAddress inside a registered MR), 4.2
    (ND2 ACCESS_VIOLATION = invalid registered memory). docs/semantics.md DATA-STATUS: a local
    SGE outside its MR, or carrying a remote or unknown token -> ACCESS_VIOLATION; nothing
    written at the target; QP-ERROR afterwards."""
    a, b = pair
    source = region(a.pd, 4096, fill=pattern(4096))
    target = region(b.pd, flags=REMOTE_WRITE)
    sge = {
        "outside": ndk.Sge(source.address + 4000, 200, source.local_token),
        "remote-token": ndk.Sge(source.address, 64, source.remote_token),
        "unknown-token": ndk.Sge(source.address, 64, 0x7FFF1234),
    }[problem]
    assert a.qp.write([sge], target.address, target.remote_token, request_context=5) == \
        Status.SUCCESS
    expect_refused(a.cq, Status.ACCESS_VIOLATION, OpType.WRITE, 5,
                   "digest 4.2")
    assert bytes(target.buf) == bytes(4096)
    expect_connection_failed(a, b, source, target)


@pytest.mark.rule("WRITE-LOCAL-TOKEN-AS-REMOTE")
@pytest.mark.digest("1.4")
@pytest.mark.reference("DATA-STATUS")
@pytest.mark.parametrize("op", ["write", "read"])
def test_local_token_used_as_remote_token(pair: Pair, op: str) -> None:
    """digest 1.4 (NdkGetLocalTokenFromMr / NdkGetRemoteTokenFromMr: two tokens, the local one
    for SGEs), 4.2. docs/semantics.md DATA-STATUS: a remote token that is not one ->
    ACCESS_VIOLATION, even on a region open to remote read and write; no byte moves."""
    a, b = pair
    local = region(a.pd, flags=READ_SINK, fill=pattern(64, seed=4))
    target = region(b.pd, flags=REMOTE_ALL, fill=pattern(64, seed=5))
    post = a.qp.write if op == "write" else a.qp.read
    assert post([local.sge(0, 64)], target.address, target.local_token, request_context=6) == \
        Status.SUCCESS
    expect_refused(a.cq, Status.ACCESS_VIOLATION, OpType.WRITE if op == "write" else OpType.READ, 6,
                   "digest 1.4")
    assert bytes(local.buf[:64]) == pattern(64, seed=4)
    assert bytes(target.buf[:64]) == pattern(64, seed=5)
    expect_connection_failed(a, b, local, target)


@pytest.mark.rule("WRITE-OTHER-PD-TOKEN")
@pytest.mark.digest("1.2")
@pytest.mark.reference("DATA-STATUS")
@pytest.mark.parametrize("op", ["write", "read"])
def test_remote_token_of_another_pd(pair: Pair, op: str) -> None:
    """digest 1.2 (an MR belongs to one PD; a QP reaches its own PD's memory), 4.2.
    docs/semantics.md DATA-STATUS: the remote token of a region in another PD of the target
    adapter -> ACCESS_VIOLATION; the other PD's memory is untouched."""
    a, b = pair
    other_pd = b.adapter.create_pd().get(timeout=TIMEOUT)
    local = region(a.pd, flags=READ_SINK, fill=pattern(64, seed=6))
    foreign = region(other_pd, flags=REMOTE_ALL, fill=pattern(64, seed=7))
    post = a.qp.write if op == "write" else a.qp.read
    assert post([local.sge(0, 64)], foreign.address, foreign.remote_token,
                request_context=7) == Status.SUCCESS
    expect_refused(a.cq, Status.ACCESS_VIOLATION, OpType.WRITE if op == "write" else OpType.READ, 7,
                   "digest 1.2")
    assert bytes(foreign.buf[:64]) == pattern(64, seed=7)
    assert bytes(local.buf[:64]) == pattern(64, seed=6)
    expect_connection_failed(a, b, local, region(b.pd))


@pytest.mark.rule("SEND-LOCAL-OTHER-PD")
@pytest.mark.digest("1.2")
@pytest.mark.reference("DATA-STATUS")
@pytest.mark.expect_violation("SGE-TOKEN")
@pytest.mark.parametrize("op", ["send", "write"])
def test_local_sge_of_another_pd(pair: Pair, op: str) -> None:
    """digest 1.2 (an MR belongs to one PD; a QP reaches its own PD's memory), 2.4 (an SGE
    names its memory by the local token). docs/semantics.md DATA-STATUS (a local SGE of
    another PD): a Send or Write whose SGE names a region registered in another PD of the
    initiator's adapter completes ACCESS_VIOLATION (no receive is posted: the Send fails at
    its source); nothing reaches the peer, the foreign region is untouched, and the connection
    ends (QP-ERROR).  The validation layer reports the consumer's SGE-TOKEN."""
    a, b = pair
    other_pd = a.adapter.create_pd().get(timeout=TIMEOUT)
    foreign = region(other_pd, fill=pattern(64, seed=8))
    target = region(b.pd, flags=REMOTE_ALL)
    if op == "send":
        assert a.qp.send([foreign.sge(0, 64)], request_context=8) == Status.SUCCESS
    else:
        assert a.qp.write([foreign.sge(0, 64)], target.address, target.remote_token,
                          request_context=8) == Status.SUCCESS
    expect_refused(a.cq, Status.ACCESS_VIOLATION, OpType.SEND if op == "send" else OpType.WRITE,
                  8,
                   "digest 1.2")
    assert bytes(target.buf[:64]) == bytes(64)
    assert bytes(foreign.buf[:64]) == pattern(64, seed=8)
    expect_connection_failed(a, b, region(a.pd), target)


# --- RDMA Read -----------------------------------------------------------------------------


@pytest.mark.rule("READ-DATA")
@pytest.mark.digest("1.7")
def test_read_moves_bytes_into_read_sink(pair: Pair) -> None:
    """digest 1.7 (NdkRead), 1.4 (a read sink registered with NDK_MR_FLAG_RDMA_READ_SINK):
    the remote bytes from RemoteAddress land in the scattered sink SGEs; completion READ
    SUCCESS; the remote region is only read."""
    a, b = pair
    sink = region(a.pd, flags=READ_SINK, fill=b"\x11" * 4096)
    remote = region(b.pd, flags=REMOTE_READ | MrFlag.ALLOW_LOCAL_WRITE,
                    fill=pattern(4096, seed=8))
    sgl = [sink.sge(2048, 100), sink.sge(0, 156)]
    assert a.qp.read(sgl, remote.address + 300, remote.remote_token, request_context=8) == \
        Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.READ, 8)
    data = pattern(4096, seed=8)
    assert bytes(sink.buf[2048:2148]) == data[300:400]
    assert bytes(sink.buf[0:156]) == data[400:556]
    assert bytes(sink.buf[156:2048]) == b"\x11" * (2048 - 156)
    assert bytes(remote.buf) == data
    expect_no_completion(b.cq)


@pytest.mark.rule("READ-SINK-FLAG-REQUIRED")
@pytest.mark.digest("1.4")
@pytest.mark.reference("DATA-STATUS")
def test_read_into_region_without_read_sink_flag(pair: Pair) -> None:
    """digest 1.4 (NDK_MR_FLAG_RDMA_READ_SINK is required for RDMA-read sinks unless
    NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED is set -- the soft adapter does not set it).
    docs/semantics.md DATA-STATUS: ACCESS_VIOLATION; the sink is unchanged; QP-ERROR."""
    a, b = pair
    assert not a.adapter.query_info().adapter_flags & AdapterFlag.RDMA_READ_SINK_NOT_REQUIRED
    sink = region(a.pd, flags=MrFlag.ALLOW_LOCAL_WRITE)
    remote = region(b.pd, flags=REMOTE_READ, fill=pattern(64))
    assert a.qp.read([sink.sge(0, 64)], remote.address, remote.remote_token,
                     request_context=9) == Status.SUCCESS
    expect_refused(a.cq, Status.ACCESS_VIOLATION, OpType.READ, 9,
                   "digest 1.4")
    assert bytes(sink.buf) == bytes(4096)
    expect_connection_failed(a, b, sink, remote)


@pytest.mark.rule("READ-SINK-FLAG-NOT-REQUIRED")
@pytest.mark.digest("2.1")
def test_read_sink_flag_waived_by_adapter_flag(pair: Pair) -> None:
    """digest 1.4, 2.1 (NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED: the RDMA_READ_SINK
    flags are not needed): with the adapter flag set, a sink registered for local write only
    receives the read."""
    a, b = pair
    set_adapter_flags(a.adapter, add=AdapterFlag.RDMA_READ_SINK_NOT_REQUIRED)
    sink = region(a.pd, flags=MrFlag.ALLOW_LOCAL_WRITE)
    remote = region(b.pd, flags=REMOTE_READ, fill=pattern(64, seed=9))
    assert a.qp.read([sink.sge(0, 64)], remote.address, remote.remote_token,
                     request_context=10) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.READ, 10)
    assert bytes(sink.buf[:64]) == pattern(64, seed=9)


@pytest.mark.rule("READ-SINK-NO-LOCAL-WRITE")
@pytest.mark.digest("2.6")
@pytest.mark.reference("DATA-STATUS")
def test_read_sink_without_local_write(pair: Pair) -> None:
    """digest 2.6 (RDMA_READ_SINK and ALLOW_LOCAL_WRITE are separate bits). docs/semantics.md
    DATA-STATUS: a sink without ALLOW_LOCAL_WRITE -> ACCESS_VIOLATION, sink unchanged."""
    a, b = pair
    sink = region(a.pd, flags=MrFlag.RDMA_READ_SINK)
    remote = region(b.pd, flags=REMOTE_READ, fill=pattern(64))
    assert a.qp.read([sink.sge(0, 64)], remote.address, remote.remote_token,
                     request_context=11) == Status.SUCCESS
    expect_refused(a.cq, Status.ACCESS_VIOLATION, OpType.READ, 11,
                   "digest 2.6")
    assert bytes(sink.buf) == bytes(4096)
    expect_connection_failed(a, b, region(a.pd), remote)


@pytest.mark.rule("READ-BEYOND-REMOTE")
@pytest.mark.digest("1.7")
def test_read_beyond_remote_region(pair: Pair) -> None:
    """digest 1.7 (NdkRead: STATUS_REMOTE_RESOURCES, "read beyond the size of remote
    memory"): a read running 32 bytes past the peer's registration fails with
    STATUS_REMOTE_RESOURCES, inline or through its completion (where it arrives is
    READ-BEYOND-REMOTE-COMPLETION's), and no byte reaches the sink."""
    a, b = pair
    sink = region(a.pd, flags=READ_SINK)
    remote = region(b.pd, 4096, flags=REMOTE_READ, fill=pattern(4096))
    status = a.qp.read([sink.sge(0, 64)], remote.address + 4096 - 32, remote.remote_token,
                       request_context=12)
    if status == Status.SUCCESS:
        expect_result(a.cq, Status.REMOTE_RESOURCES, OpType.READ, 12)
    else:
        assert status == Status.REMOTE_RESOURCES
    assert bytes(sink.buf) == bytes(4096)


@pytest.mark.rule("READ-BEYOND-REMOTE-COMPLETION")
@pytest.mark.digest("1.7")
@pytest.mark.reference("DATA-STATUS")
def test_read_beyond_remote_region_completes(pair: Pair) -> None:
    """digest 1.7 (NdkRead: STATUS_REMOTE_RESOURCES beyond the remote memory), docs/semantics.md
    DATA-STATUS (the remote side finds it, so the status arrives in the completion) and
    QP-ERROR (the connection ends): the read is accepted inline, completes
    STATUS_REMOTE_RESOURCES, the sink is unchanged and the connection is gone."""
    a, b = pair
    sink = region(a.pd, flags=READ_SINK)
    remote = region(b.pd, 4096, flags=REMOTE_READ, fill=pattern(4096))
    assert a.qp.read([sink.sge(0, 64)], remote.address + 4096 - 32, remote.remote_token,
                     request_context=12) == Status.SUCCESS
    expect_refused(a.cq, Status.REMOTE_RESOURCES, OpType.READ, 12,
                   "digest 1.7")
    assert bytes(sink.buf) == bytes(4096)
    expect_connection_failed(a, b, sink, remote)


@pytest.mark.rule("READ-NO-REMOTE-READ")
@pytest.mark.digest("2.6")
@pytest.mark.reference("DATA-STATUS")
def test_read_region_without_remote_read(pair: Pair) -> None:
    """digest 2.6 (NDK_MR_FLAG_ALLOW_REMOTE_READ is its own bit: ALLOW_REMOTE_WRITE 0x5
    includes LOCAL_WRITE, not REMOTE_READ). docs/semantics.md DATA-STATUS: reading a region
    registered for remote write only -> ACCESS_VIOLATION; the sink is unchanged; QP-ERROR."""
    a, b = pair
    sink = region(a.pd, flags=READ_SINK)
    remote = region(b.pd, flags=MrFlag.ALLOW_REMOTE_WRITE, fill=pattern(64))
    assert a.qp.read([sink.sge(0, 64)], remote.address, remote.remote_token,
                     request_context=13) == Status.SUCCESS
    expect_refused(a.cq, Status.ACCESS_VIOLATION, OpType.READ, 13,
                   "digest 2.6")
    assert bytes(sink.buf) == bytes(4096)
    expect_connection_failed(a, b, sink, remote)


@pytest.mark.rule("READ-FENCE")
@pytest.mark.digest("2.5")
def test_read_fence_orders_after_prior_reads(pair: Pair) -> None:
    """digest 2.5 (NDK_OP_FLAG_READ_FENCE: all prior reads complete first): read remote A
    into the local buffer, then a READ_FENCE write of that buffer to remote B -- B holds what
    the read brought, and the completions are READ then WRITE."""
    a, b = pair
    local = region(a.pd, flags=READ_SINK, fill=b"\xcc" * 4096)
    remote = region(b.pd, 8192, flags=REMOTE_ALL, fill=pattern(256, seed=10))
    a_area, b_area = remote.address, remote.address + 4096
    assert a.qp.read([local.sge(0, 256)], a_area, remote.remote_token, request_context=1) == \
        Status.SUCCESS
    assert a.qp.write([local.sge(0, 256)], b_area, remote.remote_token,
                      flags=OpFlag.READ_FENCE, request_context=2) == Status.SUCCESS
    results = drain(a.cq, 2)
    assert [(r.status, r.type, r.request_context) for r in results] == \
        [(Status.SUCCESS, OpType.READ, 1), (Status.SUCCESS, OpType.WRITE, 2)]
    assert bytes(remote.buf[4096:4096 + 256]) == pattern(256, seed=10)


# --- memory windows ------------------------------------------------------------------------


def _bound_window(endpoint: Side, target: Region, offset: int, length: int, flags: int,
                  context: int = 0xB1) -> ndk.Mw:
    """Bind a new MW of ``endpoint``'s PD to [offset, offset + length) of ``target``; the
    BIND completion must be SUCCESS.  Returns the MW."""
    mw = endpoint.pd.create_mw().get(timeout=TIMEOUT)
    assert endpoint.qp.bind(target.mr, mw, target.address + offset, length, flags=flags,
                            request_context=context) == Status.SUCCESS
    assert mw.remote_token != 0   # valid once NdkBind has returned (digest 1.5)
    expect_result(endpoint.cq, Status.SUCCESS, OpType.BIND, context)
    return mw


@pytest.mark.rule("BIND-REMOTE-ACCESS")
@pytest.mark.digest("1.7")
def test_bound_window_gives_remote_access(pair: Pair) -> None:
    """digest 1.5 (the MW's remote token is valid once NdkBind has returned), 1.7 (NdkBind
    with ALLOW_REMOTE_READ | ALLOW_REMOTE_WRITE): the peer writes and reads through
    mw.remote_token at the window's virtual address; the bytes land inside the window of the
    MR, which was registered for local access only."""
    a, b = pair
    local = region(a.pd, flags=READ_SINK, fill=pattern(128, seed=11))
    target = region(b.pd, 8192, flags=MrFlag.ALLOW_LOCAL_WRITE)
    mw = _bound_window(b, target, 4096, 1024,
                       OpFlag.ALLOW_REMOTE_READ | OpFlag.ALLOW_REMOTE_WRITE)
    window = target.address + 4096
    assert a.qp.write([local.sge(0, 128)], window + 100, mw.remote_token,
                      request_context=1) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.WRITE, 1)
    assert bytes(target.buf[4196:4324]) == pattern(128, seed=11)
    assert bytes(target.buf[:4196]) == bytes(4196)
    assert a.qp.read([local.sge(1024, 128)], window + 100, mw.remote_token,
                     request_context=2) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.READ, 2)
    assert bytes(local.buf[1024:1152]) == pattern(128, seed=11)


@pytest.mark.rule("BIND-WINDOW-BOUNDS")
@pytest.mark.digest("1.7")
@pytest.mark.reference("DATA-STATUS")
@pytest.mark.parametrize("offset, length", [(1024 - 8, 16), (-4, 8)], ids=["past-end", "before"])
def test_access_outside_window(pair: Pair, offset: int, length: int) -> None:
    """digest 1.7 (NdkRead: REMOTE_RESOURCES beyond the remote memory). docs/semantics.md
    DATA-STATUS: a range outside the window, though inside the MR, -> REMOTE_RESOURCES; the
    MR is unchanged; QP-ERROR afterwards."""
    a, b = pair
    local = region(a.pd, fill=pattern(64))
    target = region(b.pd, 8192, flags=MrFlag.ALLOW_LOCAL_WRITE)
    mw = _bound_window(b, target, 2048, 1024,
                       OpFlag.ALLOW_REMOTE_READ | OpFlag.ALLOW_REMOTE_WRITE)
    assert a.qp.write([local.sge(0, length)], target.address + 2048 + offset, mw.remote_token,
                      request_context=3) == Status.SUCCESS
    expect_refused(a.cq, Status.REMOTE_RESOURCES, OpType.WRITE, 3,
                   "digest 1.7")
    assert bytes(target.buf) == bytes(8192)
    expect_connection_failed(a, b, local, target)


@pytest.mark.rule("BIND-READ-ONLY-WINDOW")
@pytest.mark.digest("1.7")
@pytest.mark.reference("DATA-STATUS")
def test_read_only_window_refuses_write(pair: Pair) -> None:
    """digest 1.7 (NdkBind ALLOW_REMOTE_READ without ALLOW_REMOTE_WRITE). docs/semantics.md
    DATA-STATUS: a read through the window succeeds; a write through it -> ACCESS_VIOLATION,
    the memory unchanged; QP-ERROR afterwards."""
    a, b = pair
    local = region(a.pd, flags=READ_SINK, fill=pattern(64, seed=12))
    target = region(b.pd, flags=MrFlag.ALLOW_LOCAL_WRITE, fill=pattern(4096, seed=13))
    mw = _bound_window(b, target, 0, 4096, OpFlag.ALLOW_REMOTE_READ)
    assert a.qp.read([local.sge(1024, 64)], target.address, mw.remote_token,
                     request_context=4) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.READ, 4)
    assert bytes(local.buf[1024:1088]) == pattern(4096, seed=13)[:64]
    assert a.qp.write([local.sge(0, 64)], target.address, mw.remote_token,
                      request_context=5) == Status.SUCCESS
    expect_refused(a.cq, Status.ACCESS_VIOLATION, OpType.WRITE, 5,
                   "digest 1.7")
    assert bytes(target.buf) == pattern(4096, seed=13)
    expect_connection_failed(a, b, local, target)


@pytest.mark.rule("BIND-LOCAL-WRITE-REQUIRED")
@pytest.mark.digest("1.7")
def test_write_window_needs_local_write_mr(pair: Pair) -> None:
    """digest 1.7 (NdkBind: ACCESS_VIOLATION, a write-enabled window requires an MR registered
    with NDK_MR_FLAG_ALLOW_LOCAL_WRITE), 3.4 (no CQE for an inline failure). The same MW then
    binds read-only on that MR."""
    a, b = pair
    target = region(b.pd, flags=MrFlag.ALLOW_LOCAL_READ)
    mw = b.pd.create_mw().get(timeout=TIMEOUT)
    assert b.qp.bind(target.mr, mw, target.address, 4096, flags=OpFlag.ALLOW_REMOTE_WRITE,
                     request_context=1) == Status.ACCESS_VIOLATION
    expect_no_completion(b.cq)
    assert b.qp.bind(target.mr, mw, target.address, 4096, flags=OpFlag.ALLOW_REMOTE_READ,
                     request_context=2) == Status.SUCCESS
    expect_result(b.cq, Status.SUCCESS, OpType.BIND, 2)


@pytest.mark.rule("BIND-SILENT-SUCCESS")
@pytest.mark.digest("2.5")
def test_silent_bind_has_no_completion(pair: Pair) -> None:
    """digest 2.5 (SILENT_SUCCESS on every initiator request: success produces no CQE): a
    silent Bind produces no completion, yet the window is bound -- the peer writes through
    its token."""
    a, b = pair
    local = region(a.pd, fill=pattern(32, seed=24))
    target = region(b.pd, flags=MrFlag.ALLOW_LOCAL_WRITE)
    mw = b.pd.create_mw().get(timeout=TIMEOUT)
    assert b.qp.bind(target.mr, mw, target.address, 4096,
                     flags=OpFlag.ALLOW_REMOTE_WRITE | OpFlag.SILENT_SUCCESS,
                     request_context=1) == Status.SUCCESS
    expect_no_completion(b.cq)
    assert a.qp.write([local.sge(0, 32)], target.address + 64, mw.remote_token,
                      request_context=2) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.WRITE, 2)
    assert bytes(target.buf[64:96]) == pattern(32, seed=24)
    expect_no_completion(b.cq)


@pytest.mark.rule("BIND-OUTSIDE-MR")
@pytest.mark.digest("1.7")
@pytest.mark.reference("POST-CHECKS")
@pytest.mark.parametrize("offset, length", [(-4096, 64), (4096 - 32, 64), (4096, 1), (0, 4097)],
                         ids=["before", "across-end", "past-end", "too-long"])
def test_bind_outside_mr_range(pair: Pair, offset: int, length: int) -> None:
    """digest 1.7 (NdkBind: VirtualAddress must lie inside the MR's range). docs/semantics.md
    POST-CHECKS: a bad Bind argument -> INVALID_PARAMETER inline, no CQE; the MW stays
    unbound and then binds inside the range.  Stated (digest 3.4, 1.7): no CQE for the
    inline failure, and the Bind inside the range completes SUCCESS; the choice: the refusal
    and its status."""
    a, b = pair
    target = region(b.pd, 4096, flags=MrFlag.ALLOW_LOCAL_WRITE)
    mw = b.pd.create_mw().get(timeout=TIMEOUT)
    assert b.qp.bind(target.mr, mw, target.address + offset, length,
                     flags=OpFlag.ALLOW_REMOTE_READ, request_context=1) == \
        Status.INVALID_PARAMETER
    with stated("digest 3.4, 1.7"):
        expect_no_completion(b.cq)
        assert b.qp.bind(target.mr, mw, target.address, 4096, flags=OpFlag.ALLOW_REMOTE_READ,
                         request_context=2) == Status.SUCCESS
        expect_result(b.cq, Status.SUCCESS, OpType.BIND, 2)


@pytest.mark.rule("BIND-TWICE")
@pytest.mark.digest("4.2")
@pytest.mark.reference("DATA-STATUS")
def test_second_bind_without_invalidate(pair: Pair) -> None:
    """digest 4.2 (ND2 INVALID_DEVICE_REQUEST = malformed request). docs/semantics.md
    DATA-STATUS: a second Bind of a bound MW without Invalidate completes
    INVALID_DEVICE_REQUEST (and, an error completion, ends the connection: QP-ERROR)."""
    a, b = pair
    target = region(b.pd, flags=MrFlag.ALLOW_LOCAL_WRITE)
    mw = _bound_window(b, target, 0, 1024, OpFlag.ALLOW_REMOTE_READ)
    assert b.qp.bind(target.mr, mw, target.address + 1024, 1024,
                     flags=OpFlag.ALLOW_REMOTE_READ, request_context=2) == Status.SUCCESS
    expect_refused(b.cq, Status.INVALID_DEVICE_REQUEST, OpType.BIND, 2,
                   "digest 4.2")
    expect_connection_failed(b, a, target, region(a.pd))


@pytest.mark.rule("MW-INVALIDATE")
@pytest.mark.digest("1.7")
@pytest.mark.reference("DATA-STATUS")
def test_invalidated_window_token_fails(pair: Pair) -> None:
    """digest 1.7 (NdkInvalidate of a bound MW): INVALIDATE completes SUCCESS; afterwards the
    window's token no longer grants access: a write through it -> ACCESS_VIOLATION
    (docs/semantics.md DATA-STATUS), the memory unchanged."""
    a, b = pair
    local = region(a.pd, fill=pattern(64))
    target = region(b.pd, flags=MrFlag.ALLOW_LOCAL_WRITE)
    mw = _bound_window(b, target, 0, 4096, OpFlag.ALLOW_REMOTE_READ | OpFlag.ALLOW_REMOTE_WRITE)
    token = mw.remote_token
    assert b.qp.invalidate(mw, request_context=0x1A) == Status.SUCCESS
    expect_result(b.cq, Status.SUCCESS, OpType.INVALIDATE, 0x1A)
    assert a.qp.write([local.sge(0, 64)], target.address, token, request_context=6) == \
        Status.SUCCESS
    expect_refused(a.cq, Status.ACCESS_VIOLATION, OpType.WRITE, 6,
                   "digest 1.7")
    assert bytes(target.buf) == bytes(4096)
    expect_connection_failed(a, b, local, target)


@pytest.mark.rule("MW-INVALIDATE-UNBOUND")
@pytest.mark.digest("4.2")
@pytest.mark.reference("DATA-STATUS")
def test_invalidate_unbound_window(pair: Pair) -> None:
    """digest 4.2 (ND2 INVALID_DEVICE_REQUEST, e.g. invalidating an unbound MW).
    docs/semantics.md DATA-STATUS: the Invalidate is accepted inline and completes
    INVALID_DEVICE_REQUEST; the error ends the connection (QP-ERROR)."""
    a, b = pair
    mw = b.pd.create_mw().get(timeout=TIMEOUT)
    assert b.qp.invalidate(mw, request_context=0x1B) == Status.SUCCESS
    expect_refused(b.cq, Status.INVALID_DEVICE_REQUEST, OpType.INVALIDATE, 0x1B,
                   "digest 4.2")
    expect_connection_failed(b, a, region(b.pd), region(a.pd))


@pytest.mark.rule("MW-DEREGISTER")
@pytest.mark.digest("4.2")
@pytest.mark.reference("MW-DEREGISTER")
def test_deregister_mr_with_bound_window(pair: Pair) -> None:
    """digest 4.2 (ND2 MR::Deregister: DEVICE_BUSY while MWs are bound). docs/semantics.md
    MW-DEREGISTER: NdkDeregisterMr -> STATUS_DEVICE_BUSY; the registration and the window
    keep working; after the window is invalidated the deregister succeeds."""
    a, b = pair
    local = region(a.pd, flags=READ_SINK)
    target = region(b.pd, flags=MrFlag.ALLOW_LOCAL_WRITE, fill=pattern(64, seed=14))
    mw = _bound_window(b, target, 0, 4096, OpFlag.ALLOW_REMOTE_READ)
    expect_request(target.mr.deregister_mr(), "i/a", Status.DEVICE_BUSY)
    assert a.qp.read([local.sge(0, 64)], target.address, mw.remote_token,
                     request_context=1) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.READ, 1)
    assert bytes(local.buf[:64]) == pattern(64, seed=14)
    assert b.qp.invalidate(mw, request_context=2) == Status.SUCCESS
    expect_result(b.cq, Status.SUCCESS, OpType.INVALIDATE, 2)
    expect_request(target.mr.deregister_mr(), "i/a")
    assert target.mr.local_token == 0   # docs/semantics.md TOKENS


@pytest.mark.rule("MW-SEND-AND-INVALIDATE")
@pytest.mark.digest("1.7")
@pytest.mark.reference("DATA-STATUS")
def test_send_and_invalidate_of_bound_window(pair: Pair) -> None:
    """digest 1.7 (NdkSendAndInvalidate; the sender's Type is SEND), 2.3 (the receiver's
    Type is RECEIVE_AND_INVALIDATE and TypeSpecificCompletionOutput the invalidated token):
    the message arrives and the peer's window no longer grants access (ACCESS_VIOLATION,
    docs/semantics.md DATA-STATUS)."""
    a, b = pair
    local = region(a.pd, fill=b"invalidate-mw")
    target = region(b.pd, flags=MrFlag.ALLOW_LOCAL_WRITE)
    mw = _bound_window(b, target, 1024, 1024,
                       OpFlag.ALLOW_REMOTE_READ | OpFlag.ALLOW_REMOTE_WRITE)
    token = mw.remote_token
    assert b.qp.receive([target.sge(0, 64)], request_context=1) == Status.SUCCESS
    assert a.qp.send_and_invalidate([local.sge(0, 13)], token, request_context=2) == \
        Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 2)
    got = expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE_AND_INVALIDATE, 1)
    assert got.type_specific_completion_output == token
    assert got.bytes_transferred == 13
    assert bytes(target.buf[:13]) == b"invalidate-mw"
    assert a.qp.write([local.sge(0, 8)], target.address + 1024, token, request_context=3) == \
        Status.SUCCESS
    expect_refused(a.cq, Status.ACCESS_VIOLATION, OpType.WRITE, 3,
                   "digest 1.7")
    assert bytes(target.buf[1024:1032]) == bytes(8)


def _send_and_invalidate_unremovable_token(a: Side, b: Side) -> tuple[Region, Region, int]:
    """A receive at ``b`` (context 1), then a SendAndInvalidate from ``a`` (context 2) naming
    the remote token of a normally registered region of ``b``, which cannot be remotely
    invalidated; both accepted inline.  Returns the source, the target and the token."""
    local = region(a.pd, fill=b"bad-token")
    target = region(b.pd, flags=REMOTE_WRITE)
    token = target.remote_token
    assert b.qp.receive([target.sge(0, 64)], request_context=1) == Status.SUCCESS
    assert a.qp.send_and_invalidate([local.sge(0, 9)], token, request_context=2) == \
        Status.SUCCESS
    return local, target, token


@pytest.mark.rule("SEND-AND-INVALIDATE-BAD-TOKEN-ABORTS")
@pytest.mark.digest("1.7")
def test_send_and_invalidate_of_bad_token_aborts(pair: Pair) -> None:
    """digest 1.7 (NdkSendAndInvalidate: "the receiver must abort the connection if the token
    is invalid"): a SendAndInvalidate naming a normal MR's remote token, which cannot be
    remotely invalidated, never completes the receiver's receive STATUS_SUCCESS, leaves the MR
    registered with its token, and ends the connection: a disconnect event reaches one of its
    ends (which one is the provider's: soft's sender fails first, QP-ERROR).
    Which error statuses the two sides see is SEND-AND-INVALIDATE-BAD-TOKEN's (a reference
    choice)."""
    a, b = pair
    local, target, token = _send_and_invalidate_unremovable_token(a, b)
    (received,) = drain(b.cq, 1)
    assert (received.request_context, received.type) == (1, OpType.RECEIVE)
    assert received.status != Status.SUCCESS
    assert target.mr.remote_token == token
    assert any(side.connector.wait_disconnect(timeout=TIMEOUT) is not None for side in (b, a))


@pytest.mark.rule("SEND-AND-INVALIDATE-BAD-TOKEN")
@pytest.mark.digest("1.7")
@pytest.mark.reference("DATA-STATUS")
def test_send_and_invalidate_of_token_receiver_cannot_invalidate(pair: Pair) -> None:
    """digest 1.7 (SendAndInvalidate: the receiver must abort the connection if the token is
    invalid). docs/semantics.md DATA-STATUS: a normal MR's remote token cannot be remotely
    invalidated -> receiver ACCESS_VIOLATION, sender REMOTE_RESOURCES, nothing written;
    QP-ERROR afterwards; the MR stays registered (its token unchanged)."""
    a, b = pair
    local, target, token = _send_and_invalidate_unremovable_token(a, b)
    expect_refused(a.cq, Status.REMOTE_RESOURCES, OpType.SEND, 2,
                   "digest 1.7")
    expect_refused(b.cq, Status.ACCESS_VIOLATION, OpType.RECEIVE, 1,
                   "digest 1.7")
    assert bytes(target.buf[:64]) == bytes(64)
    assert target.mr.remote_token == token
    expect_connection_failed(a, b, local, target)


# --- fast-register MRs ---------------------------------------------------------------------


@pytest.mark.rule("FRMR-DATA")
@pytest.mark.digest("1.7")
def test_fast_registered_region_takes_remote_write_and_read(pair: Pair) -> None:
    """digest 1.1 (NdkBuildLAM), 1.4 (NdkInitializeFastRegisterMr), 1.7 (NdkFastRegister:
    BaseVirtualAddress = FBO + n * PAGE_SIZE): FAST_REGISTER completes SUCCESS; the peer's
    write through the MR's remote token at BaseVirtualAddress + 10 lands at byte 10 of the
    mapped buffer, and a read through it returns the bytes."""
    a, b = pair
    local = region(a.pd, flags=READ_SINK, fill=pattern(300, seed=15))
    frmr = fast_register(b, 3 * PAGE, FR_REMOTE)
    assert frmr.base % PAGE == frmr.mapping.fbo
    assert a.qp.write([local.sge(0, 300)], frmr.base + 10, frmr.remote_token,
                      request_context=1) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.WRITE, 1)
    assert bytes(frmr.buf[10:310]) == pattern(300, seed=15)
    assert bytes(frmr.buf[:10]) == bytes(10)
    frmr.buf[PAGE * 2:PAGE * 2 + 64] = pattern(64, seed=16)   # across the mapping's pages
    assert a.qp.read([local.sge(1024, 64)], frmr.base + 2 * PAGE, frmr.remote_token,
                     request_context=2) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.READ, 2)
    assert bytes(local.buf[1024:1088]) == pattern(64, seed=16)


@pytest.mark.rule("FRMR-LOCAL-ACCESS")
@pytest.mark.digest("1.7")
def test_fast_registered_region_as_local_sge(pair: Pair) -> None:
    """digest 1.7 (NdkFastRegister with ALLOW_LOCAL_WRITE), 2.4 (a non-privileged token names
    a VirtualAddress inside the registration): a receive whose SGE uses the MR's local token
    at BaseVirtualAddress gets the message into the mapped buffer."""
    a, b = pair
    local = region(a.pd, fill=b"into-frmr")
    frmr = fast_register(b, PAGE, OpFlag.ALLOW_LOCAL_WRITE)
    assert b.qp.receive([frmr.sge(100, 64)], request_context=1) == Status.SUCCESS
    assert a.qp.send([local.sge(0, 9)], request_context=2) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 2)
    assert expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 1).bytes_transferred == 9
    assert bytes(frmr.buf[100:109]) == b"into-frmr"


@pytest.mark.rule("FRMR-FBO-MISMATCH")
@pytest.mark.digest("1.7")
@pytest.mark.reference("POST-CHECKS")
@pytest.mark.parametrize("shift", [1, PAGE // 2])
def test_fast_register_base_not_fbo_aligned(pair: Pair, shift: int) -> None:
    """digest 1.7 (NdkFastRegister: BaseVirtualAddress must be FBO + n * PAGE_SIZE).
    docs/semantics.md POST-CHECKS: INVALID_PARAMETER inline, no CQE; the MR's tokens grant
    nothing; the correct base then registers.  Stated (digest 3.4, 1.7): no CQE for the
    inline failure, and the correct base registers; the choice: the refusal and its
    status."""
    a, b = pair
    mapping = build_lam(b.adapter, PAGE)
    mr = fast_register_mr(b.pd, len(mapping.pages))
    bad_base = FR_BASE + (mapping.fbo + shift) % PAGE
    assert bad_base % PAGE != mapping.fbo
    assert b.qp.fast_register(mr, mapping.pages, mapping.fbo, PAGE, bad_base, flags=FR_REMOTE,
                              request_context=1) == Status.INVALID_PARAMETER
    with stated("digest 3.4, 1.7"):
        expect_no_completion(b.cq)
        assert b.qp.fast_register(mr, mapping.pages, mapping.fbo, PAGE, FR_BASE + mapping.fbo,
                                  flags=FR_REMOTE, request_context=2) == Status.SUCCESS
        expect_result(b.cq, Status.SUCCESS, OpType.FAST_REGISTER, 2)


@pytest.mark.rule("FRMR-LENGTH-BEYOND-PAGES")
@pytest.mark.digest("1.7")
@pytest.mark.reference("POST-CHECKS")
def test_fast_register_length_beyond_pages(pair: Pair) -> None:
    """digest 1.7 (NdkFastRegister: Length <= AdapterPageCount * PAGE_SIZE - FBO).
    docs/semantics.md POST-CHECKS: one byte more -> INVALID_PARAMETER inline, no CQE; exactly
    the maximum registers.  Stated (digest 3.4, 1.7): no CQE for the inline failure, and
    the maximum registers; the choice: the refusal and its status."""
    a, b = pair
    mapping = build_lam(b.adapter, 2 * PAGE)
    mr = fast_register_mr(b.pd, len(mapping.pages))
    maximum = len(mapping.pages) * PAGE - mapping.fbo
    base = FR_BASE + mapping.fbo
    assert b.qp.fast_register(mr, mapping.pages, mapping.fbo, maximum + 1, base,
                              flags=FR_REMOTE, request_context=1) == Status.INVALID_PARAMETER
    with stated("digest 3.4, 1.7"):
        expect_no_completion(b.cq)
        assert b.qp.fast_register(mr, mapping.pages, mapping.fbo, maximum, base,
                                  flags=FR_REMOTE, request_context=2) == Status.SUCCESS
        expect_result(b.cq, Status.SUCCESS, OpType.FAST_REGISTER, 2)


@pytest.mark.rule("FRMR-REMOTE-WITHOUT-ACCESS")
@pytest.mark.digest("1.7")
@pytest.mark.parametrize("flag", [OpFlag.ALLOW_REMOTE_READ, OpFlag.ALLOW_REMOTE_WRITE],
                         ids=["remote-read", "remote-write"])
def test_fast_register_remote_flags_without_remote_access(pair: Pair, flag: OpFlag) -> None:
    """digest 1.7 (NdkFastRegister: ACCESS_VIOLATION when remote flags are requested but the
    MR was not initialized with RemoteAccess), 3.4 (no CQE). The same MR then registers for
    local access."""
    a, b = pair
    mapping = build_lam(b.adapter, PAGE)
    mr = fast_register_mr(b.pd, len(mapping.pages), remote_access=False)
    base = FR_BASE + mapping.fbo
    assert b.qp.fast_register(mr, mapping.pages, mapping.fbo, PAGE, base,
                              flags=flag | OpFlag.ALLOW_LOCAL_WRITE, request_context=1) == \
        Status.ACCESS_VIOLATION
    expect_no_completion(b.cq)
    assert b.qp.fast_register(mr, mapping.pages, mapping.fbo, PAGE, base,
                              flags=OpFlag.ALLOW_LOCAL_WRITE, request_context=2) == Status.SUCCESS
    expect_result(b.cq, Status.SUCCESS, OpType.FAST_REGISTER, 2)


@pytest.mark.rule("FRMR-LOCAL-WITHOUT-REMOTE-ACCESS")
@pytest.mark.digest("1.7")
def test_fast_register_local_write_without_remote_access(pair: Pair) -> None:
    """digest 1.7 (NdkFastRegister: ACCESS_VIOLATION only when *remote* flags are requested on
    an MR initialized without RemoteAccess), 2.5 (ALLOW_LOCAL_WRITE 0x010 is documented for
    FastRegister; ALLOW_REMOTE_WRITE 0x030 merely includes its bit): ALLOW_LOCAL_WRITE alone
    registers (FAST_REGISTER SUCCESS) and the region then takes a message as a receive
    buffer."""
    a, b = pair
    mapping = build_lam(b.adapter, PAGE)
    mr = fast_register_mr(b.pd, len(mapping.pages), remote_access=False)
    base = FR_BASE + mapping.fbo
    assert b.qp.fast_register(mr, mapping.pages, mapping.fbo, PAGE, base,
                              flags=OpFlag.ALLOW_LOCAL_WRITE, request_context=1) == Status.SUCCESS
    expect_result(b.cq, Status.SUCCESS, OpType.FAST_REGISTER, 1)
    local = region(a.pd, fill=b"local-only")
    assert b.qp.receive([ndk.Sge(base + 16, 64, mr.local_token)], request_context=2) == \
        Status.SUCCESS
    assert a.qp.send([local.sge(0, 10)], request_context=3) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 3)
    assert expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 2).bytes_transferred == 10
    assert bytes(mapping.buf[16:26]) == b"local-only"


@pytest.mark.rule("FRMR-INVALIDATE")
@pytest.mark.digest("1.7")
@pytest.mark.reference("DATA-STATUS")
def test_invalidated_fast_register_token_fails(pair: Pair) -> None:
    """digest 1.7 (NdkInvalidate of a fast-registered MR): INVALIDATE completes SUCCESS; the
    MR's remote token then grants nothing: a write -> ACCESS_VIOLATION (docs/semantics.md
    DATA-STATUS), the mapped buffer unchanged."""
    a, b = pair
    local = region(a.pd, fill=pattern(64))
    frmr = fast_register(b, PAGE, FR_REMOTE)
    assert b.qp.invalidate(frmr.mr, request_context=0x2A) == Status.SUCCESS
    expect_result(b.cq, Status.SUCCESS, OpType.INVALIDATE, 0x2A)
    assert a.qp.write([local.sge(0, 64)], frmr.base, frmr.remote_token, request_context=3) == \
        Status.SUCCESS
    expect_refused(a.cq, Status.ACCESS_VIOLATION, OpType.WRITE, 3,
                   "digest 1.7")
    assert bytes(frmr.buf) == bytes(PAGE)
    expect_connection_failed(a, b, local, region(b.pd))


@pytest.mark.rule("FRMR-REREGISTER")
@pytest.mark.digest("1.7")
@pytest.mark.reference("DATA-STATUS")
def test_fast_register_again_after_invalidate(pair: Pair) -> None:
    """digest 1.7 (NdkInvalidate, NdkFastRegister): FastRegister, Invalidate, FastRegister
    onto new pages works, and the MR's token then reaches the new pages only. A further
    FastRegister without Invalidate completes INVALID_DEVICE_REQUEST (docs/semantics.md
    DATA-STATUS)."""
    a, b = pair
    local = region(a.pd, fill=pattern(32, seed=17))
    # pages for either buffer: one page-aligned and the other not needs a second page
    frmr = fast_register(b, PAGE, FR_REMOTE, pages=most_pages(PAGE))
    assert b.qp.invalidate(frmr.mr, request_context=1) == Status.SUCCESS
    expect_result(b.cq, Status.SUCCESS, OpType.INVALIDATE, 1)
    second = build_lam(b.adapter, PAGE)
    base = FR_BASE + second.fbo
    assert b.qp.fast_register(frmr.mr, second.pages, second.fbo, PAGE, base, flags=FR_REMOTE,
                              request_context=2) == Status.SUCCESS
    expect_result(b.cq, Status.SUCCESS, OpType.FAST_REGISTER, 2)
    assert a.qp.write([local.sge(0, 32)], base, frmr.remote_token, request_context=3) == \
        Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.WRITE, 3)
    assert bytes(second.buf[:32]) == pattern(32, seed=17)
    assert bytes(frmr.buf) == bytes(PAGE)   # the first mapping is no longer behind the MR
    # a FastRegister of a registered MR, without Invalidate: INVALID_DEVICE_REQUEST
    assert b.qp.fast_register(frmr.mr, second.pages, second.fbo, PAGE, base, flags=FR_REMOTE,
                              request_context=4) == Status.SUCCESS
    expect_refused(b.cq, Status.INVALID_DEVICE_REQUEST, OpType.FAST_REGISTER, 4,
                   "digest 1.7")


@pytest.mark.rule("FRMR-INVALIDATE-NORMAL-MR")
@pytest.mark.digest("1.7")
@pytest.mark.reference("DATA-STATUS")
def test_invalidate_normally_registered_mr(pair: Pair) -> None:
    """digest 1.7 (NdkInvalidate: an MR passed here must have been fast-registered, never
    normally registered). docs/semantics.md DATA-STATUS: the Invalidate is accepted inline
    and completes INVALID_DEVICE_REQUEST; the normal registration is untouched (same token,
    and it deregisters normally)."""
    a, b = pair
    target = region(b.pd, flags=REMOTE_WRITE)
    token = target.remote_token
    assert b.qp.invalidate(target.mr, request_context=0x2B) == Status.SUCCESS
    expect_refused(b.cq, Status.INVALID_DEVICE_REQUEST, OpType.INVALIDATE, 0x2B,
                   "digest 1.7")
    assert target.mr.remote_token == token
    expect_request(target.mr.deregister_mr(), "i/a")


@pytest.mark.rule("FRMR-SEND-AND-INVALIDATE")
@pytest.mark.digest("2.3")
@pytest.mark.reference("DATA-STATUS")
def test_send_and_invalidate_of_fast_registered_token(pair: Pair) -> None:
    """digest 1.7 (NdkSendAndInvalidate; sender Type SEND), 2.3 (receiver Type
    RECEIVE_AND_INVALIDATE, TypeSpecificCompletionOutput = the invalidated token): the message
    arrives; the peer's fast-registered token then grants nothing (ACCESS_VIOLATION,
    docs/semantics.md DATA-STATUS: NDK names no status for it)."""
    a, b = pair
    local = region(a.pd, fill=b"invalidate-frmr")
    frmr = fast_register(b, PAGE, FR_REMOTE)
    sink = region(b.pd)
    token = frmr.remote_token
    assert b.qp.receive([sink.sge(0, 64)], request_context=1) == Status.SUCCESS
    assert a.qp.send_and_invalidate([local.sge(0, 15)], token, request_context=2) == \
        Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 2)
    got = expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE_AND_INVALIDATE, 1)
    assert got.type_specific_completion_output == token
    assert got.bytes_transferred == 15
    assert bytes(sink.buf[:15]) == b"invalidate-frmr"
    assert a.qp.write([local.sge(0, 8)], frmr.base, token, request_context=3) == Status.SUCCESS
    expect_refused(a.cq, Status.ACCESS_VIOLATION, OpType.WRITE, 3,
                   "digest 2.3")
    assert bytes(frmr.buf) == bytes(PAGE)


@pytest.mark.rule("FRMR-SEND-AND-INVALIDATE-PLAIN-RESULTS")
@pytest.mark.digest("3.2")
@pytest.mark.reference("DATA-STATUS")
def test_receive_and_invalidate_through_get_results(pair: Pair) -> None:
    """digest 3.2: a ReceiveAndInvalidate completion must still be retrievable with
    NdkGetCqResults (status, bytes, contexts); the token is still invalidated, and a later
    NdkInvalidate of it fails (INVALID_DEVICE_REQUEST, docs/semantics.md DATA-STATUS)."""
    a, b = pair
    local = region(a.pd, fill=b"plain")
    frmr = fast_register(b, PAGE, FR_REMOTE)
    sink = region(b.pd)
    assert b.qp.receive([sink.sge(0, 64)], request_context=0x31) == Status.SUCCESS
    assert a.qp.send_and_invalidate([local.sge(0, 5)], frmr.remote_token,
                                    request_context=0x32) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 0x32)
    got = one(b.cq, ex=False)
    assert (got.status, got.request_context, got.bytes_transferred) == (Status.SUCCESS, 0x31, 5)
    assert bytes(sink.buf[:5]) == b"plain"
    assert b.qp.invalidate(frmr.mr, request_context=0x33) == Status.SUCCESS
    expect_refused(b.cq, Status.INVALID_DEVICE_REQUEST, OpType.INVALIDATE, 0x33,
                   "digest 3.2")


@pytest.mark.rule("READ-LOCAL-INVALIDATE")
@pytest.mark.digest("1.7")
@pytest.mark.reference("DATA-STATUS")
def test_read_with_local_invalidate(pair: Pair) -> None:
    """digest 1.7 (NdkRead with NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE, where the adapter sets
    NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED, 2.1: a successful completion
    invalidates the first SGE's buffer/token; an adapter without the flag skips): stated, the
    read's bytes land in the fast-registered sink, and a later read into the same token fails
    and places nothing; the reference choice is only which status (ACCESS_VIOLATION,
    docs/semantics.md DATA-STATUS)."""
    a, b = pair
    flags = a.adapter.query_info().adapter_flags
    if not flags & AdapterFlag.RDMA_READ_LOCAL_INVALIDATE_SUPPORTED:
        pytest.skip("the adapter does not set NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED")
    with stated("digest 1.7"):
        sink = fast_register(a, PAGE, FR_LOCAL_SINK)
        remote = region(b.pd, flags=REMOTE_READ, fill=pattern(128, seed=18))
        assert a.qp.read([sink.sge(0, 128)], remote.address, remote.remote_token,
                         flags=OpFlag.RDMA_READ_LOCAL_INVALIDATE, request_context=1) == \
            Status.SUCCESS
        expect_result(a.cq, Status.SUCCESS, OpType.READ, 1)
        assert bytes(sink.buf[:128]) == pattern(128, seed=18)
        assert a.qp.read([sink.sge(256, 16)], remote.address, remote.remote_token,
                         request_context=2) == Status.SUCCESS
        (later,) = drain(a.cq, 1)
        assert (later.type, later.request_context) == (OpType.READ, 2)
        assert later.status != Status.SUCCESS, "the sink's token was invalidated by the read"
        assert bytes(sink.buf[256:272]) == bytes(16)
    assert later.status == Status.ACCESS_VIOLATION


# --- the privileged token ------------------------------------------------------------------


@pytest.mark.rule("PRIVILEGED-SEND-SOURCE")
@pytest.mark.digest("2.4")
def test_privileged_token_send_source(pair: Pair) -> None:
    """digest 1.2 (NdkGetPrivilegedMemoryRegionToken: logical addresses from BuildLAM without
    registration), 2.4 (the privileged token implies a LogicalAddress): a Send from a LAM's
    logical address under the privileged token delivers the buffer's bytes."""
    a, b = pair
    mapping = build_lam(a.adapter, 2 * PAGE, fill=pattern(2 * PAGE, seed=19))
    token = a.pd.get_privileged_memory_region_token()
    sink = region(b.pd, 2 * PAGE)
    assert b.qp.receive([sink.sge(0, 2 * PAGE)], request_context=1) == Status.SUCCESS
    # 200 bytes from offset PAGE - 100: crosses a page boundary of the mapping
    sge = ndk.Sge(mapping.logical(PAGE - 100), 200, token)
    assert a.qp.send([sge], request_context=2) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 2)
    assert expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 1).bytes_transferred == 200
    assert bytes(sink.buf[:200]) == pattern(2 * PAGE, seed=19)[PAGE - 100:PAGE + 100]


@pytest.mark.rule("PRIVILEGED-RECEIVE-SINK")
@pytest.mark.digest("2.4")
def test_privileged_token_receive_sink(pair: Pair) -> None:
    """digest 1.2 (the privileged token gives LOCAL_READ and LOCAL_WRITE), 2.4: a receive
    into a LAM logical address under the privileged token gets the message in the buffer."""
    a, b = pair
    mapping = build_lam(b.adapter, PAGE)
    token = b.pd.get_privileged_memory_region_token()
    local = region(a.pd, fill=b"privileged sink")
    assert b.qp.receive([ndk.Sge(mapping.logical(40), 64, token)], request_context=1) == \
        Status.SUCCESS
    assert a.qp.send([local.sge(0, 15)], request_context=2) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 2)
    assert expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 1).bytes_transferred == 15
    assert bytes(mapping.buf[40:55]) == b"privileged sink"
    assert bytes(mapping.buf[:40]) == bytes(40)


@pytest.mark.rule("PRIVILEGED-WRITE-SOURCE")
@pytest.mark.digest("2.4")
def test_privileged_token_write_source(pair: Pair) -> None:
    """digest 1.2, 2.4: an RDMA Write whose local SGE is a LAM logical address under the
    privileged token moves the buffer's bytes to the peer."""
    a, b = pair
    mapping = build_lam(a.adapter, PAGE, fill=pattern(PAGE, seed=20))
    token = a.pd.get_privileged_memory_region_token()
    target = region(b.pd, flags=REMOTE_WRITE)
    assert a.qp.write([ndk.Sge(mapping.logical(8), 256, token)], target.address,
                      target.remote_token, request_context=3) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.WRITE, 3)
    assert bytes(target.buf[:256]) == pattern(PAGE, seed=20)[8:264]


@pytest.mark.rule("PRIVILEGED-NOT-REMOTE")
@pytest.mark.digest("1.2")
@pytest.mark.reference("DATA-STATUS")
def test_privileged_token_never_remote(pair: Pair) -> None:
    """digest 1.2 (the privileged token must never allow remote access). docs/semantics.md
    DATA-STATUS: used as the remote token of a write -> ACCESS_VIOLATION; the LAM buffer is
    unchanged."""
    a, b = pair
    mapping = build_lam(b.adapter, PAGE)
    token = b.pd.get_privileged_memory_region_token()
    local = region(a.pd, fill=pattern(64))
    assert a.qp.write([local.sge(0, 64)], mapping.logical(0), token, request_context=4) == \
        Status.SUCCESS
    expect_refused(a.cq, Status.ACCESS_VIOLATION, OpType.WRITE, 4,
                   "digest 1.2")
    assert bytes(mapping.buf) == bytes(PAGE)
    expect_connection_failed(a, b, local, region(b.pd))


@pytest.mark.rule("PRIVILEGED-RELEASED-LAM")
@pytest.mark.digest("1.1")
@pytest.mark.reference("DATA-STATUS")
def test_logical_address_after_release_lam(pair: Pair) -> None:
    """digest 1.1 (NdkReleaseLAM ends the mapping), 2.4. docs/semantics.md DATA-STATUS: a
    local SGE naming a released logical address under the privileged token ->
    ACCESS_VIOLATION; no byte reaches the peer."""
    a, b = pair
    mapping = build_lam(a.adapter, PAGE, fill=pattern(64, seed=25))
    logical = mapping.logical(0)
    mapping.lam.release()
    assert not mapping.lam.mapped
    token = a.pd.get_privileged_memory_region_token()
    target = region(b.pd, flags=REMOTE_WRITE)
    assert a.qp.write([ndk.Sge(logical, 64, token)], target.address, target.remote_token,
                      request_context=5) == Status.SUCCESS
    expect_refused(a.cq, Status.ACCESS_VIOLATION, OpType.WRITE, 5,
                   "digest 1.1")
    assert bytes(target.buf) == bytes(4096)
    expect_connection_failed(a, b, region(a.pd), target)


# --- deferred fast registers (digest 3.4's worked example) ---------------------------------


@pytest.mark.rule("DEFER-FAST-REGISTER-EXAMPLE")
@pytest.mark.digest("3.4")
@pytest.mark.reference("POST-CHECKS")
def test_deferred_fast_register_then_inline_failure(pair: Pair) -> None:
    """digest 3.4, worked example: FR(DEFER) succeeds inline, then FR(DEFER) fails inline
    (BaseVirtualAddress not FBO-aligned: INVALID_PARAMETER inline, docs/semantics.md
    POST-CHECKS, a reference choice: NDK does not say the provider finds it at post time).
    The first FR must still complete to the CQ -- and its registration works; the second
    produces no CQE."""
    a, b = pair
    first, second = build_lam(b.adapter, PAGE), build_lam(b.adapter, PAGE)
    mr1 = fast_register_mr(b.pd, len(first.pages))
    mr2 = fast_register_mr(b.pd, len(second.pages))
    base1 = FR_BASE + first.fbo
    assert b.qp.fast_register(mr1, first.pages, first.fbo, PAGE, base1,
                              flags=FR_REMOTE | OpFlag.DEFER, request_context=1) == Status.SUCCESS
    bad_base = FR_BASE + (second.fbo + 1) % PAGE
    assert b.qp.fast_register(mr2, second.pages, second.fbo, PAGE, bad_base,
                              flags=FR_REMOTE | OpFlag.DEFER, request_context=2) == \
        Status.INVALID_PARAMETER
    expect_result(b.cq, Status.SUCCESS, OpType.FAST_REGISTER, 1)
    expect_no_completion(b.cq)
    local = region(a.pd, fill=pattern(16, seed=23))
    assert a.qp.write([local.sge(0, 16)], base1, mr1.remote_token, request_context=3) == \
        Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.WRITE, 3)
    assert bytes(first.buf[:16]) == pattern(16, seed=23)
