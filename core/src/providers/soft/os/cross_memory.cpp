#include "providers/soft/os/cross_memory.hpp"

#include <sys/prctl.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <fstream>

namespace ndk::soft::os {

namespace {

#ifdef IOV_MAX
constexpr std::size_t kBatch = IOV_MAX;
#else
constexpr std::size_t kBatch = 1024; // Linux's UIO_MAXIOV
#endif

using VmCall = ssize_t (*)(pid_t, const iovec *, unsigned long, const iovec *, unsigned long,
                           unsigned long);

// A position in a vector list: the element and the offset into it.
class Cursor {
public:
    explicit Cursor(std::span<const iovec> list) : list_(list) { skip_empty(); }

    bool at_end() const { return index_ == list_.size(); }

    // Up to kBatch vectors from here covering at most `limit` bytes; returns the bytes.
    std::size_t fill(iovec *out, std::size_t &count, std::size_t limit) const
    {
        std::size_t total = 0;
        count = 0;
        for (std::size_t i = index_; i < list_.size() && count < kBatch && total < limit; ++i) {
            const std::size_t skip = i == index_ ? offset_ : 0;
            const std::size_t length = std::min(list_[i].iov_len - skip, limit - total);
            if (length == 0)
                continue;
            out[count++] = {static_cast<char *>(list_[i].iov_base) + skip, length};
            total += length;
        }
        return total;
    }

    void advance(std::size_t bytes)
    {
        while (bytes > 0) {
            const std::size_t step = std::min(bytes, list_[index_].iov_len - offset_);
            offset_ += step;
            bytes -= step;
            skip_empty();
        }
    }

private:
    void skip_empty()
    {
        while (index_ < list_.size() && offset_ == list_[index_].iov_len) {
            ++index_;
            offset_ = 0;
        }
    }

    std::span<const iovec> list_;
    std::size_t index_ = 0;
    std::size_t offset_ = 0;
};

CopyResult transfer(VmCall call, pid_t pid, std::span<const iovec> local,
                    std::span<const iovec> remote)
{
    Cursor here(local);
    Cursor there(remote);
    CopyResult result;
    // Both batches must cover the same bytes: the shorter one decides how far this call goes,
    // and the longer one is cut there (its rest starts the next batch).
    // On the stack (32 KiB): no allocation per copy, and no per-thread storage in a library
    // that may be dlopen'ed.
    iovec local_batch[kBatch];
    iovec remote_batch[kBatch];
    // One call never asks for more than SSIZE_MAX bytes (EINVAL otherwise).
    constexpr std::size_t kMaxCall = SSIZE_MAX;
    while (!here.at_end() && !there.at_end()) {
        std::size_t local_count = 0;
        std::size_t remote_count = 0;
        std::size_t want = here.fill(local_batch, local_count, kMaxCall);
        want = there.fill(remote_batch, remote_count, want);
        here.fill(local_batch, local_count, want);
        const ssize_t copied = call(pid, local_batch, local_count, remote_batch, remote_count, 0);
        if (copied < 0) {
            if (errno == EINTR)
                continue;
            result.os_error = errno;
            result.status = copy_status_from_errno(errno);
            return result;
        }
        if (copied == 0) {
            // No progress with bytes left: the first byte itself is unreachable.
            result.os_error = EFAULT;
            result.status = CopyStatus::bad_address;
            return result;
        }
        // A short count means the kernel met a fault; the next call starts at that byte and
        // reports it (or copies on, if the page has appeared meanwhile).
        here.advance(static_cast<std::size_t>(copied));
        there.advance(static_cast<std::size_t>(copied));
        result.bytes += static_cast<std::size_t>(copied);
    }
    return result;
}

} // namespace

namespace {

// One table for both directions of the mapping, so a status cannot get a name and lose its
// errno (or the reverse).
struct StatusRow {
    CopyStatus status;
    int error;
    const char *name;
};
constexpr StatusRow kStatuses[] = {
    {CopyStatus::ok, 0, "ok"},
    {CopyStatus::peer_gone, ESRCH, "peer_gone"},
    {CopyStatus::not_permitted, EPERM, "not_permitted"},
    {CopyStatus::bad_address, EFAULT, "bad_address"},
    {CopyStatus::no_memory, ENOMEM, "no_memory"},
    {CopyStatus::invalid, EINVAL, "invalid"},
};

} // namespace

CopyStatus copy_status_from_errno(int error)
{
    for (const StatusRow &row : kStatuses)
        if (row.error == error)
            return row.status;
    return CopyStatus::other;
}

const char *to_string(CopyStatus status)
{
    for (const StatusRow &row : kStatuses)
        if (row.status == status)
            return row.name;
    return "other";
}

CopyResult read_from(pid_t pid, std::span<const iovec> local, std::span<const iovec> remote)
{
    return transfer(&::process_vm_readv, pid, local, remote);
}

CopyResult write_to(pid_t pid, std::span<const iovec> local, std::span<const iovec> remote)
{
    return transfer(&::process_vm_writev, pid, local, remote);
}

PtracePolicy ptrace_policy()
{
    std::ifstream file("/proc/sys/kernel/yama/ptrace_scope");
    int scope = 0;
    if (!(file >> scope))
        return PtracePolicy::classic; // no Yama: the classic same-uid rule
    constexpr PtracePolicy kByScope[] = {PtracePolicy::classic, PtracePolicy::descendants,
                                         PtracePolicy::admin_only};
    return scope >= 0 && scope < 3 ? kByScope[scope] : PtracePolicy::none;
}

bool allow_peer_access(pid_t peer)
{
    return ::prctl(PR_SET_PTRACER, static_cast<unsigned long>(peer), 0, 0, 0) == 0;
}

} // namespace ndk::soft::os
