// The initiator's bytes in another process, as the target side sees them (soft_target.hpp):
// a Send's or Write's source, pulled with process_vm_readv, or a Read's sink, pushed with
// process_vm_writev (cross_memory.hpp).  What the shm transport hands to arrive_send,
// arrive_write and arrive_read (docs/transport.md, "The shm transport in the soft provider").
#pragma once

#include "providers/soft/os/cross_memory.hpp"
#include "providers/soft/soft_target.hpp"

#include <sys/types.h>
#include <sys/uio.h>

#include <span>
#include <vector>

namespace ndk::soft {

class CrossMemoryPayload final : public PayloadSource, public PayloadSink {
public:
    // `vectors`: the initiator's memory in `peer`'s address space (checked to add up to the
    // payload's length by the transport, shm_peer_vectors.hpp), kept by reference.
    CrossMemoryPayload(pid_t peer, std::span<const iovec> vectors);

    size_t length() const override { return length_; }
    // All length() bytes or false; last_copy() then says why (the peer gone, a range it
    // unmapped, ptrace rules).
    bool copy_to(const Spans &sink) override;
    bool copy_from(const Spans &source) override;
    const os::CopyResult &last_copy() const { return last_; }

private:
    // `spans` as local vectors covering at most length() bytes.
    const std::vector<iovec> &local_vectors(const Spans &spans);

    pid_t peer_;
    std::span<const iovec> vectors_;
    size_t length_ = 0;
    std::vector<iovec> local_; // scratch, reused by each copy
    os::CopyResult last_;
};

} // namespace ndk::soft
