// The seed corpus of fuzz_tcp_receive (tests/fuzz/corpus-tcp-receive/): valid peer streams
// (tests/fuzz/tcp_receive_fuzz_input.hpp), made by the codec's encoders: Sends (plain,
// solicited, with invalidate, segmented, too long, without a receive, held until a late
// one), Writes (in one segment, segmented, out of bounds), Read Requests (after a Write or a
// Read RTR), Read Responses to the consumer's Read or Send, Terminates (naming the consumer's
// request, or not), a mixed stream cut in chunks, and raw establishments (the MPA request,
// the RTR and what follows; a bare request, accepted, rejected or left unanswered; requests
// the provider refuses).  The test fails when a checked-in seed is missing or is no longer
// what the codec writes; NDK_TCP_RECEIVE_WRITE_CORPUS=1 (re)writes them instead:
//
//   NDK_TCP_RECEIVE_WRITE_CORPUS=1 build/tests/ndk_unit_tests --gtest_filter='TcpReceiveCorpus.*'
#include "../fuzz/tcp_receive_fuzz_input.hpp"
#include "corpus_support.hpp"
#include "iwarp_support.hpp"
#include "providers/soft/iwarp/ddp_rdmap.hpp"
#include "providers/soft/iwarp/ddp_segmenter.hpp"
#include "providers/soft/iwarp/mpa.hpp"
#include "providers/soft/iwarp/mpa_fpdu.hpp"
#include "providers/soft/tcp/tcp_terminate.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

