// DDP/RDMAP headers (core/src/providers/soft/iwarp/ddp_rdmap.hpp): the wire images siw's
// iwarp.h structs describe, a round trip of every opcode, every parse error from a crafted
// segment, Terminate bodies, and the Terminate reason table.
#include "iwarp_support.hpp"
#include "providers/soft/iwarp/ddp_rdmap.hpp"
#include "providers/soft/iwarp/terminate_reasons.hpp"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

namespace {

using namespace ndk::soft::iwarp;
using namespace ndk::soft::iwarp::test_support;

SegmentHeader tagged(RdmapOpcode op, bool last = true)
{
    SegmentHeader h;
    h.opcode = op;
    h.last = last;
    h.stag = 0x11223344;
    h.tagged_offset = 0x0102030405060708;
    h.queue = 0;
    h.msn = 0;
    return h;
}

SegmentHeader untagged(RdmapOpcode op, bool last = true)
{
    SegmentHeader h;
    h.opcode = op;
    h.last = last;
    h.queue = queue_of(op);
    h.msn = 0x0a0b0c0d;
    h.message_offset = last ? 0 : 0x100;
    h.invalidate_stag = carries_invalidate(op) ? 0xcafef00d : 0;
    return h;
}

// struct iwarp_rdma_write after its mpa_len: DDP control 0xc1 (T, L, DV 1), RDMAP control
// 0x40 (RV 1, opcode 0), sink STag, sink TO.
TEST(IwarpDdp, TaggedWireImage)
{
    const auto header = encode_segment_header(tagged(RdmapOpcode::rdma_write));
    EXPECT_EQ(std::vector<std::byte>(header.span().begin(), header.span().end()),
              bytes_of({0xc1, 0x40, 0x11, 0x22, 0x33, 0x44, 1, 2, 3, 4, 5, 6, 7, 8}));
    const auto middle = encode_segment_header(tagged(RdmapOpcode::read_response, false));
    EXPECT_EQ(middle.bytes[0], std::byte{0x81}); // T, not L
    EXPECT_EQ(middle.bytes[1], std::byte{0x42});
}

// struct iwarp_send_inv: 0x41/0x44, then inval_stag, ddp_qn, ddp_msn, ddp_mo.
TEST(IwarpDdp, UntaggedWireImage)
{
    const auto header = encode_segment_header(untagged(RdmapOpcode::send_invalidate));
    EXPECT_EQ(std::vector<std::byte>(header.span().begin(), header.span().end()),
              bytes_of({0x41, 0x44, 0xca, 0xfe, 0xf0, 0x0d, 0, 0, 0, 0, 0x0a, 0x0b, 0x0c, 0x0d,
                        0, 0, 0, 0}));
    // Only the Invalidate variants carry the STag: a plain Send writes zeros there.
    auto send = untagged(RdmapOpcode::send_solicited, false);
    send.invalidate_stag = 0xffffffff;
    const auto plain = encode_segment_header(send);
    EXPECT_EQ(plain.bytes[0], std::byte{0x01});
    EXPECT_EQ(plain.bytes[1], std::byte{0x45});
    EXPECT_EQ(plain.bytes[2], std::byte{0});
    EXPECT_EQ(plain.bytes[17], std::byte{0x00});
    EXPECT_EQ(plain.bytes[16], std::byte{0x01}); // MO 0x100
}

// struct iwarp_rdma_rreq: the untagged header on queue 1, then sink STag, sink TO, read size,
// source STag, source TO.
TEST(IwarpDdp, ReadRequestWireImage)
{
    ParsedSegment segment;
    segment.header = untagged(RdmapOpcode::read_request);
    segment.read_request = ReadRequest{0xa1a2a3a4, 0x10, 0x20000, 0xb1b2b3b4, 0x1000};
    const auto bytes = encode_segment(segment);
    ASSERT_EQ(bytes.size(), kUntaggedHeaderSize + kReadRequestSize);
    EXPECT_EQ(std::vector<std::byte>(bytes.begin() + 18, bytes.end()),
              bytes_of({0xa1, 0xa2, 0xa3, 0xa4, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 2, 0, 0, 0xb1, 0xb2,
                        0xb3, 0xb4, 0, 0, 0, 0, 0, 0, 0x10, 0x00}));
    EXPECT_EQ(bytes[9], std::byte{1}); // QN 1
}

std::vector<ParsedSegment> one_of_each(const std::vector<std::byte> &payload,
                                       const std::vector<std::byte> &copied_ddp,
                                       const std::vector<std::byte> &copied_read)
{
    std::vector<ParsedSegment> segments;
    for (auto op : {RdmapOpcode::rdma_write, RdmapOpcode::read_response}) {
        for (bool last : {false, true}) {
            ParsedSegment s;
            s.header = tagged(op, last);
            s.payload = payload;
            segments.push_back(s);
        }
    }
    for (auto op : {RdmapOpcode::send, RdmapOpcode::send_invalidate, RdmapOpcode::send_solicited,
                    RdmapOpcode::send_solicited_invalidate}) {
        for (bool last : {false, true}) {
            ParsedSegment s;
            s.header = untagged(op, last);
            s.payload = payload;
            segments.push_back(s);
        }
    }
    ParsedSegment empty_write; // the zero-length RDMA Write of an RTR
    empty_write.header = tagged(RdmapOpcode::rdma_write);
    segments.push_back(empty_write);
    ParsedSegment read;
    read.header = untagged(RdmapOpcode::read_request);
    read.read_request = ReadRequest{1, 2, 3, 4, 5};
    segments.push_back(read);
    ParsedSegment term;
    term.header = untagged(RdmapOpcode::terminate);
    term.terminate = TerminateMessage{1, 2, 4, std::uint16_t{1234}, copied_ddp, copied_read};
    segments.push_back(term);
    ParsedSegment bare_term;
    bare_term.header = untagged(RdmapOpcode::terminate);
    bare_term.terminate = TerminateMessage{0, 0, 0xff, std::nullopt, {}, {}};
    segments.push_back(bare_term);
    return segments;
}

void expect_same(const ParsedSegment &a, const ParsedSegment &b)
{
    EXPECT_EQ(a.header, b.header);
    EXPECT_TRUE(std::equal(a.payload.begin(), a.payload.end(), b.payload.begin(), b.payload.end()));
    EXPECT_EQ(a.read_request, b.read_request);
    ASSERT_EQ(a.terminate.has_value(), b.terminate.has_value());
    if (a.terminate) {
        const auto &x = *a.terminate, &y = *b.terminate;
        EXPECT_EQ(x.layer, y.layer);
        EXPECT_EQ(x.etype, y.etype);
        EXPECT_EQ(x.code, y.code);
        EXPECT_EQ(x.ddp_segment_length, y.ddp_segment_length);
        EXPECT_TRUE(std::equal(x.ddp_header.begin(), x.ddp_header.end(), y.ddp_header.begin(),
                               y.ddp_header.end()));
        EXPECT_TRUE(std::equal(x.read_request.begin(), x.read_request.end(),
                               y.read_request.begin(), y.read_request.end()));
    }
}

TEST(IwarpDdp, RoundTripOfEveryOpcode)
{
    const auto payload = pattern(37, 3);
    const auto copied_read = encode_segment(one_of_each({}, {}, {})[10]); // an untagged header
    const std::vector<std::byte> copied_ddp(copied_read.begin(), copied_read.begin() + 18);
    const auto copied_rr = encode_read_request(ReadRequest{9, 8, 7, 6, 5});
    const std::vector<std::byte> rr(copied_rr.begin(), copied_rr.end());
    std::set<RdmapOpcode> seen;
    for (const auto &segment : one_of_each(payload, copied_ddp, rr)) {
        const auto bytes = encode_segment(segment);
        const auto parsed = parse_segment(bytes);
        ASSERT_TRUE(parsed) << static_cast<int>(parsed.error());
        expect_same(*parsed, segment);
        EXPECT_EQ(encode_segment(*parsed), bytes);
        seen.insert(segment.header.opcode);
    }
    EXPECT_EQ(seen.size(), 8u);
}

DdpParseError error_of(std::span<const std::byte> bytes)
{
    const auto parsed = parse_segment(bytes);
    EXPECT_FALSE(parsed);
    return parsed.error();
}

// `good` with one byte replaced, or with its last byte dropped or a zero byte added.
std::vector<std::byte> with_byte(std::vector<std::byte> good, std::size_t at, unsigned value)
{
    good[at] = static_cast<std::byte>(value);
    return good;
}

std::vector<std::byte> one_shorter(std::vector<std::byte> good)
{
    good.pop_back();
    return good;
}

std::vector<std::byte> one_longer(std::vector<std::byte> good)
{
    good.push_back(std::byte{0});
    return good;
}

TEST(IwarpDdp, EveryParseError)
{
    const auto send = encode_segment({untagged(RdmapOpcode::send), {}, {}, {}}); // 0x41 0x43
    for (std::size_t n = 0; n < send.size(); ++n)
        EXPECT_EQ(error_of(std::span(send).first(n)), DdpParseError::truncated) << n;
    const auto write = encode_segment({tagged(RdmapOpcode::rdma_write), {}, {}, {}}); // 0xc1 0x40
    EXPECT_EQ(error_of(std::span(write).first(13)), DdpParseError::truncated);

    EXPECT_EQ(error_of(with_byte(send, 0, 0x42)), DdpParseError::bad_ddp_version); // DV 2
    EXPECT_EQ(error_of(with_byte(send, 1, 0x83)), DdpParseError::bad_rdmap_version); // RV 2
    for (unsigned op = 8; op < 16; ++op)
        EXPECT_EQ(error_of(with_byte(send, 1, 0x40 | op)), DdpParseError::bad_opcode) << op;
    // A Send claiming the tagged model, a Write the untagged one.
    EXPECT_EQ(error_of(with_byte(send, 0, 0xc1)), DdpParseError::wrong_buffer_model);
    EXPECT_EQ(error_of(with_byte(write, 0, 0x41)), DdpParseError::wrong_buffer_model);
    EXPECT_EQ(error_of(with_byte(send, 9, 1)), DdpParseError::wrong_queue); // QN 1

    ParsedSegment read{untagged(RdmapOpcode::read_request), {}, ReadRequest{}, {}};
    const auto rr = encode_segment(read);
    EXPECT_EQ(error_of(with_byte(rr, 0, 0x01)), DdpParseError::not_single_segment); // L clear
    EXPECT_EQ(error_of(with_byte(rr, 17, 4)), DdpParseError::not_single_segment);   // MO 4
    EXPECT_EQ(error_of(one_shorter(rr)), DdpParseError::read_request_size);
    EXPECT_EQ(error_of(one_longer(rr)), DdpParseError::read_request_size);
    read.read_request = ReadRequest{1, ~std::uint64_t{0} - 10, 11, 2, 0};
    EXPECT_EQ(error_of(encode_segment(read)), DdpParseError::offset_wrap);
    read.read_request = ReadRequest{1, 0, 11, 2, ~std::uint64_t{0}};
    EXPECT_EQ(error_of(encode_segment(read)), DdpParseError::offset_wrap);
    auto wrap = tagged(RdmapOpcode::rdma_write);
    wrap.tagged_offset = ~std::uint64_t{0};
    const auto one = pattern(1, 1);
    EXPECT_EQ(error_of(encode_segment({wrap, one, {}, {}})), DdpParseError::offset_wrap);
    EXPECT_TRUE(parse_segment(encode_segment({wrap, {}, {}, {}}))); // zero bytes at the end

    ParsedSegment term{untagged(RdmapOpcode::terminate), {}, {},
                       TerminateMessage{2, 0, 2, std::nullopt, {}, {}}};
    const auto t = encode_segment(term); // 18 header bytes, then 0x20 0x02 0x00 0x00
    EXPECT_EQ(error_of(with_byte(t, 0, 0x01)), DdpParseError::not_single_segment);
    EXPECT_EQ(error_of(with_byte(t, 18, 0x30)), DdpParseError::terminate_layer); // layer 3
    EXPECT_EQ(error_of(one_shorter(t)), DdpParseError::terminate_size);
    EXPECT_EQ(error_of(one_longer(t)), DdpParseError::terminate_size);
    for (unsigned flag : {0x80u, 0x40u, 0x20u}) // M, D or R announced, nothing follows
        EXPECT_EQ(error_of(with_byte(t, 20, flag)), DdpParseError::terminate_size) << flag;
    // D: the length, then only the first byte of a tagged header.
    auto cut = with_byte(t, 20, 0x40);
    cut.insert(cut.end(), {std::byte{0}, std::byte{0}, std::byte{0xc1}});
    EXPECT_EQ(error_of(cut), DdpParseError::terminate_size);
}

// The Terminate siw sends for a remote protection error on a Read Request: M, D, R, the
// segment length, the 18-byte DDP header and the 28-byte Read Request it copied.
TEST(IwarpDdp, TerminateWithCopiedHeaders)
{
    ParsedSegment read{untagged(RdmapOpcode::read_request), {}, ReadRequest{1, 2, 3, 4, 5}, {}};
    const auto failed = encode_segment(read);
    const std::span<const std::byte> ddp(failed.data(), kUntaggedHeaderSize);
    const std::span<const std::byte> rr(failed.data() + kUntaggedHeaderSize, kReadRequestSize);
    const auto body = encode_terminate(TerminateMessage{0, 1, 0, std::uint16_t{28}, ddp, rr});
    ASSERT_EQ(body.size(), 4u + 2 + 18 + 28);
    EXPECT_EQ(body[0], std::byte{0x01});
    EXPECT_EQ(body[1], std::byte{0x00});
    EXPECT_EQ(body[2], std::byte{0xe0}); // M D R
    EXPECT_EQ(body[5], std::byte{28});
    EXPECT_TRUE(std::equal(failed.begin(), failed.end(), body.begin() + 6));

    EXPECT_THROW(encode_terminate(TerminateMessage{16, 0, 0, {}, {}, {}}), std::invalid_argument);
    EXPECT_THROW(encode_terminate(TerminateMessage{0, 0, 0, {}, ddp.first(14), {}}),
                 std::invalid_argument); // 14 bytes but T clear
    EXPECT_THROW(encode_terminate(TerminateMessage{0, 0, 0, {}, {}, rr.first(27)}),
                 std::invalid_argument);
}

TEST(IwarpDdp, TerminateReasonTable)
{
    const auto *crc = find_terminate_reason(2, 0, 2);
    ASSERT_NE(crc, nullptr);
    EXPECT_EQ(crc->reason, TerminateReason::mpa_crc_error);
    EXPECT_EQ(find_terminate_reason(0, 0, 0x37)->reason, TerminateReason::rdmap_local_catastrophic);
    EXPECT_EQ(find_terminate_reason(1, 2, 5)->reason, TerminateReason::ddp_untagged_message_too_long);
    EXPECT_EQ(find_terminate_reason(0, 1, 0xff)->reason, TerminateReason::rdmap_protection_unspecified);
    EXPECT_EQ(find_terminate_reason(2, 0, 7)->reason, TerminateReason::mpa_no_matching_rtr);
    EXPECT_EQ(find_terminate_reason(0, 1, 5), nullptr);
    EXPECT_EQ(find_terminate_reason(3, 0, 0), nullptr);

    // Every reason once, each entry found again from its own fields.
    std::set<TerminateReason> reasons;
    for (const auto &entry : terminate_reason_table()) {
        EXPECT_TRUE(reasons.insert(entry.reason).second) << entry.name;
        const auto code = entry.code < 0 ? std::uint8_t{0x42} : static_cast<std::uint8_t>(entry.code);
        EXPECT_EQ(find_terminate_reason(entry.layer, entry.etype, code), &entry);
        EXPECT_EQ(terminate_reason_entry(entry.reason), &entry);
        EXPECT_FALSE(entry.name.empty());
    }
    EXPECT_EQ(reasons.size(), static_cast<std::size_t>(TerminateReason::mpa_no_matching_rtr));
    EXPECT_EQ(terminate_reason_entry(TerminateReason::unknown), nullptr);
}

} // namespace
