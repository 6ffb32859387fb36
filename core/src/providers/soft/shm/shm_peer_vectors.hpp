// The peer's memory a decoded payload names, as a vector list for cross_memory.hpp: the
// vectors in the slot, or a list too long for a slot pulled from the peer first
// (PayloadForm::vector_list, shm_messages.hpp).  Either way the lengths are checked to add up
// to the payload's total, so the copy that follows moves exactly what the sender announced.
#pragma once

#include "providers/soft/os/cross_memory.hpp"
#include "providers/soft/shm/shm_messages.hpp"

#include <sys/types.h>
#include <sys/uio.h>

#include <vector>

namespace ndk::soft::shm {

enum class PeerVectorsStatus {
    ok,
    malformed,   // the lengths do not add up to the total (or a length overflows)
    copy_failed, // pulling the list failed: see `copy`
};

struct PeerVectors {
    PeerVectorsStatus status = PeerVectorsStatus::ok;
    os::CopyResult copy; // of the list itself, for vector_list
};

// The vectors of `payload` (form vectors, shared_vectors or vector_list; inline has none) in `peer`'s address
// space, into `out` (replaced).
PeerVectors peer_vectors(pid_t peer, const Payload &payload, std::vector<iovec> &out);

} // namespace ndk::soft::shm
