// fuzz_iwarp: a libFuzzer target on the iWARP receive path's codec (docs/iwarp.md,
// core/src/providers/soft/iwarp/): what a tcp connection does with the bytes a peer sends.
//
// Each input (iwarp_fuzz_input.hpp) is a byte stream and the cuts a socket's reads make in
// it.  The harness optionally reads an MPA request off its front, then feeds the rest, chunk
// by chunk, to an FPDU reassembler (with or without CRC; with kFixCrc it first writes the
// right CRC into each FPDU, so that mutations get past MPA to DDP), parses every FPDU as a
// DDP/RDMAP segment, runs the order checks, looks up Terminate reasons, and re-encodes what
// parsed.  The whole stream also goes to the MPA request and reply parsers.
//
// The oracle: no crash and no ASan/UBSan report (every parse is of a peer's bytes and may
// not read out of bounds), and round trips: what parsed re-encodes to bytes of the same
// length that parse to the same values (reserved bits, ignored on receive, may differ), and
// a re-framed ULPDU comes back out of the FPDU parser unchanged.  A failed check abort()s.
#include "iwarp_fuzz_input.hpp"
#include "providers/soft/iwarp/crc32c.hpp"
#include "providers/soft/iwarp/ddp_rdmap.hpp"
#include "providers/soft/iwarp/ddp_segmenter.hpp"
#include "providers/soft/iwarp/mpa.hpp"
#include "providers/soft/iwarp/mpa_fpdu.hpp"
#include "providers/soft/iwarp/terminate_reasons.hpp"
#include "providers/soft/iwarp/wire_bytes.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using namespace ndk::soft::iwarp;
namespace input_format = ndk::soft::iwarp::fuzz_input;

void check(bool condition, const char *what)
{
    if (!condition) {
        std::fprintf(stderr, "fuzz_iwarp: %s\n", what);
        std::abort();
    }
}

bool same_bytes(std::span<const std::byte> a, std::span<const std::byte> b)
{
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

bool same_segment(const ParsedSegment &a, const ParsedSegment &b)
{
    if (!(a.header == b.header) || !same_bytes(a.payload, b.payload) ||
        a.read_request != b.read_request || a.terminate.has_value() != b.terminate.has_value())
        return false;
    if (!a.terminate)
        return true;
    const TerminateMessage &x = *a.terminate, &y = *b.terminate;
    return x.layer == y.layer && x.etype == y.etype && x.code == y.code &&
           x.ddp_segment_length == y.ddp_segment_length &&
           same_bytes(x.ddp_header, y.ddp_header) && same_bytes(x.read_request, y.read_request);
}

void check_mpa(std::span<const std::byte> stream)
{
    for (auto kind : {MpaFrameKind::request, MpaFrameKind::reply}) {
        const auto parsed = parse_mpa_frame(stream, kind);
        if (!parsed)
            continue;
        check(parsed->size <= stream.size(), "MPA frame larger than its input");
        const auto encoded = encode_mpa_frame(parsed->frame);
        const auto again = parse_mpa_frame(encoded, kind);
        check(again && again->frame == parsed->frame && again->size == encoded.size(),
              "MPA frame does not round-trip");
        // Only ignored bits may change (Res; S of a reject too short for the RFC 6581 words).
        check(encoded.size() == parsed->size, "MPA frame changed size");
        const MpaSettings local;
        if (kind == MpaFrameKind::request) {
            const auto answer = answer_mpa_request(parsed->frame, local, parsed->frame.private_data);
            const auto reply = parse_mpa_frame(encode_mpa_frame(answer.reply), MpaFrameKind::reply);
            check(reply && reply->frame == answer.reply, "our MPA reply does not parse");
            if (answer.refusal == MpaRefusal::none) {
                const auto outcome = accept_mpa_reply(parsed->frame, answer.reply, local);
                check(outcome.refusal != MpaRefusal::rejected, "our accept reads as a reject");
            }
        } else {
            (void)accept_mpa_reply(make_mpa_request(local, {}), parsed->frame, local);
        }
    }
}

// What kFixCrc does: walk the FPDUs as their lengths lay them out and write each one's CRC.
std::vector<std::byte> with_fixed_crcs(std::span<const std::byte> stream)
{
    std::vector<std::byte> fixed(stream.begin(), stream.end());
    std::size_t at = 0;
    while (fixed.size() - at >= kMpaLengthSize) {
        const std::size_t size = fpdu_size(wire::load_be16(fixed.data() + at), true);
        if (fixed.size() - at < size)
            break;
        const std::span<const std::byte> covered(fixed.data() + at, size - kMpaCrcSize);
        wire::store_le32(fixed.data() + at + size - kMpaCrcSize, crc32c(covered));
        at += size;
    }
    return fixed;
}

void check_segment(std::span<const std::byte> ulpdu, bool crc, DdpSequenceCheck &sequence)
{
    // MPA: the ULPDU framed again comes back whole.
    const auto fpdu = encode_fpdu(ulpdu, crc);
    const FpduStep step = parse_fpdu(fpdu, crc, kMpaMaxUlpdu);
    check(step.status == FpduStatus::complete && step.size == fpdu.size() &&
              same_bytes(step.ulpdu, ulpdu),
          "FPDU does not round-trip");

    const auto parsed = parse_segment(ulpdu);
    if (!parsed)
        return;
    check(parsed->payload.empty() || (parsed->payload.data() >= ulpdu.data() &&
                                      parsed->payload.data() + parsed->payload.size() <=
                                          ulpdu.data() + ulpdu.size()),
          "payload outside its ULPDU");
    const auto encoded = encode_segment(*parsed);
    check(encoded.size() == ulpdu.size(), "segment changed size");
    const auto again = parse_segment(encoded);
    check(again && same_segment(*again, *parsed), "segment does not round-trip");

    (void)sequence.accept(parsed->header, parsed->payload.size());
    if (parsed->terminate)
        (void)find_terminate_reason(parsed->terminate->layer, parsed->terminate->etype,
                                    parsed->terminate->code);
}

void run_stream(const input_format::Input &input, std::span<const std::byte> stream)
{
    const bool crc = (input.flags & input_format::kCrc) != 0;
    std::vector<std::byte> fixed;
    if (crc && (input.flags & input_format::kFixCrc) != 0) {
        fixed = with_fixed_crcs(stream);
        stream = fixed;
    }
    FpduReassembler reassembler(crc, input.max_ulpdu);
    DdpSequenceCheck sequence;
    std::size_t at = 0, chunk = 0;
    while (at < stream.size()) {
        std::size_t size = input.chunks.empty() ? stream.size() : input.chunks[chunk++ % input.chunks.size()];
        size = std::min(size, stream.size() - at);
        reassembler.push(stream.subspan(at, size));
        at += size;
        FpduStep step;
        while ((step = reassembler.next()).status == FpduStatus::complete) {
            check(step.ulpdu.size() >= kMpaMinUlpdu && step.ulpdu.size() <= input.max_ulpdu,
                  "FPDU outside its length limits");
            check_segment(step.ulpdu, crc, sequence);
        }
        if (step.status != FpduStatus::need_more)
            return; // final: the connection would end with a Terminate here
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    const auto input = input_format::decode(std::as_bytes(std::span(data, size)));
    std::span<const std::byte> stream = input.stream;
    check_mpa(stream);
    if ((input.flags & input_format::kMpaFirst) != 0) {
        const auto request = parse_mpa_frame(stream, MpaFrameKind::request);
        if (!request)
            return 0;
        stream = stream.subspan(request->size);
    }
    run_stream(input, stream);
    return 0;
}
