// Cutting a message into DDP segments that fit the connection's MULPDU (RFC 5041 section 6),
// and the receive side's checks that the segments of each message arrive in order.
#pragma once

#include "providers/soft/iwarp/ddp_rdmap.hpp"

#include <array>
#include <cstddef>
#include <cstdint>

namespace ndk::soft::iwarp {

// One segment's share of the message: its header and the payload bytes [offset, offset+size)
// of the message (for a Read Request or Terminate, of its 28-byte or Terminate body).
struct SegmentPiece {
    SegmentHeader header;
    std::size_t offset = 0;
    std::size_t size = 0;
};

// Walks a message of `length` bytes in segments whose ULPDU (header + payload) is at most
// `max_ulpdu` bytes.  `message` is the first segment's header: for tagged messages its
// tagged_offset is where the message starts, for untagged ones its msn the message's and its
// message_offset 0.  Every segment but the last has L clear; a zero-length message is one
// segment.  Throws std::invalid_argument when the MULPDU leaves no room for payload, when a
// Read Request or Terminate would need more than one segment, or when the offsets would wrap.
class Segmenter {
public:
    Segmenter(const SegmentHeader &message, std::size_t length, std::size_t max_ulpdu);

    bool done() const { return done_; }
    SegmentPiece next();

private:
    SegmentHeader message_;
    std::size_t length_;
    std::size_t capacity_; // payload bytes per segment
    std::size_t offset_ = 0;
    bool done_ = false;
};

enum class DdpSequenceError {
    none,
    invalid_queue,      // QN 3 and up (DDP 1/2/1)
    msn_out_of_order,   // not the queue's next message (DDP 1/2/3)
    mo_out_of_order,    // a gap or overlap within the message (DDP 1/2/4)
    message_too_long,   // MO + payload past 2^32 (DDP 1/2/5)
    stag_changed,       // a tagged message's next segment names another STag (DDP 1/1/0)
    offset_out_of_order // a tagged segment not where the previous one ended (DDP 1/1/1)
};

struct DdpSequenceStep {
    DdpSequenceError error = DdpSequenceError::none;
    bool message_complete = false; // this segment ended its message (L set)
};

// Over MPA on TCP, segments arrive in the order they were sent, so a receiver can demand
// that each untagged queue's messages come in MSN order (from 1) with their segments in MO
// order, and that a tagged message's segments follow one another.  RDMA Write and Read
// Response messages are tracked apart, since a peer may interleave a Read Response with its
// own Writes; two messages of the same kind may not interleave.  A tagged message's first
// segment may start anywhere (the STag's bounds are the memory layer's check).
class DdpSequenceCheck {
public:
    DdpSequenceStep accept(const SegmentHeader &header, std::size_t payload_size);

private:
    struct UntaggedQueue {
        std::uint32_t next_msn = 1;
        std::uint32_t next_offset = 0;
    };
    struct TaggedMessage {
        bool open = false;
        std::uint32_t stag = 0;
        std::uint64_t next_offset = 0;
    };
    DdpSequenceStep accept_untagged(const SegmentHeader &header, std::size_t payload_size);
    DdpSequenceStep accept_tagged(const SegmentHeader &header, std::size_t payload_size);

    std::array<UntaggedQueue, kQueueCount> queues_{};
    TaggedMessage write_;
    TaggedMessage read_response_;
};

} // namespace ndk::soft::iwarp
