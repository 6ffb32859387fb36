"""Memory that cannot be written is never registered for writing (docs/semantics.md,
MR-WRITABLE): every registration path checks writability against the access flags.

The probe's reproducers: ``ndk.Mdl(bytes)`` and an ``ndk.Mdl`` over a PROT_READ mmap were
accepted by ``mr.register_mr(mdl, flags=ALLOW_LOCAL_WRITE)`` and ``adapter.build_lam(mdl)``, so
a peer's Send then landed in an immutable bytes object, or killed the process (SIGSEGV) on
inproc, shm and tcp.  Two layers refuse them now: the binding raises BufferError for a Python
buffer Python marks read-only, and the provider answers STATUS_ACCESS_VIOLATION for memory the
kernel maps without write permission (here: a PROT_READ mapping seen through a ctypes array,
which Python believes writable).  Read-only memory registered without write access stays
allowed."""

from __future__ import annotations

import ctypes
import mmap

import pytest

import ndk
from ndk import MrFlag, Status

TIMEOUT = 5
PAGE = 4096
WRITE_FLAGS = [MrFlag.ALLOW_LOCAL_WRITE, MrFlag.ALLOW_REMOTE_WRITE,
               MrFlag.ALLOW_LOCAL_WRITE | MrFlag.RDMA_READ_SINK]
# An adapter of each soft transport; its knobs (address: tcp's 127.0.0.0/8, local on every host).
TRANSPORTS = {"inproc": {}, "shm": {"transport": "shm"},
              "tcp": {"transport": "tcp", "address": "127.0.0.81"}}


@pytest.fixture(params=sorted(TRANSPORTS))
def pd(request):
    with ndk.open_adapter("soft", **TRANSPORTS[request.param]) as adapter:
        yield adapter.create_pd().get(timeout=TIMEOUT)


class ReadOnlyMapping:
    """``pages`` pages mapped PROT_READ by libc's mmap, seen as a ctypes array: a buffer Python
    lets anyone write, over memory the kernel does not (what a C consumer can hand a provider)."""

    def __init__(self, pages: int):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self._libc, self.size = libc, pages * PAGE
        address = libc.mmap(None, self.size, mmap.PROT_READ,
                            mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap")
        self.address = address
        self.array = (ctypes.c_char * self.size).from_address(address)

    def close(self) -> None:
        self._libc.munmap(self.address, self.size)


@pytest.fixture
def read_only_mapping():
    mapping = ReadOnlyMapping(2)
    yield mapping
    mapping.close()


@pytest.mark.parametrize("flags", WRITE_FLAGS)
def test_an_mdl_over_bytes_is_refused_write_access(pd, flags):
    """Reproducer: register_mr(ndk.Mdl(bytes), flags=ALLOW_LOCAL_WRITE) let a peer's Send
    modify the bytes object.  BufferError, as mr.register() gives; the bytes are untouched."""
    data = b"X" * PAGE
    mr = pd.create_mr().get(timeout=TIMEOUT)
    with pytest.raises(BufferError, match="not writable"):
        mr.register_mr(ndk.Mdl(data), flags=flags)
    with pytest.raises(BufferError):
        mr.register(data, flags=flags)
    assert mr.local_token == 0, "nothing was registered"
    assert mr.register_mr(ndk.Mdl(data), flags=MrFlag.ALLOW_REMOTE_READ).wait(
        timeout=TIMEOUT) == Status.SUCCESS, "read-only memory without write access stays allowed"
    assert data == b"X" * PAGE


def test_an_mdl_over_a_read_only_mmap_is_refused_write_access(pd):
    """Reproducer: an ndk.Mdl over a PROT_READ mmap registered for local write, then a peer's
    Send into it: SIGSEGV on every transport.  Python marks the mmap read-only: BufferError."""
    mapping = mmap.mmap(-1, PAGE, prot=mmap.PROT_READ)  # unmapped when the last user lets go
    mdl = ndk.Mdl(mapping)
    mr = pd.create_mr().get(timeout=TIMEOUT)
    with pytest.raises(BufferError, match="not writable"):
        mr.register_mr(mdl, flags=MrFlag.ALLOW_LOCAL_WRITE)
    with pytest.raises(BufferError, match="not writable"):
        pd.adapter.build_lam(mdl)
    assert mr.register_mr(mdl, flags=0).wait(timeout=TIMEOUT) == Status.SUCCESS
    assert mr.deregister_mr().wait(timeout=TIMEOUT) == Status.SUCCESS


def test_build_lam_refuses_an_mdl_over_bytes(pd):
    """Reproducer: adapter.build_lam(ndk.Mdl(bytes)): the privileged token lets the logical
    addresses be written (digest 1.3), so the LAM needs writable memory."""
    with pytest.raises(BufferError, match="not writable"):
        pd.adapter.build_lam(ndk.Mdl(b"Y" * PAGE))


@pytest.mark.parametrize("flags", WRITE_FLAGS)
def test_the_provider_refuses_write_access_to_a_read_only_mapping(pd, read_only_mapping, flags):
    """Memory the kernel maps PROT_READ, in a buffer Python thinks writable: the provider's
    own check (kit::check_mapped) answers STATUS_ACCESS_VIOLATION, the status MmProbeAndLockPages
    raises and ibv_reg_mr's EFAULT maps to; nothing is registered, and the same memory
    registered without write access is fine."""
    mdl = ndk.Mdl(read_only_mapping.array)
    mr = pd.create_mr().get(timeout=TIMEOUT)
    assert mr.register_mr(mdl, flags=flags).wait(timeout=TIMEOUT) == Status.ACCESS_VIOLATION
    assert mr.local_token == 0
    assert mr.register(read_only_mapping.array, flags=flags).wait(
        timeout=TIMEOUT) == Status.ACCESS_VIOLATION
    assert mr.register_mr(mdl, flags=MrFlag.ALLOW_REMOTE_READ).wait(
        timeout=TIMEOUT) == Status.SUCCESS
    assert mr.deregister_mr().wait(timeout=TIMEOUT) == Status.SUCCESS


def test_build_lam_over_a_read_only_mapping_is_access_violation(pd, read_only_mapping):
    """The provider's side of BuildLAM: STATUS_ACCESS_VIOLATION, no mapping made."""
    call = pd.adapter.build_lam(ndk.Mdl(read_only_mapping.array))
    assert call.wait(timeout=TIMEOUT) == Status.ACCESS_VIOLATION
    assert not call.lam.mapped
