// DDP (RFC 5041) and RDMAP (RFC 5040) headers: the ULPDU an FPDU carries (mpa_fpdu.hpp).
// Byte 0 is DDP's control, byte 1 RDMAP's (DDP's RsvdULP), then the buffer model's fields,
// all big-endian (the same layout as struct iwarp_ctrl_tagged/untagged in Linux siw's
// iwarp.h):
//
//  byte 0: |T|L| Rsvd  |DV |  T: tagged buffer model, L: last segment of the message,
//                             DV: DDP version (1)                        (RFC 5041 5.1)
//  byte 1: |RV |Rsv|Opcode |  RV: RDMAP version (1), Opcode: RdmapOpcode  (RFC 5040 4.3)
//
//  tagged (14 bytes, RFC 5041 5.2):   STag (32) | Tagged Offset (64)
//  untagged (18 bytes, RFC 5041 5.3): RsvdULP (32) | QN (32) | MSN (32) | MO (32)
//     RsvdULP is the Invalidate STag of a Send with Invalidate (RFC 5040 4.4), else 0.
//
// After the header, by opcode:
//  - RDMA Read Request (RFC 5040 4.4): 28 bytes: Data Sink STag (32), Data Sink Tagged
//    Offset (64), RDMA Read Message Size (32), Data Source STag (32), Data Source TO (64);
//  - Terminate (RFC 5040 4.8): Layer (4) | EType (4) | Error Code (8) | M D R | Rsvd (13),
//    then, if M or D, the DDP Segment Length (16) of the segment in error, if D its DDP
//    header (14 or 18 bytes, by its T bit), if R the 28 bytes of its Read Request;
//  - the others: the message's payload.
//
// Parse functions take the ULPDU and check everything a receiver can check without its
// memory registrations: versions, opcode, buffer model and queue for the opcode, sizes,
// single-segment messages, offset wrap.  Reserved bits are ignored, as the RFCs say.
#pragma once

#include "providers/soft/iwarp/parse_result.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ndk::soft::iwarp {

enum class RdmapOpcode : std::uint8_t {
    rdma_write = 0,
    read_request = 1,
    read_response = 2,
    send = 3,
    send_invalidate = 4,
    send_solicited = 5,
    send_solicited_invalidate = 6,
    terminate = 7,
};

// Untagged queues (RFC 5040 section 5.1).
inline constexpr std::uint32_t kQueueSend = 0;
inline constexpr std::uint32_t kQueueReadRequest = 1;
inline constexpr std::uint32_t kQueueTerminate = 2;
inline constexpr std::uint32_t kQueueCount = 3;

inline constexpr std::uint8_t kDdpVersion = 1;
inline constexpr std::uint8_t kRdmapVersion = 1;
inline constexpr std::size_t kTaggedHeaderSize = 14;
inline constexpr std::size_t kUntaggedHeaderSize = 18;
inline constexpr std::size_t kReadRequestSize = 28;
inline constexpr std::size_t kTerminateControlSize = 4;
inline constexpr std::size_t kTerminateSegmentLengthSize = 2;

constexpr bool is_tagged(RdmapOpcode op)
{
    return op == RdmapOpcode::rdma_write || op == RdmapOpcode::read_response;
}

constexpr bool carries_invalidate(RdmapOpcode op)
{
    return op == RdmapOpcode::send_invalidate || op == RdmapOpcode::send_solicited_invalidate;
}

constexpr std::uint32_t queue_of(RdmapOpcode op)
{
    return op == RdmapOpcode::read_request ? kQueueReadRequest
           : op == RdmapOpcode::terminate  ? kQueueTerminate
                                           : kQueueSend;
}

constexpr std::size_t header_size(RdmapOpcode op)
{
    return is_tagged(op) ? kTaggedHeaderSize : kUntaggedHeaderSize;
}

// One DDP segment's header.  Tagged fields are used for tagged opcodes, untagged ones for
// the others.
struct SegmentHeader {
    RdmapOpcode opcode = RdmapOpcode::send;
    bool last = true;
    std::uint32_t stag = 0;          // tagged: the data sink's STag
    std::uint64_t tagged_offset = 0; // tagged: where this segment's payload goes
    std::uint32_t invalidate_stag = 0; // untagged, Send with Invalidate variants only
    std::uint32_t queue = kQueueSend;  // untagged: QN
    std::uint32_t msn = 1;             // untagged: message sequence number, from 1 per queue
    std::uint32_t message_offset = 0;  // untagged: MO, this segment's offset in the message
    bool operator==(const SegmentHeader &) const = default;
};

struct ReadRequest {
    std::uint32_t sink_stag = 0;
    std::uint64_t sink_offset = 0;
    std::uint32_t size = 0;
    std::uint32_t source_stag = 0;
    std::uint64_t source_offset = 0;
    bool operator==(const ReadRequest &) const = default;
};

// A Terminate's fields.  The copied headers are views (into the parsed ULPDU, or into what
// the encoder's caller owns).  Layer, type and code are the raw fields; terminate_reasons.hpp
// names them.
struct TerminateMessage {
    std::uint8_t layer = 0; // 4 bits
    std::uint8_t etype = 0; // 4 bits
    std::uint8_t code = 0;
    std::optional<std::uint16_t> ddp_segment_length; // M
    std::span<const std::byte> ddp_header;           // D: 14 or 18 bytes
    std::span<const std::byte> read_request;         // R: kReadRequestSize bytes
};

struct ParsedSegment {
    SegmentHeader header;
    std::span<const std::byte> payload; // the message data in this segment (Send, Write,
                                        // Read Response); empty for Read Request, Terminate
    std::optional<ReadRequest> read_request;
    std::optional<TerminateMessage> terminate;
};

enum class DdpParseError {
    none,
    truncated,           // shorter than the header of its buffer model
    bad_ddp_version,     // DV not 1 (DDP error 1/1/4 or 1/2/6)
    bad_rdmap_version,   // RV not 1 (RDMAP error 0/2/5)
    bad_opcode,          // opcode 8..15 (RDMAP error 0/2/6)
    wrong_buffer_model,  // T does not match the opcode (RDMAP 0/2/6)
    wrong_queue,         // QN not the opcode's queue (DDP 1/2/1)
    not_single_segment,  // Read Request or Terminate with L clear or MO not 0
    read_request_size,   // a Read Request's body is not 28 bytes
    offset_wrap,         // tagged offset + length passes 2^64 (DDP 1/1/3, RDMAP 0/1/4)
    terminate_size,      // a Terminate's body does not match its M, D, R bits
    terminate_layer,     // a Terminate layer other than RDMAP, DDP, LLP
};

ParseResult<ParsedSegment, DdpParseError> parse_segment(std::span<const std::byte> ulpdu);

// A header in a fixed buffer, for a sender that writes it next to the payload in place.
struct HeaderBytes {
    std::array<std::byte, kUntaggedHeaderSize> bytes{};
    std::size_t size = 0;
    std::span<const std::byte> span() const { return {bytes.data(), size}; }
};

HeaderBytes encode_segment_header(const SegmentHeader &header);
std::array<std::byte, kReadRequestSize> encode_read_request(const ReadRequest &request);
// Throws std::invalid_argument for fields that do not fit or copied headers of a wrong size.
std::vector<std::byte> encode_terminate(const TerminateMessage &terminate);
// The whole ULPDU of a segment (its body from read_request/terminate/payload): tests, fuzzer.
std::vector<std::byte> encode_segment(const ParsedSegment &segment);

} // namespace ndk::soft::iwarp
