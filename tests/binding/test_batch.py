"""Batch data-path calls: Qp.post_many and Cq.poll_into (bindings/batch.cpp).

Behaviour only (what is posted, what lands in the array, statuses); speed is measured in
bench/, never asserted here.
"""

import struct
import subprocess
import sys
import textwrap

import pytest

import ndk
from ndk import MrFlag, OpType, Status

RECORD = 40


@pytest.fixture
def pair():
    with ndk.open_adapter("soft") as srv, ndk.open_adapter("soft") as cli:
        a, b = ndk.testing.connect_pair(cli, srv, cq_depth=256, receive_queue_depth=64,
                                        initiator_queue_depth=64)
        yield a, b


def registered(endpoint, size, flags=MrFlag.ALLOW_LOCAL_WRITE):
    buf = bytearray(size)
    mr = endpoint.pd.create_mr().get()
    mr.register(buf, flags=flags).get()
    return buf, mr


def test_layouts_are_40_byte_records():
    assert struct.calcsize(ndk.Qp.REQUEST_FORMAT) == RECORD
    assert struct.calcsize(ndk.Cq.RESULT_FORMAT) == RECORD
    np = pytest.importorskip("numpy")
    assert ndk.Qp.request_dtype().itemsize == RECORD
    assert ndk.Cq.result_dtype().itemsize == RECORD
    assert ndk.Cq.result_dtype().names[:4] == ("status", "bytes_transferred", "qp_context",
                                               "request_context")
    assert isinstance(ndk.Cq.result_array(3), np.ndarray) and len(ndk.Cq.result_array(3)) == 3


# A finder that says numpy is there and fails to load it, as numpy's own import does when a
# Ctrl-C lands in it (it prints the KeyboardInterrupt and raises ImportError).
_BROKEN_NUMPY = """
    import importlib.abc, importlib.machinery, sys
    class Broken(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path=None, target=None):
            return importlib.machinery.ModuleSpec(name, self) if name == "numpy" else None
        def create_module(self, spec):
            return None
        def exec_module(self, module):
            raise ImportError("numpy.core.multiarray failed to import")
    sys.modules.pop("numpy", None)
    sys.meta_path.insert(0, Broken())
"""


