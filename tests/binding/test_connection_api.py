"""The connection and data-path surface of the binding: connectors, listeners, QP posts, CQ
waits.  Bad input raises a clear Python exception (or reaches the provider as the misuse it
is), never a crash or a hang."""

import gc
import subprocess
import sys
import time

import pytest

import ndk
from ndk import CqNotify, MrFlag, OpType, Status

TIMEOUT = 5.0


@pytest.fixture
def adapter():
    with ndk.open_adapter("soft") as ad:
        yield ad


@pytest.fixture
def qp(adapter):
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    cq = adapter.create_cq(cq_depth=16).get(timeout=TIMEOUT)
    return pd.create_qp(cq, cq, max_receive_request_sge=2).get(timeout=TIMEOUT)


def listening(adapter):
    listener = adapter.create_listener().get(timeout=TIMEOUT)
    host = next(h for h in adapter.addresses if ":" not in h)
    assert listener.listen((host, 0)).wait(timeout=TIMEOUT) == Status.SUCCESS
    return listener, listener.get_local_address()


def test_the_brief_snippet_runs_as_written():
    srv = ndk.open_adapter("soft", address="192.0.2.1")
    cli = ndk.open_adapter("soft", address="192.0.2.2")
    try:
        a, b = ndk.testing.connect_pair(cli, srv)
        buf = bytearray(4096)
        mr = b.pd.create_mr().get()
        mr.register(buf, flags=MrFlag.ALLOW_LOCAL_WRITE).get()
        assert b.qp.receive([mr.sge(0, 64)], request_context=7) == Status.SUCCESS
        src = bytearray(b"x" * 128)
        smr = a.pd.create_mr().get()
        smr.register(src).get()
        assert a.qp.send([smr.sge(0, 128)]) == Status.SUCCESS
        r = b.cq.wait_results(1, timeout=1.0)[0]
        assert r.status == Status.BUFFER_OVERFLOW and r.type == OpType.RECEIVE
        assert r.request_context == 7
        b.cq.arm(CqNotify.ERRORS)
        assert repr(r).startswith("<ndk.ResultEx STATUS_BUFFER_OVERFLOW type=RECEIVE ")
    finally:
        cli.close()
        srv.close()


