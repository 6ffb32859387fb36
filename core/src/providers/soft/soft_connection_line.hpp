// The cache line a connection's two ends write on every message in process: the connection's
// lock and, for each end, the head and count of its receive queue and the count of its
// initiator queue (RequestQueue::place_counts).  The inproc transport's transfer runs on the
// sender's thread and touches both QPs: a Send takes the lock, pops the peer's receive, and a
// post_receive takes the lock, pushes its own receive and looks whether the peer's initiator
// waits.  Each of those lines was last written by the other thread, and the loads after the
// lock's locked instruction wait for it, so each was one more line to fetch in turn; kept in
// the lock's own line they come with it (docs/performance.md, "Two threads").  The slots'
// storage stays in the queues: it changes only at growth, under the same lock.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>

namespace ndk::soft {

struct alignas(64) ConnectionLine {
    // The connection's lock (SoftQp::connection_mu): a QP's own until the connection is
    // established, then shared by both ends (SoftQp::share_connection_lock).
    std::mutex mu;
    // One per end of an established in-process connection; unused in a QP's own line (its
    // queues keep their counts until the connection shares a line).
    struct End {
        uint32_t receive_head = 0, receive_count = 0;
        uint32_t initiator_count = 0;
    };
    std::array<End, 2> ends{};
};
static_assert(sizeof(ConnectionLine) == 64, "the lock and both ends' counts are one cache line");

} // namespace ndk::soft
