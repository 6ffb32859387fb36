#include "providers/soft/iwarp/ddp_segmenter.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace ndk::soft::iwarp {

Segmenter::Segmenter(const SegmentHeader &message, std::size_t length, std::size_t max_ulpdu)
    : message_(message), length_(length)
{
    const std::size_t header = header_size(message.opcode);
    if (max_ulpdu <= header)
        throw std::invalid_argument("MULPDU leaves no room for a DDP segment's payload");
    capacity_ = max_ulpdu - header;
    const bool single = message.opcode == RdmapOpcode::read_request ||
                        message.opcode == RdmapOpcode::terminate;
    if (single && length > capacity_)
        throw std::invalid_argument("a Read Request or Terminate must fit one DDP segment");
    if (is_tagged(message.opcode)) {
        if (length > std::numeric_limits<std::uint64_t>::max() - message.tagged_offset)
            throw std::invalid_argument("tagged message wraps its offset");
    } else if (length > std::numeric_limits<std::uint32_t>::max()) {
        throw std::invalid_argument("untagged message above 4 GiB (MO is 32 bits)");
    }
}

SegmentPiece Segmenter::next()
{
    if (done_)
        throw std::logic_error("Segmenter::next after the last segment");
    SegmentPiece piece;
    piece.header = message_;
    piece.offset = offset_;
    piece.size = std::min(capacity_, length_ - offset_);
    if (is_tagged(message_.opcode))
        piece.header.tagged_offset = message_.tagged_offset + offset_;
    else
        piece.header.message_offset = static_cast<std::uint32_t>(offset_);
    offset_ += piece.size;
    done_ = offset_ == length_;
    piece.header.last = done_;
    return piece;
}

DdpSequenceStep DdpSequenceCheck::accept(const SegmentHeader &header, std::size_t payload_size)
{
    return is_tagged(header.opcode) ? accept_tagged(header, payload_size)
                                    : accept_untagged(header, payload_size);
}

DdpSequenceStep DdpSequenceCheck::accept_untagged(const SegmentHeader &header,
                                                  std::size_t payload_size)
{
    if (header.queue >= kQueueCount)
        return {DdpSequenceError::invalid_queue, false};
    UntaggedQueue &queue = queues_[header.queue];
    if (header.msn != queue.next_msn)
        return {DdpSequenceError::msn_out_of_order, false};
    if (header.message_offset != queue.next_offset)
        return {DdpSequenceError::mo_out_of_order, false};
    if (payload_size > std::numeric_limits<std::uint32_t>::max() - queue.next_offset)
        return {DdpSequenceError::message_too_long, false};
    if (header.last) {
        ++queue.next_msn; // wraps from 2^32-1 to 0, as MSN arithmetic does (RFC 5041 5.3)
        queue.next_offset = 0;
        return {DdpSequenceError::none, true};
    }
    queue.next_offset += static_cast<std::uint32_t>(payload_size);
    return {};
}

DdpSequenceStep DdpSequenceCheck::accept_tagged(const SegmentHeader &header,
                                                std::size_t payload_size)
{
    TaggedMessage &message = header.opcode == RdmapOpcode::rdma_write ? write_ : read_response_;
    if (message.open) {
        if (header.stag != message.stag)
            return {DdpSequenceError::stag_changed, false};
        if (header.tagged_offset != message.next_offset)
            return {DdpSequenceError::offset_out_of_order, false};
    }
    if (payload_size > std::numeric_limits<std::uint64_t>::max() - header.tagged_offset)
        return {DdpSequenceError::offset_out_of_order, false};
    if (header.last) {
        message.open = false;
        return {DdpSequenceError::none, true};
    }
    message.open = true;
    message.stag = header.stag;
    message.next_offset = header.tagged_offset + payload_size;
    return {};
}

} // namespace ndk::soft::iwarp
