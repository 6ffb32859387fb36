#include "soft_memory.hpp"

#include <cstring>

namespace ndk::soft {

size_t total_length(std::span<const Span> spans)
{
    size_t n = 0;
    for (const auto &s : spans)
        n += s.length;
    return n;
}

size_t copy_spans(std::span<const Span> dst, std::span<const Span> src)
{
    size_t copied = 0, di = 0, doff = 0;
    for (const auto &s : src) {
        size_t soff = 0;
        while (soff < s.length && di < dst.size()) {
            size_t n = std::min(s.length - soff, dst[di].length - doff);
            std::memmove(dst[di].host + doff, s.host + soff, n);
            soff += n;
            doff += n;
            copied += n;
            if (doff == dst[di].length) {
                ++di;
                doff = 0;
            }
        }
    }
    return copied;
}

ULONG fast_register_access(ULONG op_flags)
{
    ULONG access = 0;
    if (op_flags & NDK_OP_FLAG_ALLOW_LOCAL_WRITE)
        access |= NDK_MR_FLAG_ALLOW_LOCAL_WRITE;
    if (op_flags & NDK_OP_FLAG_ALLOW_REMOTE_READ)
        access |= NDK_MR_FLAG_ALLOW_REMOTE_READ;
    if ((op_flags & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == NDK_OP_FLAG_ALLOW_REMOTE_WRITE)
        access |= NDK_MR_FLAG_ALLOW_REMOTE_WRITE;
    if (op_flags & NDK_OP_FLAG_RDMA_READ_SINK)
        access |= NDK_MR_FLAG_RDMA_READ_SINK;
    return access;
}

namespace {

// Logical addresses (BuildLAM) to host memory, page by page.
bool map_logical(SoftAdapter &adapter, uint64_t logical, size_t length, Spans &out)
{
    auto &pages = adapter.lams().pages;
    while (length > 0) {
        uint64_t page = logical & ~uint64_t{NDK_PAGE_SIZE - 1};
        size_t offset = logical - page;
        auto it = pages.find(page);
        if (it == pages.end())
            return false;
        size_t n = std::min(length, NDK_PAGE_SIZE - offset);
        out.push_back({reinterpret_cast<unsigned char *>(it->second + offset), n});
        logical += n;
        length -= n;
    }
    return true;
}

bool mr_usable(const SoftMr &mr) { return mr.fast_register ? mr.mapped : mr.registered; }

// [address, address + length) of an MR's range to host memory.  The caller checked bounds.
bool map_mr(SoftAdapter &adapter, const SoftMr &mr, uintptr_t address, size_t length, Spans &out)
{
    if (length == 0)
        return true;
    if (!mr.fast_register) {
        // A normal registration's MDL virtual addresses are this process's own (ndkpi.h MDL).
        out.push_back({reinterpret_cast<unsigned char *>(address), length});
        return true;
    }
    size_t offset = mr.fbo + (address - mr.address);
    while (length > 0) {
        size_t index = offset / NDK_PAGE_SIZE;
        size_t in_page = offset % NDK_PAGE_SIZE;
        if (index >= mr.pages.size())
            return false;
        size_t n = std::min(length, NDK_PAGE_SIZE - in_page);
        if (!map_logical(adapter, mr.pages[index] + in_page, n, out))
            return false; // the LAM behind the registration was released
        offset += n;
        length -= n;
    }
    return true;
}

bool inside(uint64_t start, uint64_t length, uint64_t address, uint64_t size)
{
    return address >= start && size <= length && address - start <= length - size;
}

} // namespace

NTSTATUS resolve_local(SoftQp &qp, std::span<const NDK_SGE> sgl, LocalAccess access,
                       Spans &out)
{
    SoftAdapter &adapter = qp.adapter();
    for (const NDK_SGE &sge : sgl) {
        uint64_t address = reinterpret_cast<uintptr_t>(sge.VirtualAddress);
        if (sge.MemoryRegionToken == adapter.privileged_token()) {
            // A logical address from BuildLAM, on any PD (digest 2.4).
            if (!map_logical(adapter, sge.LogicalAddress.QuadPart, sge.Length, out))
                return STATUS_ACCESS_VIOLATION;
            continue;
        }
        auto *mr = static_cast<SoftMr *>(token_owner(adapter, sge.MemoryRegionToken, false));
        if (mr == nullptr || !mr_usable(*mr) || mr->pd != qp.pd)
            return STATUS_ACCESS_VIOLATION; // unknown, remote, invalidated, or another PD
        if (access != LocalAccess::Read && !(mr->flags & NDK_MR_FLAG_ALLOW_LOCAL_WRITE))
            return STATUS_ACCESS_VIOLATION;
        if (access == LocalAccess::ReadSink && !(mr->flags & NDK_MR_FLAG_RDMA_READ_SINK) &&
            !adapter.knobs().data_path().has_flag(NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED))
            return STATUS_ACCESS_VIOLATION; // digest 1.4: read sinks need RDMA_READ_SINK
        if (!inside(mr->address, mr->length, address, sge.Length))
            return STATUS_ACCESS_VIOLATION;
        if (!map_mr(adapter, *mr, address, sge.Length, out))
            return STATUS_ACCESS_VIOLATION;
    }
    return STATUS_SUCCESS;
}

NTSTATUS resolve_remote(SoftQp &qp, UINT32 token, UINT64 address, size_t length, bool write,
                        Spans &out)
{
    SoftAdapter &adapter = qp.adapter();
    SoftObject *owner = token_owner(adapter, token, true);
    if (owner == nullptr)
        return STATUS_ACCESS_VIOLATION; // unknown, local-only or invalidated token
    const SoftMr *mr = nullptr;
    if (owner->type() == NdkObjectTypeMw) {
        auto *mw = static_cast<SoftMw *>(owner);
        ULONG needed = write ? NDK_OP_FLAG_ALLOW_REMOTE_WRITE : NDK_OP_FLAG_ALLOW_REMOTE_READ;
        if (!mw->bound || mw->pd != qp.pd || (mw->flags & needed) != needed)
            return STATUS_ACCESS_VIOLATION;
        if (!inside(mw->address, mw->length, address, length))
            return STATUS_REMOTE_RESOURCES; // beyond the window (digest 1.7, NdkRead)
        mr = mw->mr;
    } else {
        mr = static_cast<SoftMr *>(owner);
        ULONG needed = write ? NDK_MR_FLAG_ALLOW_REMOTE_WRITE : NDK_MR_FLAG_ALLOW_REMOTE_READ;
        if (!mr_usable(*mr) || mr->pd != qp.pd || (mr->flags & needed) != needed)
            return STATUS_ACCESS_VIOLATION;
        if (!inside(mr->address, mr->length, address, length))
            return STATUS_REMOTE_RESOURCES;
    }
    if (mr == nullptr || !map_mr(adapter, *mr, address, length, out))
        return STATUS_ACCESS_VIOLATION;
    return STATUS_SUCCESS;
}

} // namespace ndk::soft