def test_import_ndk_does_not_import_pytest_and_testing_is_lazy():
    code = ("import sys, ndk; assert 'pytest' not in sys.modules; "
            "assert callable(ndk.testing.connect_pair); assert 'pytest' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


# --- connector argument checking -----------------------------------------------------------


def test_connect_rejects_malformed_arguments(adapter, qp):
    connector = adapter.create_connector().get(timeout=TIMEOUT)
    dest = ("192.0.2.9", 4000)
    with pytest.raises(TypeError):
        connector.connect(None, dest)
    with pytest.raises(TypeError, match=r"dest_address must be a tuple \(str, int\), not str"):
        connector.connect(qp, "192.0.2.9:4000")
    with pytest.raises(ValueError, match="dest_address: not an IPv4 or IPv6 address"):
        connector.connect(qp, ("nowhere", 4000))
    with pytest.raises(OverflowError, match=r"dest_address\[1\] must be an int in 0..65535"):
        connector.connect(qp, ("192.0.2.9", 70000))
    with pytest.raises(TypeError):
        connector.connect(qp, dest, private_data="text is not bytes")
    with pytest.raises(ValueError, match="private_data_length must be an int in 0.."):
        connector.connect(qp, dest, private_data_length=-1)
    with pytest.raises(ValueError, match="inbound_read_limit must be an int in 0.."):
        connector.connect(qp, dest, inbound_read_limit=-1)
    with pytest.raises(ValueError, match="src_address: not an IPv4 or IPv6 address"):
        connector.connect(qp, dest, src_address=("bogus", 0))


def test_connect_passes_misuse_to_the_provider(adapter, qp):
    """private_data=None with a length is NULL with that length: the provider answers."""
    connector = adapter.create_connector().get(timeout=TIMEOUT)
    listener, address = listening(adapter)
    call = connector.connect(qp, address, private_data=None, private_data_length=8)
    assert isinstance(call.status, Status)
    call.wait(timeout=TIMEOUT)


def test_calls_on_an_unconnected_connector_report_the_provider_status(adapter):
    connector = adapter.create_connector().get(timeout=TIMEOUT)
    assert connector.complete_connect().wait(timeout=TIMEOUT) == Status.CONNECTION_INVALID
    assert connector.disconnect().wait(timeout=TIMEOUT) == Status.CONNECTION_INVALID
    assert connector.reject(b"no") == Status.CONNECTION_INVALID
    data = connector.get_connection_data()
    assert isinstance(data, ndk.ConnectionData)
    assert data.status == Status.CONNECTION_INVALID and data.private_data == b""
    with pytest.raises(ndk.NdkError) as failure:
        connector.get_local_address()
    assert failure.value.status == Status.CONNECTION_INVALID
    result = connector.get_peer_address(address_length=28)
    assert isinstance(result, ndk.AddressResult)
    assert result.status == Status.CONNECTION_INVALID and result.address is None
    assert connector.wait_disconnect(timeout=0.01) is None
    assert connector.disconnect_events == 0


def test_connector_length_arguments_are_checked(adapter):
    connector = adapter.create_connector().get(timeout=TIMEOUT)
    with pytest.raises(ValueError, match="private_data_length must be an int in 0.."):
        connector.get_connection_data(private_data_length=-1)
    with pytest.raises(TypeError):
        connector.get_connection_data(private_data_length="8")
    with pytest.raises(ValueError, match="private_data_length above"):
        connector.get_connection_data(private_data_length=1 << 30)
    with pytest.raises(ValueError, match="larger than the address buffer"):
        connector.get_local_address(address_length=4096)
    with pytest.raises(TypeError):
        connector.wait_disconnect(timeout="soon")
    with pytest.raises(ValueError):
        connector.wait_disconnect(timeout=-1)


def test_ex_functions_need_ndkpi_2_1():
    with ndk.open_adapter("soft", version=(1, 0)) as old:
        assert old.version == (1, 2)
        connector = old.create_connector().get(timeout=TIMEOUT)
        with pytest.raises(ndk.NdkError, match="NdkCompleteConnectEx is NDKPI 2.1") as failure:
            connector.complete_connect_ex()
        assert failure.value.status == Status.NOT_SUPPORTED


def test_closed_objects_cannot_be_passed(adapter, qp):
    connector = adapter.create_connector().get(timeout=TIMEOUT)
    qp.close().wait(timeout=TIMEOUT)
    with pytest.raises(ndk.ObjectClosedError, match="QP is closed"):
        connector.connect(qp, ("192.0.2.9", 4000))


# --- connection establishment --------------------------------------------------------------


def test_private_data_and_addresses_of_an_incoming_connection(adapter, qp):
    listener, address = listening(adapter)
    connector = adapter.create_connector().get(timeout=TIMEOUT)
    connect = connector.connect(qp, address, private_data=b"hello")
    assert connect.status in (Status.SUCCESS, Status.PENDING)
    incoming = listener.next_connection(timeout=TIMEOUT)
    assert isinstance(incoming, ndk.Connector)
    data = incoming.get_connection_data()
    assert data.status == Status.SUCCESS and data.private_data.startswith(b"hello")
    assert data.private_data_length == len(data.private_data)
    short = incoming.get_connection_data(private_data_length=2)
    assert short.status == Status.BUFFER_TOO_SMALL
    assert short.private_data == b"he" and short.private_data_length == data.private_data_length
    sized = incoming.get_connection_data(private_data_length=0)
    assert sized.status == Status.SUCCESS and sized.private_data == b""
    assert incoming.get_local_address() == address
    small = incoming.get_local_address(address_length=4)
    assert small.status == Status.BUFFER_TOO_SMALL and small.address is None
    assert small.address_length >= 16
    full = incoming.get_local_address(address_length=small.address_length)
    assert full == ndk.AddressResult(Status.SUCCESS, full.address_length, address)
    assert incoming.reject() == Status.SUCCESS
    assert connect.wait(timeout=TIMEOUT) == Status.CONNECTION_REFUSED


def test_listener_close_closes_connections_never_taken(adapter, qp):
    listener, address = listening(adapter)
    connector = adapter.create_connector().get(timeout=TIMEOUT)
    connect = connector.connect(qp, address)
    time.sleep(0.05)  # let the connect event arrive
    close = listener.close()  # the incoming connector was never taken
    assert close.wait(timeout=TIMEOUT) == Status.SUCCESS
    connect.wait(timeout=TIMEOUT)


def test_dropped_listener_and_adapter_close_do_not_hang_on_untaken_connections():
    with ndk.open_adapter("soft") as ad:
        pd = ad.create_pd().get(timeout=TIMEOUT)
        cq = ad.create_cq(cq_depth=8).get(timeout=TIMEOUT)
        qp = pd.create_qp(cq, cq).get(timeout=TIMEOUT)
        listener, address = listening(ad)
        ad.create_connector().get(timeout=TIMEOUT).connect(qp, address)
        time.sleep(0.05)  # let the connect event arrive
        del listener
        gc.collect()
    with ndk.open_adapter("soft") as ad:
        pd = ad.create_pd().get(timeout=TIMEOUT)
        cq = ad.create_cq(cq_depth=8).get(timeout=TIMEOUT)
        qp = pd.create_qp(cq, cq).get(timeout=TIMEOUT)
        listener, address = listening(ad)
        ad.create_connector().get(timeout=TIMEOUT).connect(qp, address)
        time.sleep(0.05)
    assert listener.closed


def test_next_connection_times_out_with_none(adapter):
    listener, _ = listening(adapter)
    assert listener.next_connection(timeout=0.01) is None
    with pytest.raises(ValueError):
        listener.next_connection(timeout=-1)


def test_disconnect_event_reaches_the_peer(adapter):
    a, b = ndk.testing.connect_pair(adapter, adapter)
    assert a.connector.get_peer_address() == b.connector.get_local_address()
    assert a.connector.disconnect().wait(timeout=TIMEOUT) == Status.SUCCESS
    assert b.connector.wait_disconnect(timeout=TIMEOUT) == 0  # non-Ex callback: reason 0
    assert b.connector.disconnect_events == 1


# --- QP posts --------------------------------------------------------------------------------


def test_posts_reject_malformed_arguments(adapter, qp):
    mr = qp.adapter.create_pd().get(timeout=TIMEOUT).create_mr().get(timeout=TIMEOUT)
    buf = bytearray(64)
    mr.register(buf, flags=MrFlag.ALLOW_LOCAL_WRITE).get(timeout=TIMEOUT)
    with pytest.raises(TypeError):
        qp.send(mr.sge(0, 8))  # an Sge, not a list of them
    with pytest.raises(TypeError):
        qp.send([mr.sge(0, 8), "not an sge"])
    with pytest.raises(ValueError, match="request_context must be an int in 0.."):
        qp.receive([mr.sge(0, 8)], request_context=-1)
    with pytest.raises(ValueError, match="remote_address must be an int in 0.."):
        qp.write([mr.sge(0, 8)], remote_address=-1, remote_token=1)
    with pytest.raises(OverflowError, match="remote_token must be an int in 0..4294967295"):
        qp.read([mr.sge(0, 8)], remote_address=0x1000, remote_token=1 << 32)
    with pytest.raises(TypeError, match="an ndk.Mr or an ndk.Mw"):
        qp.invalidate(qp)
    with pytest.raises(TypeError):
        qp.invalidate(None)
    with pytest.raises(TypeError):
        qp.bind(None, None, 0x1000, 8)
    with pytest.raises(TypeError):
        qp.fast_register(mr, ["page"], 0, 8, 0x1000)


def test_posts_on_an_unconnected_qp_return_the_provider_status(adapter, qp):
    mr = adapter.create_pd().get(timeout=TIMEOUT).create_mr().get(timeout=TIMEOUT)
    mr.register(bytearray(64)).get(timeout=TIMEOUT)
    sgl = [mr.sge(0, 8)]
    assert qp.send(sgl) == Status.CONNECTION_INVALID
    assert qp.send_and_invalidate(sgl, remote_token=5) == Status.CONNECTION_INVALID
    assert qp.write(sgl, 0x1000, 5) == Status.CONNECTION_INVALID
    assert qp.read(sgl, 0x1000, 5) == Status.CONNECTION_INVALID
    assert qp.invalidate(mr) == Status.CONNECTION_INVALID
    assert isinstance(qp.fast_register(mr, [0x1000], 0, 8, 0x1000), Status)


def test_posts_on_closed_objects_raise(adapter, qp):
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    mr = pd.create_mr(fast_register=True).get(timeout=TIMEOUT)
    mr.close().wait(timeout=TIMEOUT)
    with pytest.raises(ndk.ObjectClosedError, match="MR is closed"):
        qp.invalidate(mr)
    qp.close().wait(timeout=TIMEOUT)
    with pytest.raises(ndk.ObjectClosedError, match="QP is closed"):
        qp.receive([])


def test_mr_reports_its_registered_range(adapter):
    mr = adapter.create_pd().get(timeout=TIMEOUT).create_mr().get(timeout=TIMEOUT)
    assert (mr.address, mr.length) == (0, 0)
    buf = bytearray(100)
    mr.register(memoryview(buf)[10:50]).get(timeout=TIMEOUT)
    assert mr.length == 40 and mr.address != 0
    assert mr.sge(0, 40).virtual_address == mr.address
    with pytest.raises(BufferError, match="contiguous"):
        adapter.create_pd().get(timeout=TIMEOUT).create_mr().get(timeout=TIMEOUT).register(
            memoryview(buf)[::2])


def test_srq_receive_alias(adapter):
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    srq = pd.create_srq(4).get(timeout=TIMEOUT)
    mr = pd.create_mr().get(timeout=TIMEOUT)
    mr.register(bytearray(16), flags=MrFlag.ALLOW_LOCAL_WRITE).get(timeout=TIMEOUT)
    assert srq.receive([mr.sge(0, 16)]) == Status.SUCCESS
    assert srq.srq_receive([mr.sge(0, 16)], request_context=None) == Status.SUCCESS


# --- CQ waits --------------------------------------------------------------------------------


def test_wait_results_times_out_on_an_empty_cq(adapter):
    cq = adapter.create_cq(cq_depth=4).get(timeout=TIMEOUT)
    with pytest.raises(TimeoutError, match=r"0 of 1 results arrived within 0.05 s") as timeout:
        cq.wait_results(1, timeout=0.05)
    assert timeout.value.results == []
    assert cq.wait_results(0) == []
    with pytest.raises(ValueError):
        cq.wait_results(1, timeout=-1)
    with pytest.raises(TypeError):
        cq.wait_results(1, timeout="soon")
    with pytest.raises(ValueError, match="n must be an int in 0.."):
        cq.wait_results(-1)


def test_wait_results_lists_what_arrived_before_the_timeout(adapter):
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    cq = adapter.create_cq(cq_depth=4).get(timeout=TIMEOUT)
    qp = pd.create_qp(cq, cq).get(timeout=TIMEOUT)
    mr = pd.create_mr().get(timeout=TIMEOUT)
    mr.register(bytearray(16), flags=MrFlag.ALLOW_LOCAL_WRITE).get(timeout=TIMEOUT)
    assert qp.receive([mr.sge(0, 16)], request_context=3) == Status.SUCCESS
    qp.flush()  # the receive completes with STATUS_CANCELLED
    with pytest.raises(TimeoutError, match=r"1 of 2 results .*STATUS_CANCELLED type=RECEIVE"
                       ) as timeout:
        cq.wait_results(2, timeout=0.2)
    (result,) = timeout.value.results
    assert result.type == OpType.RECEIVE and result.request_context == 3
    assert qp.receive([mr.sge(0, 16)], request_context=4) == Status.SUCCESS
    qp.flush()
    (plain,) = cq.wait_results(1, timeout=TIMEOUT, ex=False)
    assert isinstance(plain, ndk.Result) and plain.status == Status.CANCELLED


# --- manual progress -------------------------------------------------------------------------


def test_step_and_pending_steps(adapter):
    with pytest.raises(ValueError, match="progress is auto"):
        adapter.step()
    adapter.knobs.progress = "manual"
    assert adapter.pending_steps == 0
    assert adapter.step(0) == 0
    with pytest.raises(ValueError):
        adapter.step(-1)
    with pytest.raises(TypeError):
        adapter.step("1")


def test_connect_pair_steps_manual_progress():
    with ndk.open_adapter("soft", progress="manual") as srv, \
            ndk.open_adapter("soft", progress="manual") as cli:
        a, b = ndk.testing.connect_pair(cli, srv)
        assert a.connector.get_peer_address() == b.listener.get_local_address()
        assert b.adapter is srv and a.adapter is cli



# --- logical address mappings ----------------------------------------------------------------


def test_build_lam_maps_a_buffer(adapter):
    buf = bytearray(2 * 4096)
    call = adapter.build_lam(buf)
    assert isinstance(call, ndk.Call) and isinstance(call, ndk.LamCall)
    lam = call.get(timeout=TIMEOUT)
    assert lam.status == Status.SUCCESS and lam.mapped
    assert lam.adapter_page_count == len(lam.adapter_page_array) in (2, 3)
    assert all(page % 4096 == 0 for page in lam.adapter_page_array)
    assert 0 <= lam.fbo < 4096
    with pytest.raises(BufferError):
        buf.extend(b"more")  # held while mapped
    lam.release()
    lam.release()
    assert not lam.mapped
    buf.extend(b"more")
    with pytest.raises(ValueError, match="not mapped"):
        lam.adapter_page_array


def test_build_lam_reports_the_size_needed_and_refuses_bad_buffers(adapter):
    call = adapter.build_lam(bytearray(4096), lam_size=8)
    assert call.status == Status.BUFFER_TOO_SMALL
    assert call.lam.lam_size >= 16 + 8
    with pytest.raises(ndk.NdkError) as failure:
        call.get(timeout=TIMEOUT)
    assert failure.value.status == Status.BUFFER_TOO_SMALL
    with pytest.raises(BufferError):
        adapter.build_lam(b"read-only memory")
    gap = ndk.Mdl(bytearray(3 * 4096), [(0, 4096), (8192, 4096)])
    assert adapter.build_lam(gap).wait(timeout=TIMEOUT) == Status.INVALID_PARAMETER