@pytest.mark.parametrize("numpy, expected", [
    ("sys.modules['numpy'] = None", "bytearray 160"),  # not installed: bytes stand in
    (_BROKEN_NUMPY, "ImportError numpy.core.multiarray failed to import"),  # installed, failing
])
def test_result_array_stands_in_bytes_only_for_a_numpy_not_installed(numpy, expected):
    """An installed numpy that fails to import is raised, never replaced by bytes: a wait given
    the bytes would not hear the Ctrl-C that numpy's import swallowed (batch.cpp, new_array)."""
    code = "import sys\n" + textwrap.dedent(numpy) + textwrap.dedent("""
        import ndk
        try:
            array = ndk.Cq.result_array(4)
        except ImportError as error:
            print("ImportError", error)
        else:
            print(type(array).__name__, len(array))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected


def test_receives_and_sends_from_numpy_arrays_into_a_numpy_result_array(pair):
    np = pytest.importorskip("numpy")
    a, b = pair
    n = 32
    dst, dmr = registered(b, n * 16)
    src, smr = registered(a, n * 16)
    for i in range(n):
        src[i * 16:(i + 1) * 16] = bytes([i]) * 16
    recvs = ndk.Qp.request_array(n)
    recvs["request_context"] = np.arange(1000, 1000 + n)
    recvs["address"] = dmr.sge(0, 1).virtual_address + np.arange(n) * 16
    recvs["length"] = 16
    recvs["token"] = dmr.local_token
    assert b.qp.post_many("receive", recvs) == (n, Status.SUCCESS)
    sends = ndk.Qp.request_array(n)
    sends["request_context"] = np.arange(n)
    sends["address"] = smr.sge(0, 1).virtual_address + np.arange(n) * 16
    sends["length"] = np.arange(1, n + 1) % 17
    sends["token"] = smr.local_token
    posted, status = a.qp.post_many(OpType.SEND, sends)
    assert (posted, status) == (n, Status.SUCCESS)

    out = ndk.Cq.result_array(2 * n)
    got = b.cq.poll_into(out, min_results=n, timeout=2.0)
    assert got == n
    r = out[:n]
    assert (r["status"] == 0).all()
    assert (r["type"] == int(OpType.RECEIVE)).all()
    assert list(r["request_context"]) == list(range(1000, 1000 + n))
    assert list(r["bytes_transferred"]) == [(i + 1) % 17 for i in range(n)]
    for i in range(n):
        length = (i + 1) % 17
        assert dst[i * 16:i * 16 + length] == bytes([i]) * length
    # The initiator side: n SEND results, written from `offset` on.
    assert a.cq.poll_into(out, min_results=n, timeout=2.0, offset=n) == n
    assert (out[n:]["type"] == int(OpType.SEND)).all()
    assert list(out[n:]["request_context"]) == list(range(n))


def test_writes_and_reads_from_a_list_of_sges_into_a_bytearray(pair):
    a, b = pair
    remote, rmr = registered(b, 4096, MrFlag.ALLOW_LOCAL_WRITE | MrFlag.ALLOW_REMOTE_WRITE
                             | MrFlag.ALLOW_REMOTE_READ)
    local, lmr = registered(a, 4096, MrFlag.ALLOW_LOCAL_WRITE | MrFlag.RDMA_READ_SINK)
    local[:64] = b"w" * 64
    address = rmr.sge(0, 1).virtual_address
    posted, status = a.qp.post_many("write", [lmr.sge(0, 64)] * 3, remote_address=address,
                                    remote_token=rmr.remote_token, request_context=7)
    assert (posted, status) == (3, Status.SUCCESS)
    assert remote[:64] == b"w" * 64
    posted, status = a.qp.post_many("read", [lmr.sge(1024, 64)], remote_address=address,
                                    remote_token=rmr.remote_token, request_context=8)
    assert (posted, status) == (1, Status.SUCCESS)
    out = bytearray(RECORD * 8)
    assert a.cq.poll_into(out, min_results=4, timeout=2.0) == 4
    results = [struct.unpack_from(ndk.Cq.RESULT_FORMAT, out, i * RECORD) for i in range(4)]
    assert [r[0] for r in results] == [0] * 4
    assert [r[3] for r in results] == [7, 7, 7, 8]
    assert [r[4] for r in results] == [int(OpType.WRITE)] * 3 + [int(OpType.READ)]
    assert local[1024:1088] == b"w" * 64


def test_post_many_stops_at_the_first_failure_and_names_it(pair):
    a, b = pair
    _, mr = registered(b, 4096)
    # The receive queue holds 64: the 65th receive is refused (queue full).
    posted, status = b.qp.post_many("receive", [mr.sge(0, 16)] * 70)
    assert posted == 64
    assert status == Status.NO_MORE_ENTRIES


def test_poll_into_without_waiting_returns_what_is_there(pair):
    a, b = pair
    out = ndk.Cq.result_array(4)
    assert a.cq.poll_into(out) == 0
    assert a.cq.poll_into(out, min_results=1, timeout=0.01) == 0  # timed out: nothing came


def test_bad_arguments_are_python_errors(pair):
    a, b = pair
    with pytest.raises(ValueError, match="40-byte records"):
        a.cq.poll_into(bytearray(41))
    with pytest.raises(ValueError, match="min_results"):
        a.cq.poll_into(bytearray(RECORD), min_results=2)
    with pytest.raises(ValueError, match="op is"):
        a.qp.post_many("fetch_add", bytearray(RECORD))
    with pytest.raises(TypeError):
        a.qp.post_many("write", bytearray(RECORD), remote_token=1)
    with pytest.raises(BufferError):
        a.cq.poll_into(bytes(RECORD))  # read-only


def test_closed_objects_raise(pair):
    a, b = pair
    a.qp.close()
    with pytest.raises(ndk.ObjectClosedError):
        a.qp.post_many("send", [])