namespace {

using namespace ndk::soft::iwarp;
using namespace ndk::soft::iwarp::test_support;
namespace input_format = ndk::soft::iwarp::tcp_fuzz_input;
using input_format::Posted;

using Bytes = std::vector<std::byte>;

void append(Bytes &to, std::span<const std::byte> bytes)
{
    to.insert(to.end(), bytes.begin(), bytes.end());
}

// One message as FPDUs with CRC (what the provider always negotiates), cut at `mulpdu`.
Bytes message(const SegmentHeader &first, std::span<const std::byte> body,
              std::size_t mulpdu = kMpaMaxUlpdu)
{
    Bytes out;
    for (Segmenter segmenter(first, body.size(), mulpdu); !segmenter.done();) {
        const SegmentPiece piece = segmenter.next();
        const auto header = encode_segment_header(piece.header);
        append(out,
               encode_fpdu(concat({header.span(), body.subspan(piece.offset, piece.size)}), true));
    }
    return out;
}

SegmentHeader untagged(RdmapOpcode opcode, std::uint32_t msn, std::uint32_t invalidate = 0)
{
    SegmentHeader h;
    h.opcode = opcode;
    h.queue = queue_of(opcode);
    h.msn = msn;
    h.invalidate_stag = invalidate;
    return h;
}

SegmentHeader tagged(RdmapOpcode opcode, std::uint32_t stag, std::uint64_t offset)
{
    SegmentHeader h;
    h.opcode = opcode;
    h.stag = stag;
    h.tagged_offset = offset;
    return h;
}

Bytes send(std::size_t length, std::uint32_t msn, RdmapOpcode opcode = RdmapOpcode::send,
           std::size_t mulpdu = kMpaMaxUlpdu, std::uint32_t invalidate = 0)
{
    const auto payload = pattern(length, msn);
    return message(untagged(opcode, msn, invalidate), payload, mulpdu);
}

// A Write into the harness's MR (kMrStag, relocated by kFixUp) at `offset`.
Bytes write(std::size_t length, std::uint64_t offset, std::size_t mulpdu = kMpaMaxUlpdu)
{
    const auto payload = pattern(length, 7);
    return message(tagged(RdmapOpcode::rdma_write, input_format::kMrStag, offset), payload, mulpdu);
}

// A Read Request of `size` bytes from the harness's MR at `offset`.
Bytes read_request(std::uint32_t msn, std::uint32_t size, std::uint64_t offset)
{
    const auto body = encode_read_request({0x99, 0x4000, size, input_format::kMrStag, offset});
    return message(untagged(RdmapOpcode::read_request, msn), body);
}

// The answer to the consumer's Read (or to the zero-length Read after its Send or Write):
// the provider's first sink STag, 1, at offset 0.
Bytes read_response(std::size_t length, std::size_t mulpdu = kMpaMaxUlpdu)
{
    const auto payload = pattern(length, 9);
    return message(tagged(RdmapOpcode::read_response, 1, 0), payload, mulpdu);
}

// A Terminate for `reason`, naming the segment whose header `named` describes (or none).
Bytes terminate(TerminateReason reason, std::optional<SegmentHeader> named = std::nullopt)
{
    Bytes ulpdu_in_error;
    if (named) {
        append(ulpdu_in_error, encode_segment_header(*named).span());
        append(ulpdu_in_error,
               pattern(named->opcode == RdmapOpcode::read_request ? kReadRequestSize
                                                                  : input_format::kPostedBytes,
                       3));
    }
    return message(untagged(RdmapOpcode::terminate, 1),
                   ndk::soft::tcp::terminate_body(reason, ulpdu_in_error));
}

Bytes request_frame(const MpaSettings &settings)
{
    return encode_mpa_frame(make_mpa_request(settings, pattern(6, 4)));
}

Bytes rtr(bool read)
{
    if (!read)
        return message(tagged(RdmapOpcode::rdma_write, 0, 0), {});
    const auto body = encode_read_request({});
    return message(untagged(RdmapOpcode::read_request, 1), body);
}

std::map<std::string, Bytes> make_seeds()
{
    std::map<std::string, Bytes> seeds;
    const std::uint8_t odd_chunks[] = {7, 3, 0};
    const std::uint8_t small_chunks[] = {5, 17, 64};
    // Harness establishment (CRC asked, a Write RTR unless said), kFixUp.
    auto put = [&](const std::string &name, Bytes stream, Posted posted = Posted::none,
                   unsigned receives = 1, bool read_rtr = false, bool crc = true,
                   std::span<const std::uint8_t> chunks = {}, std::uint8_t second = 0) {
        seeds[name] = input_format::encode(
            input_format::flags_of(false, crc, read_rtr, true, posted, receives), second, chunks,
            stream);
    };
    put("send", send(100, 1));
    put("send-no-crc-asked", send(100, 1), Posted::none, 1, false, false);
    put("send-solicited-chunked", send(200, 1, RdmapOpcode::send_solicited), Posted::none, 1, false,
        true, odd_chunks, input_format::kPause);
    put("send-segmented", send(240, 1, RdmapOpcode::send, 64));
    put("send-invalidate", send(32, 1, RdmapOpcode::send_invalidate, kMpaMaxUlpdu, 0x1234));
    put("send-too-long", send(300, 1));
    put("send-no-receive", send(100, 1), Posted::none, 0);
    {
        // Held for want of a receive, with a second Send behind it, until the late receive.
        Bytes first = send(100, 1);
        const std::uint8_t cut[] = {static_cast<std::uint8_t>(first.size()), 0};
        append(first, send(50, 2));
        put("send-late-receive", first, Posted::none, 0, false, true, cut,
            input_format::kPause | input_format::kLateReceive | input_format::kLongRnr);
    }
    put(
        "send-twice-read-rtr",
        [] {
            Bytes s = send(10, 1);
            append(s, send(20, 2, RdmapOpcode::send_solicited));
            return s;
        }(),
        Posted::none, 2, true);
    put("write", write(100, 0x100));
    put("write-segmented", write(1000, 0x1000, 128), Posted::none, 0);
    put("write-out-of-bounds", write(100, input_format::kMrBytes - 10));
    put("read-request", read_request(1, 300, 0x200));
    put("read-request-read-rtr", read_request(2, 300, 0x200), Posted::none, 1, true);
    put("read-response", read_response(input_format::kPostedBytes), Posted::read);
    put("read-response-segmented",
        read_response(input_format::kPostedBytes, kTaggedHeaderSize + 32), Posted::read, 1, false,
        true, small_chunks, input_format::kPause);
    put("send-answered", read_response(0), Posted::send);
    put("write-answered", read_response(0), Posted::write);
    put("terminate-names-send",
        terminate(TerminateReason::ddp_untagged_msn_no_buffer, untagged(RdmapOpcode::send, 1)),
        Posted::send);
    put("terminate-names-write",
        terminate(TerminateReason::ddp_tagged_invalid_stag,
                  tagged(RdmapOpcode::rdma_write, 0x1234, 0x10000)),
        Posted::write);
    put("terminate-names-read",
        terminate(TerminateReason::rdmap_base_or_bounds, untagged(RdmapOpcode::read_request, 1)),
        Posted::read);
    put("terminate", terminate(TerminateReason::rdmap_local_catastrophic));
    put(
        "mixed-chunked",
        [] {
            Bytes s = send(50, 1);
            append(s, write(300, 0x2000, 128));
            append(s, read_request(1, 64, 0x2000));
            append(s, send(70, 2, RdmapOpcode::send_solicited));
            return s;
        }(),
        Posted::none, 2, false, true, small_chunks);

    // Raw establishment: the request, the RTR and what follows, as a peer would send them.
    // The consumer accepts, or with `reject` rejects, or with `close` closes the connector.
    auto raw = [&](const std::string &name, Bytes stream, bool reject = false, bool close = false) {
        seeds[name] = input_format::encode(
            input_format::flags_of(true, reject, close, true, Posted::none, 1), 0, {}, stream);
    };
    {
        Bytes s = request_frame(input_format::request_settings(true, false));
        append(s, rtr(false));
        append(s, send(100, 1));
        raw("raw-write-rtr-send", s);
    }
    {
        Bytes s = request_frame(input_format::request_settings(false, true));
        append(s, rtr(true));
        append(s, read_request(2, 128, 0));
        append(s, write(16, 0x10));
        raw("raw-read-rtr-read-request", s);
    }
    raw("raw-request-only", request_frame(input_format::request_settings(true, false)));
    raw("raw-rejected", request_frame(input_format::request_settings(true, false)), true);
    raw("raw-closed-unanswered", request_frame(input_format::request_settings(true, false)), false,
        true);
    {
        Bytes s = request_frame(input_format::request_settings(true, false));
        append(s, send(8, 1)); // a Send where the Write RTR should be
        raw("raw-wrong-rtr", s);
    }
    {
        MpaFrame revision1 = make_mpa_request(input_format::request_settings(true, false), {});
        revision1.revision = 1;
        revision1.enhanced.reset();
        raw("raw-revision-1", encode_mpa_frame(revision1));
        MpaFrame markers = make_mpa_request(input_format::request_settings(true, false), {});
        markers.markers = true;
        raw("raw-markers", encode_mpa_frame(markers));
        MpaFrame send_rtr = make_mpa_request(input_format::request_settings(true, false), {});
        send_rtr.enhanced->rtr = {true, false, false};
        raw("raw-send-rtr-only", encode_mpa_frame(send_rtr));
    }
    return seeds;
}

TEST(TcpReceiveCorpus, SeedsAreWhatTheCodecWrites)
{
    const auto dir = std::filesystem::path(NDK_SOURCE_DIR) / "tests/fuzz/corpus-tcp-receive";
    ndktest::check_or_write_corpus(dir, "NDK_TCP_RECEIVE_WRITE_CORPUS", make_seeds());
}

// The harness's fix-up finds each FPDU, relocates the MR's placeholder STag and offset, and
// writes CRCs that the reassembler accepts.
TEST(TcpReceiveCorpus, FixUpRelocatesAndWritesCrcs)
{
    Bytes stream = write(40, 0x100);
    append(stream, read_request(1, 64, 0x200));
    stream[fpdu_size(kTaggedHeaderSize + 40, true) - 1] ^= std::byte{0x5a}; // spoil both CRCs
    stream.back() ^= std::byte{0x5a};
    input_format::fix_up(stream, 0, true, 0xabcd, 0x7000);
    FpduReassembler reassembler(true);
    reassembler.push(stream);
    FpduStep step = reassembler.next();
    ASSERT_EQ(step.status, FpduStatus::complete);
    auto segment = parse_segment(step.ulpdu);
    ASSERT_TRUE(segment);
    EXPECT_EQ(segment->header.stag, 0xabcdu);
    EXPECT_EQ(segment->header.tagged_offset, 0x7100u);
    step = reassembler.next();
    ASSERT_EQ(step.status, FpduStatus::complete);
    segment = parse_segment(step.ulpdu);
    ASSERT_TRUE(segment && segment->read_request);
    EXPECT_EQ(segment->read_request->source_stag, 0xabcdu);
    EXPECT_EQ(segment->read_request->source_offset, 0x7200u);
    EXPECT_EQ(segment->read_request->sink_stag, 0x99u); // the sink is the peer's: left alone
    EXPECT_EQ(reassembler.next().status, FpduStatus::need_more);
}

} // namespace
