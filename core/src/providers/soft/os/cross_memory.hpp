// Copies between this process's memory and a peer's, by the kernel, in one step: Linux
// cross-memory attach (process_vm_readv / process_vm_writev), what libfabric's shm provider
// calls CMA.  A large send, RDMA write or read moves straight from the source buffer into
// the target buffer without a bounce through shared memory.
//
// Permission: the kernel allows it only where ptrace would be allowed (PTRACE_MODE_ATTACH):
// same uid and a dumpable target, and with the Yama module loaded its ptrace_scope:
//   0 (or no Yama): any process of the same uid;  1: only descendants, or a process that
//   named us with prctl(PR_SET_PTRACER) (allow_peer_access());  2: only with
//   CAP_SYS_PTRACE;  3: never.
// ptrace_policy() reads the setting; a copy refused for it fails with `not_permitted`, and
// the transport then moves the bytes through the shared segment instead (docs/transport.md).
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <span>

namespace ndk::soft::os {

enum class CopyStatus {
    ok,
    peer_gone,     // ESRCH: the process exited (or never was)
    not_permitted, // EPERM: ptrace rules forbid it (see above)
    bad_address,   // EFAULT: a range is not mapped (or not writable) on one of the sides
    no_memory,     // ENOMEM: the kernel could not pin the pages or copy the vectors
    invalid,       // EINVAL: a length overflowing ssize_t, or a flag the kernel refuses
    other,
};

CopyStatus copy_status_from_errno(int error);
const char *to_string(CopyStatus status);

struct CopyResult {
    std::size_t bytes = 0; // copied before the status was met (all of them when ok)
    CopyStatus status = CopyStatus::ok;
    int os_error = 0; // the errno behind a failure, for messages
};

// Copy from `remote` (addresses in `pid`) into `local`, or from `local` into `remote`.  The
// two lists may cut the bytes differently; the copy stops at the shorter one.  Any number of
// vectors: they go to the kernel IOV_MAX at a time.  A partial copy (the kernel stops at the
// first unmapped page) resumes where it stopped, so the result is either everything or the
// exact count before the failing byte with the failure's status.
CopyResult read_from(pid_t pid, std::span<const iovec> local, std::span<const iovec> remote);
CopyResult write_to(pid_t pid, std::span<const iovec> local, std::span<const iovec> remote);

enum class PtracePolicy {
    classic,         // no Yama, or ptrace_scope 0: same uid suffices
    descendants,     // 1: a parent, or a process allowed by prctl(PR_SET_PTRACER)
    admin_only,      // 2: CAP_SYS_PTRACE needed
    none,            // 3: cross-memory copies are impossible
};
PtracePolicy ptrace_policy();

// Under ptrace_scope 1, let `peer` copy from and into this process (prctl(PR_SET_PTRACER)).
// One process at a time per caller (the kernel keeps one).  False where it does not apply
// (no Yama: nothing is needed) or was refused.
bool allow_peer_access(pid_t peer);

} // namespace ndk::soft::os
