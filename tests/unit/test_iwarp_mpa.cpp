// MPA connection set-up frames (core/src/providers/soft/iwarp/mpa.hpp): the wire image of a
// revision 2 request with RFC 6581 data, round trips, every parse error, the reject frame,
// and the negotiation each of our sides runs (markers refused, CRC, IRD/ORD, RTR).
#include "iwarp_support.hpp"
#include "providers/soft/iwarp/mpa.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string_view>

namespace {

using namespace ndk::soft::iwarp;
using namespace ndk::soft::iwarp::test_support;

std::vector<std::byte> key_bytes(std::string_view key)
{
    const auto b = std::as_bytes(std::span(key));
    return {b.begin(), b.end()};
}

MpaFrame sample_request()
{
    MpaFrame f;
    f.kind = MpaFrameKind::request;
    f.crc = true;
    f.enhanced = MpaEnhancedData{5, 7, true, {false, true, true}};
    f.private_data = pattern(10, 1);
    return f;
}

// The request byte for byte: key, M C R S + Res, Rev, PD_Length (4 + 10), then IRD with
// the peer-to-peer bit (A), ORD with the Write and Read RTR bits (C, D), as siw's
// mpa_rr/mpa_v2_data lay them out.
TEST(IwarpMpa, RequestWireImage)
{
    const auto expected = concat({key_bytes("MPA ID Req Frame"),
                                  bytes_of({0x50, 0x02, 0x00, 0x0e, 0x80, 0x05, 0xc0, 0x07}),
                                  pattern(10, 1)});
    EXPECT_EQ(encode_mpa_frame(sample_request()), expected);
}

TEST(IwarpMpa, RoundTripsOfEveryShape)
{
    std::vector<MpaFrame> frames;
    frames.push_back(sample_request());
    MpaFrame reply = sample_request();
    reply.kind = MpaFrameKind::reply;
    reply.enhanced = MpaEnhancedData{kMpaMaxReadDepth, 0, false, {true, false, false}};
    reply.private_data = pattern(kMpaMaxPrivateData - kMpaEnhancedDataSize, 2); // the maximum
    frames.push_back(reply);
    MpaFrame revision1;
    revision1.revision = 1;
    revision1.markers = true;
    frames.push_back(revision1);
    MpaFrame reject;
    reject.kind = MpaFrameKind::reply;
    reject.reject = true;
    reject.private_data = pattern(3, 3);
    frames.push_back(reject);
    MpaFrame bare; // revision 2 without RFC 6581 data, no private data
    frames.push_back(bare);

    for (const auto &frame : frames) {
        auto bytes = encode_mpa_frame(frame);
        bytes.push_back(std::byte{0x42}); // an FPDU's first byte after it: not the frame's
        const auto parsed = parse_mpa_frame(bytes, frame.kind);
        ASSERT_TRUE(parsed) << static_cast<int>(parsed.error());
        EXPECT_EQ(parsed->frame, frame);
        EXPECT_EQ(parsed->size, bytes.size() - 1);
        EXPECT_EQ(*mpa_frame_size(bytes), bytes.size() - 1);
    }
}

TEST(IwarpMpa, EveryParseError)
{
    const auto good = encode_mpa_frame(sample_request());
    auto expect_error = [](std::span<const std::byte> bytes, MpaFrameKind kind, MpaParseError e) {
        const auto parsed = parse_mpa_frame(bytes, kind);
        ASSERT_FALSE(parsed);
        EXPECT_EQ(parsed.error(), e);
    };
    // Every proper prefix is incomplete (the key is checked once it is all there).
    for (std::size_t n = 0; n < good.size(); ++n)
        expect_error(std::span(good).first(n), MpaFrameKind::request, MpaParseError::incomplete);
    expect_error(good, MpaFrameKind::reply, MpaParseError::bad_key);
    auto garbage = good;
    garbage[3] = std::byte{'x'};
    expect_error(garbage, MpaFrameKind::request, MpaParseError::bad_key);
    for (unsigned revision : {0u, 3u, 255u}) {
        auto bad = good;
        bad[17] = static_cast<std::byte>(revision);
        expect_error(bad, MpaFrameKind::request, MpaParseError::unsupported_revision);
    }
    auto too_long = good;
    too_long[18] = std::byte{0x02};
    too_long[19] = std::byte{0x01}; // 513
    expect_error(too_long, MpaFrameKind::request, MpaParseError::private_data_too_long);
    EXPECT_EQ(mpa_frame_size(too_long).error(), MpaParseError::private_data_too_long);
    too_long[0] = std::byte{'x'}; // not MPA at all: said before its length is looked at
    expect_error(too_long, MpaFrameKind::request, MpaParseError::bad_key);
    auto missing = good;
    missing[19] = std::byte{0x03}; // S set, 3 bytes of private data
    missing.resize(kMpaHeaderSize + 3);
    expect_error(missing, MpaFrameKind::request, MpaParseError::enhanced_data_missing);
}

TEST(IwarpMpa, ReservedBitsIgnoredAndSOnlyInRevision2)
{
    auto bytes = encode_mpa_frame(sample_request());
    bytes[16] |= std::byte{0x0f}; // the four Res bits
    const auto parsed = parse_mpa_frame(bytes, MpaFrameKind::request);
    ASSERT_TRUE(parsed);
    EXPECT_EQ(parsed->frame, sample_request());

    bytes[17] = std::byte{1}; // revision 1: S is reserved there, the 4 bytes are private data
    const auto v1 = parse_mpa_frame(bytes, MpaFrameKind::request);
    ASSERT_TRUE(v1);
    EXPECT_FALSE(v1->frame.enhanced);
    EXPECT_EQ(v1->frame.private_data.size(), 14u);
}

TEST(IwarpMpa, EncodeRefusesWhatNoPeerCouldParse)
{
    MpaFrame f = sample_request();
    f.private_data.resize(kMpaMaxPrivateData - kMpaEnhancedDataSize + 1);
    EXPECT_THROW(encode_mpa_frame(f), std::invalid_argument);
    f = sample_request();
    f.enhanced->ird = kMpaMaxReadDepth + 1;
    EXPECT_THROW(encode_mpa_frame(f), std::invalid_argument);
    f = sample_request();
    f.revision = 1;
    EXPECT_THROW(encode_mpa_frame(f), std::invalid_argument);
}

// A reject: R set, the consumer's private data, and the RFC 6581 words when the request had
// them (as siw sends them).  A reject that sets S without the words still parses as a
// reject, so the initiator sees the rejection rather than a parse error.
TEST(IwarpMpa, RejectFrame)
{
    const auto reason = pattern(6, 4);
    const MpaFrame reject = make_mpa_reject(sample_request(), reason);
    const auto bytes = encode_mpa_frame(reject);
    EXPECT_EQ(std::vector<std::byte>(bytes.begin(), bytes.begin() + 16), key_bytes("MPA ID Rep Frame"));
    EXPECT_EQ(bytes[16], std::byte{0x70}); // C R S: the request's CRC bit kept, never M
    const auto parsed = parse_mpa_frame(bytes, MpaFrameKind::reply);
    ASSERT_TRUE(parsed);
    EXPECT_TRUE(parsed->frame.reject);
    EXPECT_EQ(parsed->frame.private_data, reason);
    EXPECT_EQ(accept_mpa_reply(sample_request(), parsed->frame, MpaSettings{}).refusal,
              MpaRefusal::rejected);

    auto short_reject = concat({key_bytes("MPA ID Rep Frame"), bytes_of({0x30, 0x02, 0x00, 0x00})});
    const auto lenient = parse_mpa_frame(short_reject, MpaFrameKind::reply);
    ASSERT_TRUE(lenient);
    EXPECT_TRUE(lenient->frame.reject);
    EXPECT_FALSE(lenient->frame.enhanced);
}

// RFC 6581's words: each flag bit alone lands where siw's enum mpa_v2_ctrl has it, and the
// 14-bit depths keep their neighbours' bits out.
TEST(IwarpMpa, EnhancedDataBits)
{
    struct Case {
        MpaEnhancedData data;
        unsigned ird_word, ord_word;
    };
    const Case cases[] = {
        {{0, 0, true, {}}, 0x8000, 0x0000},
        {{0, 0, false, {true, false, false}}, 0x4000, 0x0000},
        {{0, 0, false, {false, true, false}}, 0x0000, 0x8000},
        {{0, 0, false, {false, false, true}}, 0x0000, 0x4000},
        {{0x3fff, 0x3fff, false, {}}, 0x3fff, 0x3fff},
        {{0x1234, 0x0042, true, {true, true, true}}, 0xd234, 0xc042},
    };
    for (const auto &c : cases) {
        MpaFrame f;
        f.enhanced = c.data;
        const auto bytes = encode_mpa_frame(f);
        EXPECT_EQ(bytes[20], static_cast<std::byte>(c.ird_word >> 8));
        EXPECT_EQ(bytes[21], static_cast<std::byte>(c.ird_word));
        EXPECT_EQ(bytes[22], static_cast<std::byte>(c.ord_word >> 8));
        EXPECT_EQ(bytes[23], static_cast<std::byte>(c.ord_word));
        EXPECT_EQ(parse_mpa_frame(bytes, MpaFrameKind::request)->frame.enhanced, c.data);
    }
}

TEST(IwarpMpa, NegotiationAgreesOnBothSides)
{
    MpaSettings initiator;
    initiator.crc = false;
    initiator.ird = 4;
    initiator.ord = 8;
    MpaSettings responder;
    responder.crc = true;
    responder.ird = 6;
    responder.ord = 2;
    responder.rtr = {true, false, true}; // Send or Read, not Write

    const auto pd = pattern(20, 5);
    const MpaFrame request = make_mpa_request(initiator, pd);
    const auto wire = parse_mpa_frame(encode_mpa_frame(request), MpaFrameKind::request);
    ASSERT_TRUE(wire);
    const auto answer = answer_mpa_request(wire->frame, responder, pd);
    ASSERT_EQ(answer.refusal, MpaRefusal::none);
    EXPECT_TRUE(answer.negotiated.crc);             // the responder wants it: both use it
    EXPECT_EQ(answer.negotiated.ird, 6);            // min(its IRD 6, the initiator's ORD 8)
    EXPECT_EQ(answer.negotiated.ord, 2);            // min(its ORD 2, the initiator's IRD 4)
    EXPECT_EQ(answer.negotiated.rtr, MpaRtr::read); // Write not accepted; Read before Send
    EXPECT_EQ(answer.reply.private_data, pd);

    const auto reply = parse_mpa_frame(encode_mpa_frame(answer.reply), MpaFrameKind::reply);
    ASSERT_TRUE(reply);
    const auto outcome = accept_mpa_reply(request, reply->frame, initiator);
    ASSERT_EQ(outcome.refusal, MpaRefusal::none);
    EXPECT_TRUE(outcome.negotiated.crc);
    EXPECT_EQ(outcome.negotiated.ird, answer.negotiated.ord); // each side's depth matches
    EXPECT_EQ(outcome.negotiated.ord, answer.negotiated.ird); // the other's opposite one
    EXPECT_EQ(outcome.negotiated.rtr, MpaRtr::read);
}

TEST(IwarpMpa, RefusesMarkersAndOtherMismatches)
{
    MpaFrame request = make_mpa_request(MpaSettings{}, {});
    request.markers = true;
    auto answer = answer_mpa_request(request, MpaSettings{}, pattern(5, 1));
    EXPECT_EQ(answer.refusal, MpaRefusal::markers);
    EXPECT_TRUE(answer.reply.reject);
    EXPECT_FALSE(answer.reply.markers);
    EXPECT_TRUE(answer.reply.private_data.empty());

    request.markers = false;
    request.enhanced.reset();
    EXPECT_EQ(answer_mpa_request(request, MpaSettings{}, {}).refusal, MpaRefusal::not_enhanced);

    request = make_mpa_request(MpaSettings{}, {});
    request.enhanced->rtr = {true, false, false};
    EXPECT_EQ(answer_mpa_request(request, MpaSettings{}, {}).refusal, MpaRefusal::no_matching_rtr);

    // The initiator's side: markers wanted by the reply, a responder ORD above our IRD, an
    // RTR we did not offer, a reply without the RFC 6581 data.
    const MpaSettings local;
    request = make_mpa_request(local, {});
    MpaFrame reply = answer_mpa_request(request, local, {}).reply;
    MpaFrame bad = reply;
    bad.markers = true;
    EXPECT_EQ(accept_mpa_reply(request, bad, local).refusal, MpaRefusal::markers);
    bad = reply;
    bad.enhanced->ord = local.ird + 1;
    EXPECT_EQ(accept_mpa_reply(request, bad, local).refusal, MpaRefusal::insufficient_ird);
    bad = reply;
    bad.enhanced->rtr = {true, false, false};
    EXPECT_EQ(accept_mpa_reply(request, bad, local).refusal, MpaRefusal::no_matching_rtr);
    bad = reply;
    bad.enhanced.reset();
    EXPECT_EQ(accept_mpa_reply(request, bad, local).refusal, MpaRefusal::not_enhanced);
    EXPECT_EQ(accept_mpa_reply(request, reply, local).refusal, MpaRefusal::none);

    // Without peer-to-peer no RTR is asked for or chosen.
    MpaSettings quiet;
    quiet.peer_to_peer = false;
    request = make_mpa_request(quiet, {});
    EXPECT_FALSE(request.enhanced->rtr.any());
    answer = answer_mpa_request(request, local, {});
    EXPECT_EQ(answer.negotiated.rtr, MpaRtr::none);
    EXPECT_EQ(accept_mpa_reply(request, answer.reply, quiet).negotiated.rtr, MpaRtr::none);
}

} // namespace
