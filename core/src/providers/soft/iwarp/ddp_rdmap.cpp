#include "providers/soft/iwarp/ddp_rdmap.hpp"

#include "providers/soft/iwarp/wire_bytes.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace ndk::soft::iwarp {

namespace {

constexpr std::uint8_t kDdpTagged = 0x80;
constexpr std::uint8_t kDdpLast = 0x40;
constexpr std::uint8_t kDdpVersionMask = 0x03;
constexpr std::uint8_t kRdmapVersionShift = 6;
constexpr std::uint8_t kRdmapOpcodeMask = 0x0f;
constexpr std::uint8_t kOpcodeCount = 8;

// The Terminate control word's flag bits (its low 16 bits: M, D, R, then reserved).
constexpr std::uint16_t kTerminateM = 0x8000;
constexpr std::uint16_t kTerminateD = 0x4000;
constexpr std::uint16_t kTerminateR = 0x2000;
constexpr std::uint8_t kTerminateLayerCount = 3;

std::uint8_t byte_at(std::span<const std::byte> bytes, std::size_t i)
{
    return std::to_integer<std::uint8_t>(bytes[i]);
}

// The Terminate body after its control word (the checks RFC 5040 4.8's layout allows).
ParseResult<TerminateMessage, DdpParseError> parse_terminate(std::span<const std::byte> body)
{
    if (body.size() < kTerminateControlSize)
        return DdpParseError::terminate_size;
    TerminateMessage term;
    term.layer = byte_at(body, 0) >> 4;
    term.etype = byte_at(body, 0) & 0x0f;
    term.code = byte_at(body, 1);
    if (term.layer >= kTerminateLayerCount)
        return DdpParseError::terminate_layer;
    const std::uint16_t flags = wire::load_be16(body.data() + 2);
    auto rest = body.subspan(kTerminateControlSize);

    if ((flags & (kTerminateM | kTerminateD)) != 0) {
        if (rest.size() < kTerminateSegmentLengthSize)
            return DdpParseError::terminate_size;
        if ((flags & kTerminateM) != 0)
            term.ddp_segment_length = wire::load_be16(rest.data());
        rest = rest.subspan(kTerminateSegmentLengthSize);
    }
    if ((flags & kTerminateD) != 0) {
        if (rest.empty())
            return DdpParseError::terminate_size;
        const std::size_t size =
            (byte_at(rest, 0) & kDdpTagged) != 0 ? kTaggedHeaderSize : kUntaggedHeaderSize;
        if (rest.size() < size)
            return DdpParseError::terminate_size;
        term.ddp_header = rest.first(size);
        rest = rest.subspan(size);
    }
    if ((flags & kTerminateR) != 0) {
        if (rest.size() < kReadRequestSize)
            return DdpParseError::terminate_size;
        term.read_request = rest.first(kReadRequestSize);
        rest = rest.subspan(kReadRequestSize);
    }
    if (!rest.empty())
        return DdpParseError::terminate_size; // more than its bits announce
    return term;
}

ReadRequest parse_read_request(const std::byte *p)
{
    ReadRequest request;
    request.sink_stag = wire::load_be32(p);
    request.sink_offset = wire::load_be64(p + 4);
    request.size = wire::load_be32(p + 12);
    request.source_stag = wire::load_be32(p + 16);
    request.source_offset = wire::load_be64(p + 20);
    return request;
}

bool wraps(std::uint64_t offset, std::uint64_t length)
{
    return length > std::numeric_limits<std::uint64_t>::max() - offset;
}

} // namespace

ParseResult<ParsedSegment, DdpParseError> parse_segment(std::span<const std::byte> ulpdu)
{
    // The two control bytes decide the rest, so they are checked before any length.
    if (ulpdu.size() < 2)
        return DdpParseError::truncated;
    const std::uint8_t ddp = byte_at(ulpdu, 0);
    const std::uint8_t rdmap = byte_at(ulpdu, 1);
    if ((ddp & kDdpVersionMask) != kDdpVersion)
        return DdpParseError::bad_ddp_version;
    if ((rdmap >> kRdmapVersionShift) != kRdmapVersion)
        return DdpParseError::bad_rdmap_version;
    if ((rdmap & kRdmapOpcodeMask) >= kOpcodeCount)
        return DdpParseError::bad_opcode;

    ParsedSegment segment;
    SegmentHeader &header = segment.header;
    header.opcode = static_cast<RdmapOpcode>(rdmap & kRdmapOpcodeMask);
    header.last = (ddp & kDdpLast) != 0;
    const bool tagged = (ddp & kDdpTagged) != 0;
    if (tagged != is_tagged(header.opcode))
        return DdpParseError::wrong_buffer_model;
    if (ulpdu.size() < header_size(header.opcode))
        return DdpParseError::truncated;
    const std::byte *p = ulpdu.data();
    const auto body = ulpdu.subspan(header_size(header.opcode));

    if (tagged) {
        header.stag = wire::load_be32(p + 2);
        header.tagged_offset = wire::load_be64(p + 6);
        header.queue = 0;
        header.msn = 0;
        if (wraps(header.tagged_offset, body.size()))
            return DdpParseError::offset_wrap;
        segment.payload = body;
        return segment;
    }

    header.invalidate_stag = carries_invalidate(header.opcode) ? wire::load_be32(p + 2) : 0;
    header.queue = wire::load_be32(p + 6);
    header.msn = wire::load_be32(p + 10);
    header.message_offset = wire::load_be32(p + 14);
    if (header.queue != queue_of(header.opcode))
        return DdpParseError::wrong_queue;

    switch (header.opcode) {
    case RdmapOpcode::read_request:
        if (!header.last || header.message_offset != 0)
            return DdpParseError::not_single_segment;
        if (body.size() != kReadRequestSize)
            return DdpParseError::read_request_size;
        segment.read_request = parse_read_request(body.data());
        if (wraps(segment.read_request->sink_offset, segment.read_request->size) ||
            wraps(segment.read_request->source_offset, segment.read_request->size))
            return DdpParseError::offset_wrap;
        return segment;
    case RdmapOpcode::terminate: {
        if (!header.last || header.message_offset != 0)
            return DdpParseError::not_single_segment;
        auto term = parse_terminate(body);
        if (!term)
            return term.error();
        segment.terminate = *term;
        return segment;
    }
    default:
        segment.payload = body;
        return segment;
    }
}

