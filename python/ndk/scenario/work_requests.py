"""Helpers of the work-request and memory-access scenarios (test_work_requests.py,
test_memory_access.py): registered regions with known contents, waits for completions and
for their absence, the state a failed connection must be in (their connected pairs are the
resource builder's, ``ndk.scenario.resources``).

Public ``ndk`` API only.  Every helper asserts what it relies on, so a scenario's failure
names the step that went wrong.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Literal, overload

import ndk
from ndk import MrFlag, OpType, Status
from ndk.testing import new_buffer

from . import TIMEOUT, Side, drain
from .stated import stated

__all__ = [
    "FR_BASE", "LOCAL_WRITE", "PAGE", "READ_SINK", "REMOTE_ALL", "REMOTE_READ", "REMOTE_WRITE",
    "FastRegion", "Mapping", "Region", "build_lam", "expect_connection_failed",
    "expect_refused", "expect_result", "fast_register", "fast_register_mr", "most_pages", "one",
    "region", "unregistered_sge",
]

PAGE = 4096

LOCAL_WRITE = MrFlag.ALLOW_LOCAL_WRITE
REMOTE_READ = MrFlag.ALLOW_REMOTE_READ
REMOTE_WRITE = MrFlag.ALLOW_REMOTE_WRITE      # includes ALLOW_LOCAL_WRITE (digest 2.6)
READ_SINK = MrFlag.ALLOW_LOCAL_WRITE | MrFlag.RDMA_READ_SINK
REMOTE_ALL = MrFlag.ALLOW_REMOTE_READ | MrFlag.ALLOW_REMOTE_WRITE


@dataclass
class Region:
    """A registered MR and the bytearray behind it."""

    mr: ndk.Mr
    buf: bytearray

    @property
    def address(self) -> int:
        return self.mr.address

    @property
    def remote_token(self) -> int:
        return self.mr.remote_token

    @property
    def local_token(self) -> int:
        return self.mr.local_token

    def sge(self, offset: int, length: int) -> ndk.Sge:
        return self.mr.sge(offset, length)


def region(pd: ndk.Pd, size: int = PAGE, flags: int = LOCAL_WRITE,
           fill: bytes | None = None) -> Region:
    """A normal MR on ``pd`` registered over a new ``size``-byte buffer with ``flags``; the
    buffer (in the process where ``pd`` lives) starts as ``fill`` (zeros when None)."""
    buf = new_buffer(pd, size)
    if fill is not None:
        buf[:len(fill)] = fill
    mr = pd.create_mr().get(timeout=TIMEOUT)
    assert mr.register(buf, flags=flags).wait(timeout=TIMEOUT) == Status.SUCCESS
    return Region(mr, buf)


def unregistered_sge(buf: bytearray, offset: int, length: int, token: int = 0) -> ndk.Sge:
    """An SGE naming ``buf`` (never registered) by its process address, with ``token``: only
    meaningful with NDK_OP_FLAG_INLINE, where the token must be ignored (digest 1.7)."""
    base = ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))
    return ndk.Sge(base + offset, length, token)


@overload
def one(cq: ndk.Cq, ex: Literal[True] = True) -> ndk.ResultEx: ...
@overload
def one(cq: ndk.Cq, ex: Literal[False]) -> ndk.Result: ...
def one(cq: ndk.Cq, ex: bool = True) -> ndk.ResultEx | ndk.Result:
    """The single next completion of ``cq`` (within TIMEOUT); nothing else queued after it."""
    results: list[ndk.ResultEx | ndk.Result] = drain(cq, 1, ex=ex)
    (result,) = results
    return result


def expect_result(cq: ndk.Cq, status: Status, op: OpType, request_context: int,
                  qp_context: int | None = None) -> ndk.ResultEx:
    """The single next completion of ``cq`` has this status, type and request context (and
    QP context when given); ProviderErrorCode is 0 on success (digest 2.3)."""
    result = one(cq)
    assert result.status == status
    assert result.type == op
    assert result.request_context == request_context
    if qp_context is not None:
        assert result.qp_context == qp_context
    if status == Status.SUCCESS:
        assert result.provider_error_code == 0
    return result


def expect_refused(cq: ndk.Cq, status: Status, op: OpType, request_context: int,
                   source: str) -> ndk.ResultEx:
    """A request NDK states must fail (``source``: memory used without the access it was
    registered with, outside its region, through a token that is not valid): the single next
    completion of ``cq`` has this type and request context and is not SUCCESS -- stated, a
    failure even in a reference-choice scenario -- and then, the choice, this ``status``."""
    with stated(source):
        result = one(cq)
        assert (result.type, result.request_context) == (op, request_context)
        assert result.status != Status.SUCCESS, "the request succeeded"
    assert result.status == status
    return result


def expect_connection_failed(initiator: Side, peer: Side, initiator_region: Region,
                             peer_region: Region) -> None:
    """docs/semantics.md QP-ERROR: after an error completion the peer got a disconnect event
    and every later post on either QP returns SUCCESS and completes STATUS_CANCELLED."""
    assert peer.connector.wait_disconnect(timeout=TIMEOUT) is not None
    assert initiator.qp.send([initiator_region.sge(0, 8)], request_context=0xDEAD) == \
        Status.SUCCESS
    late = one(initiator.cq)
    assert (late.status, late.type, late.request_context) == \
        (Status.CANCELLED, OpType.SEND, 0xDEAD)
    assert peer.qp.receive([peer_region.sge(0, 8)], request_context=0xBEEF) == Status.SUCCESS
    late = one(peer.cq)
    assert (late.status, late.type, late.request_context) == \
        (Status.CANCELLED, OpType.RECEIVE, 0xBEEF)


# --- logical addresses (NdkBuildLAM) and fast registration -------------------------------


@dataclass
class Mapping:
    """A buffer mapped by NdkBuildLAM: its adapter pages (NDK_LOGICAL_ADDRESS_MAPPING
    AdapterPageArray) and the byte offset of the buffer in the first page (FBO)."""

    buf: bytearray
    pages: list[int]
    fbo: int
    lam: ndk.Lam

    def logical(self, offset: int) -> int:
        """The logical address of byte ``offset`` of the buffer (digest 2.4)."""
        at = self.fbo + offset
        return self.pages[at // PAGE] + at % PAGE


def build_lam(adapter: ndk.Adapter, size: int, fill: bytes | None = None) -> Mapping:
    """NdkBuildLAM over a new ``size``-byte buffer, in the adapter's process (must succeed,
    inline or pending)."""
    buf = new_buffer(adapter, size)
    if fill is not None:
        buf[:len(fill)] = fill
    lam = adapter.build_lam(buf).get(timeout=TIMEOUT)
    pages = list(lam.adapter_page_array)
    assert len(pages) == lam.adapter_page_count >= 1
    assert all(page % PAGE == 0 for page in pages)
    return Mapping(buf, pages, lam.fbo, lam)


# A fast-register base address: FBO + n * PAGE_SIZE, never zero (digest 1.7).
FR_BASE = 0x40000


@dataclass
class FastRegion:
    """A fast-register MR mapped by NdkFastRegister over ``mapping``, at ``base``."""

    mr: ndk.Mr
    mapping: Mapping
    base: int
    length: int

    @property
    def buf(self) -> bytearray:
        return self.mapping.buf

    @property
    def remote_token(self) -> int:
        return self.mr.remote_token

    @property
    def local_token(self) -> int:
        return self.mr.local_token

    def sge(self, offset: int, length: int) -> ndk.Sge:
        return ndk.Sge(self.base + offset, length, self.mr.local_token)


def fast_register_mr(pd: ndk.Pd, pages: int, remote_access: bool = True) -> ndk.Mr:
    """A fast-register MR on ``pd`` initialized for ``pages`` adapter pages."""
    mr = pd.create_mr(fast_register=True).get(timeout=TIMEOUT)
    assert mr.initialize_fast_register_mr(pages, remote_access=remote_access).wait(
        timeout=TIMEOUT) == Status.SUCCESS
    return mr


def most_pages(size: int) -> int:
    """The most adapter pages a ``size``-byte buffer spans (size >= 1): one more than its
    length in pages when it does not start on a page boundary."""
    return (size - 1) // PAGE + 2


def fast_register(endpoint: Side, size: int, flags: int, *, fill: bytes | None = None,
                  remote_access: bool = True, context: int = 0xF00,
                  pages: int | None = None) -> FastRegion:
    """NdkBuildLAM over ``size`` bytes, an MR initialized for its pages (or for ``pages``:
    an MR that is to map another buffer later needs ``most_pages(size)``, since where a new
    buffer starts in its page is the allocator's), and NdkFastRegister on ``endpoint``'s QP
    with ``flags``; the FAST_REGISTER completion must be SUCCESS."""
    mapping = build_lam(endpoint.adapter, size, fill)
    mr = fast_register_mr(endpoint.pd, pages or len(mapping.pages), remote_access)
    base = FR_BASE + mapping.fbo
    assert endpoint.qp.fast_register(mr, mapping.pages, mapping.fbo, size, base, flags=flags,
                                     request_context=context) == Status.SUCCESS
    expect_result(endpoint.cq, Status.SUCCESS, OpType.FAST_REGISTER, context)
    return FastRegion(mr, mapping, base, size)
