#include "providers/soft/tcp/tcp_terminate.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace ndk::soft::tcp {

using iwarp::TerminateReason;

namespace {

// The T bit of a segment's first byte (RFC 5041 5.1): its header is 14 bytes if set, else 18.
bool tagged_ulpdu(std::span<const std::byte> ulpdu)
{
    return !ulpdu.empty() && (std::to_integer<unsigned>(ulpdu[0]) & 0x80) != 0;
}

} // namespace

TerminateReason terminate_reason_for(iwarp::FpduStatus status)
{
    switch (status) {
    case iwarp::FpduStatus::crc_mismatch:
        return TerminateReason::mpa_crc_error;
    case iwarp::FpduStatus::bad_length:
    case iwarp::FpduStatus::exceeds_mulpdu:
        // Without markers a wrong length loses the stream's framing for good (RFC 5044 4.1):
        // the MPA layer can no longer deliver, which the LLP's "stream lost" code says.
        return TerminateReason::mpa_stream_lost;
    case iwarp::FpduStatus::complete:
    case iwarp::FpduStatus::need_more:
        break;
    }
    return TerminateReason::mpa_local_catastrophic;
}

TerminateReason terminate_reason_for(iwarp::DdpParseError error, std::span<const std::byte> ulpdu)
{
    const bool tagged = tagged_ulpdu(ulpdu);
    switch (error) {
    case iwarp::DdpParseError::bad_ddp_version:
        return tagged ? TerminateReason::ddp_tagged_invalid_version
                      : TerminateReason::ddp_untagged_invalid_version;
    case iwarp::DdpParseError::bad_rdmap_version:
        return TerminateReason::rdmap_invalid_version;
    case iwarp::DdpParseError::bad_opcode:
    case iwarp::DdpParseError::wrong_buffer_model:
    case iwarp::DdpParseError::not_single_segment:
        return TerminateReason::rdmap_unexpected_opcode;
    case iwarp::DdpParseError::wrong_queue:
        return TerminateReason::ddp_untagged_invalid_qn;
    case iwarp::DdpParseError::offset_wrap:
        // A tagged segment's own offset (DDP 1/1/3), or a Read Request's ranges (RDMAP 0/1/4).
        return tagged ? TerminateReason::ddp_tagged_to_wrap : TerminateReason::rdmap_to_wrap;
    case iwarp::DdpParseError::truncated:
        return TerminateReason::ddp_local_catastrophic;
    case iwarp::DdpParseError::read_request_size:
    case iwarp::DdpParseError::terminate_size:
    case iwarp::DdpParseError::terminate_layer:
    case iwarp::DdpParseError::none:
        break;
    }
    return TerminateReason::rdmap_operation_unspecified;
}

TerminateReason terminate_reason_for(iwarp::DdpSequenceError error)
{
    switch (error) {
    case iwarp::DdpSequenceError::invalid_queue:
        return TerminateReason::ddp_untagged_invalid_qn;
    case iwarp::DdpSequenceError::msn_out_of_order:
        return TerminateReason::ddp_untagged_msn_range;
    case iwarp::DdpSequenceError::mo_out_of_order:
        return TerminateReason::ddp_untagged_invalid_mo;
    case iwarp::DdpSequenceError::message_too_long:
        return TerminateReason::ddp_untagged_message_too_long;
    case iwarp::DdpSequenceError::stag_changed:
        return TerminateReason::ddp_tagged_invalid_stag;
    case iwarp::DdpSequenceError::offset_out_of_order:
        return TerminateReason::ddp_tagged_base_or_bounds;
    case iwarp::DdpSequenceError::none:
        break;
    }
    return TerminateReason::ddp_local_catastrophic;
}

std::vector<std::byte> terminate_body(TerminateReason reason, std::span<const std::byte> ulpdu)
{
    const iwarp::TerminateReasonEntry *entry = iwarp::terminate_reason_entry(reason);
    iwarp::TerminateMessage message;
    if (entry != nullptr) {
        message.layer = entry->layer;
        message.etype = entry->etype;
        message.code = static_cast<std::uint8_t>(std::max<std::int16_t>(entry->code, 0));
    }
    // The header of the segment in error, when it is all there: its size comes from its T bit.
    if (!ulpdu.empty()) {
        const std::size_t size =
            tagged_ulpdu(ulpdu) ? iwarp::kTaggedHeaderSize : iwarp::kUntaggedHeaderSize;
        if (ulpdu.size() >= size && ulpdu.size() <= std::numeric_limits<std::uint16_t>::max()) {
            message.ddp_segment_length = static_cast<std::uint16_t>(ulpdu.size());
            message.ddp_header = ulpdu.first(size);
        }
    }
    return iwarp::encode_terminate(message);
}

} // namespace ndk::soft::tcp

namespace ndk::soft::tcp {

std::vector<std::byte> first_terminate_fpdu(iwarp::TerminateReason reason, bool crc,
                                            std::span<const std::byte> ulpdu_in_error)
{
    iwarp::SegmentHeader header;
    header.opcode = iwarp::RdmapOpcode::terminate;
    header.queue = iwarp::kQueueTerminate;
    header.msn = 1;
    const iwarp::HeaderBytes header_bytes = iwarp::encode_segment_header(header);
    std::vector<std::byte> ulpdu(header_bytes.span().begin(), header_bytes.span().end());
    const std::vector<std::byte> body = terminate_body(reason, ulpdu_in_error);
    ulpdu.insert(ulpdu.end(), body.begin(), body.end());
    return iwarp::encode_fpdu(ulpdu, crc);
}

} // namespace ndk::soft::tcp
