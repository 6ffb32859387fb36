// The seed corpus of fuzz_iwarp (tests/fuzz/corpus-iwarp/): valid streams of each frame kind,
// made by the codec itself.  The test fails when a checked-in seed is missing or is no longer
// what the codec writes; NDK_IWARP_WRITE_CORPUS=1 (re)writes them instead:
//
//   NDK_IWARP_WRITE_CORPUS=1 build/tests/ndk_unit_tests --gtest_filter='IwarpCorpus.*'
#include "../fuzz/iwarp_fuzz_input.hpp"
#include "corpus_support.hpp"
#include "iwarp_support.hpp"
#include "providers/soft/iwarp/ddp_rdmap.hpp"
#include "providers/soft/iwarp/ddp_segmenter.hpp"
#include "providers/soft/iwarp/mpa.hpp"
#include "providers/soft/iwarp/mpa_fpdu.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

namespace {

using namespace ndk::soft::iwarp;
using namespace ndk::soft::iwarp::test_support;
namespace input_format = ndk::soft::iwarp::fuzz_input;

const char *opcode_name(RdmapOpcode op)
{
    static const char *const names[] = {"write", "read-request", "read-response", "send",
                                        "send-invalidate", "send-se", "send-se-invalidate",
                                        "terminate"};
    return names[static_cast<unsigned>(op)];
}

// One segment of each opcode, the Terminate with the headers of a failed Read Request.
std::vector<std::vector<std::byte>> one_ulpdu_per_opcode()
{
    std::vector<std::vector<std::byte>> ulpdus;
    const auto payload = pattern(23, 1);
    static std::vector<std::byte> failed_read; // the Terminate's views point into it
    for (unsigned op = 0; op < 8; ++op) {
        ParsedSegment s;
        s.header.opcode = static_cast<RdmapOpcode>(op);
        if (is_tagged(s.header.opcode)) {
            s.header.stag = 0x1234;
            s.header.tagged_offset = 0x10000;
            s.header.msn = 0;
        } else {
            s.header.queue = queue_of(s.header.opcode);
            s.header.invalidate_stag = carries_invalidate(s.header.opcode) ? 0x5678 : 0;
        }
        if (s.header.opcode == RdmapOpcode::read_request) {
            s.read_request = ReadRequest{0x1234, 0x10000, 4096, 0x9abc, 0x20000};
            failed_read = encode_segment(s);
        } else if (s.header.opcode == RdmapOpcode::terminate) {
            const std::span<const std::byte> copy(failed_read);
            s.terminate = TerminateMessage{0, 1, 2, std::uint16_t{kReadRequestSize},
                                           copy.first(kUntaggedHeaderSize),
                                           copy.subspan(kUntaggedHeaderSize)};
        } else {
            s.payload = payload;
        }
        ulpdus.push_back(encode_segment(s));
    }
    return ulpdus;
}

std::map<std::string, std::vector<std::byte>> make_seeds()
{
    std::map<std::string, std::vector<std::byte>> seeds;
    const std::uint8_t no_chunks[] = {0};
    const std::uint8_t odd_chunks[] = {7, 3, 0};
    const auto ulpdus = one_ulpdu_per_opcode();

    const MpaSettings local;
    const MpaFrame request = make_mpa_request(local, pattern(12, 2));
    auto stream = encode_mpa_frame(request);
    for (const auto &ulpdu : ulpdus) {
        const auto fpdu = encode_fpdu(ulpdu, true);
        stream.insert(stream.end(), fpdu.begin(), fpdu.end());
    }
    seeds["mpa-request-then-fpdus"] = input_format::encode(
        input_format::kMpaFirst | input_format::kCrc | input_format::kFixCrc, odd_chunks, stream);
    const auto answer = answer_mpa_request(request, local, pattern(8, 3));
    seeds["mpa-reply"] = input_format::encode(0, {}, encode_mpa_frame(answer.reply));
    seeds["mpa-reject"] =
        input_format::encode(0, {}, encode_mpa_frame(make_mpa_reject(request, pattern(5, 4))));

    for (std::size_t op = 0; op < ulpdus.size(); ++op)
        for (bool crc : {false, true}) {
            const std::string name = std::string("fpdu-") +
                                     opcode_name(static_cast<RdmapOpcode>(op)) +
                                     (crc ? "-crc" : "");
            seeds[name] = input_format::encode(crc ? input_format::kCrc : 0, no_chunks,
                                               encode_fpdu(ulpdus[op], crc));
        }

    // A 1000-byte Send cut for a 128-byte MULPDU (flags bits 4-5 = 1), read in odd chunks.
    SegmentHeader send;
    send.invalidate_stag = 0;
    const auto message = pattern(1000, 5);
    std::vector<std::byte> segmented;
    for (Segmenter segmenter(send, message.size(), 128); !segmenter.done();) {
        const auto piece = segmenter.next();
        const auto header = encode_segment_header(piece.header);
        const auto payload = std::span(message).subspan(piece.offset, piece.size);
        const auto fpdu = encode_fpdu(concat({header.span(), payload}), true);
        segmented.insert(segmented.end(), fpdu.begin(), fpdu.end());
    }
    seeds["segmented-send-mulpdu-128"] =
        input_format::encode(input_format::kCrc | 0x10, odd_chunks, segmented);
    return seeds;
}

TEST(IwarpCorpus, SeedsAreWhatTheCodecWrites)
{
    const auto dir = std::filesystem::path(NDK_SOURCE_DIR) / "tests/fuzz/corpus-iwarp";
    ndktest::check_or_write_corpus(dir, "NDK_IWARP_WRITE_CORPUS", make_seeds());
}

} // namespace
