// Memory access on the soft RNIC: how a token and an address become host memory, with every
// check of digest 1.4, 1.5, 1.7 and 2.4 (token validity and kind, PD, access flags, bounds,
// invalidation, the privileged token's logical addresses).  Lock held for all of it.
#pragma once

#include "soft_objects.hpp"
#include "soft_spans.hpp"

#include <span>
#include <vector>

namespace ndk::soft {


size_t total_length(std::span<const Span> spans);
// Copy min(total(dst), total(src)) bytes from src to dst; returns the count copied.
size_t copy_spans(std::span<const Span> dst, std::span<const Span> src);

enum class LocalAccess {
    Read,     // the source of a send or write
    Write,    // a receive buffer
    ReadSink, // the sink of an RDMA read (NDK_MR_FLAG_RDMA_READ_SINK unless the adapter waives it)
};

// Resolve a local SGL posted on `qp`.  STATUS_SUCCESS, or STATUS_ACCESS_VIOLATION for an
// unknown, remote or invalidated token, another PD, missing access or an address outside the
// registration.
NTSTATUS resolve_local(SoftQp &qp, std::span<const NDK_SGE> sgl, LocalAccess access,
                       Spans &out);

// Resolve [address, address + length) named by a remote token at the target QP `qp`.
// STATUS_ACCESS_VIOLATION for a token that is not a valid remote token of qp's PD or lacks
// the access; STATUS_REMOTE_RESOURCES for a range outside the region or window.
NTSTATUS resolve_remote(SoftQp &qp, UINT32 token, UINT64 address, size_t length, bool write,
                        Spans &out);

// The MR or MW a token names on this adapter, or nullptr.
inline SoftObject *token_owner(SoftAdapter &adapter, UINT32 token, bool remote)
{
    return adapter.tokens().owner(token, remote);
}

// An Invalidate (or a SendAndInvalidate, or the window's close) unbinds a memory window: its
// remote token stops working and the MR may be closed again.
void unbind_window(SoftMw &mw);

// NDK_OP_FLAG_* of a FastRegister as NDK_MR_FLAG_* access bits.
ULONG fast_register_access(ULONG op_flags);

} // namespace ndk::soft