HeaderBytes encode_segment_header(const SegmentHeader &header)
{
    HeaderBytes out;
    const bool tagged = is_tagged(header.opcode);
    std::uint8_t ddp = kDdpVersion;
    ddp |= tagged ? kDdpTagged : 0;
    ddp |= header.last ? kDdpLast : 0;
    out.bytes[0] = std::byte{ddp};
    out.bytes[1] = static_cast<std::byte>(kRdmapVersion << kRdmapVersionShift |
                                          static_cast<std::uint8_t>(header.opcode));
    std::byte *p = out.bytes.data();
    if (tagged) {
        wire::store_be32(p + 2, header.stag);
        wire::store_be64(p + 6, header.tagged_offset);
        out.size = kTaggedHeaderSize;
    } else {
        wire::store_be32(p + 2, carries_invalidate(header.opcode) ? header.invalidate_stag : 0);
        wire::store_be32(p + 6, header.queue);
        wire::store_be32(p + 10, header.msn);
        wire::store_be32(p + 14, header.message_offset);
        out.size = kUntaggedHeaderSize;
    }
    return out;
}

std::array<std::byte, kReadRequestSize> encode_read_request(const ReadRequest &request)
{
    std::array<std::byte, kReadRequestSize> out{};
    wire::store_be32(out.data(), request.sink_stag);
    wire::store_be64(out.data() + 4, request.sink_offset);
    wire::store_be32(out.data() + 12, request.size);
    wire::store_be32(out.data() + 16, request.source_stag);
    wire::store_be64(out.data() + 20, request.source_offset);
    return out;
}

std::vector<std::byte> encode_terminate(const TerminateMessage &term)
{
    if (term.layer > 0x0f || term.etype > 0x0f)
        throw std::invalid_argument("Terminate layer and type are 4-bit fields");
    const bool has_ddp = !term.ddp_header.empty();
    const bool has_read = !term.read_request.empty();
    if (has_ddp && term.ddp_header.size() != kTaggedHeaderSize &&
        term.ddp_header.size() != kUntaggedHeaderSize)
        throw std::invalid_argument("a Terminate's DDP header is 14 or 18 bytes");
    if (has_ddp && ((std::to_integer<std::uint8_t>(term.ddp_header[0]) & kDdpTagged) != 0) !=
                       (term.ddp_header.size() == kTaggedHeaderSize))
        throw std::invalid_argument("a Terminate's DDP header size contradicts its T bit");
    if (has_read && term.read_request.size() != kReadRequestSize)
        throw std::invalid_argument("a Terminate's Read Request header is 28 bytes");

    const bool has_length = term.ddp_segment_length || has_ddp;
    const std::size_t size = kTerminateControlSize +
                             (has_length ? kTerminateSegmentLengthSize : 0) +
                             term.ddp_header.size() + term.read_request.size();
    std::vector<std::byte> out(size);
    out[0] = static_cast<std::byte>(term.layer << 4 | term.etype);
    out[1] = std::byte{term.code};
    std::uint16_t flags = 0;
    flags |= term.ddp_segment_length ? kTerminateM : 0;
    flags |= has_ddp ? kTerminateD : 0;
    flags |= has_read ? kTerminateR : 0;
    wire::store_be16(out.data() + 2, flags);
    std::byte *p = out.data() + kTerminateControlSize;
    if (has_length) {
        wire::store_be16(p, term.ddp_segment_length.value_or(0));
        p += kTerminateSegmentLengthSize;
    }
    p = std::copy(term.ddp_header.begin(), term.ddp_header.end(), p);
    std::copy(term.read_request.begin(), term.read_request.end(), p);
    return out;
}

std::vector<std::byte> encode_segment(const ParsedSegment &segment)
{
    const HeaderBytes header = encode_segment_header(segment.header);
    std::vector<std::byte> out(header.span().begin(), header.span().end());
    if (segment.read_request) {
        const auto body = encode_read_request(*segment.read_request);
        out.insert(out.end(), body.begin(), body.end());
    } else if (segment.terminate) {
        const auto body = encode_terminate(*segment.terminate);
        out.insert(out.end(), body.begin(), body.end());
    } else {
        out.insert(out.end(), segment.payload.begin(), segment.payload.end());
    }
    return out;
}

} // namespace ndk::soft::iwarp
