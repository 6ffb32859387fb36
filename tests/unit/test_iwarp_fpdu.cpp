// MPA FPDU framing and reassembly (core/src/providers/soft/iwarp/mpa_fpdu.hpp): the wire
// image with pad and CRC, a stream cut at every point, and each error from a crafted stream.
#include "iwarp_support.hpp"
#include "providers/soft/iwarp/crc32c.hpp"
#include "providers/soft/iwarp/mpa_fpdu.hpp"
#include "providers/soft/iwarp/wire_bytes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

namespace {

using namespace ndk::soft::iwarp;
using namespace ndk::soft::iwarp::test_support;

TEST(IwarpFpdu, SizesAndMulpdu)
{
    EXPECT_EQ(fpdu_pad(14), 0u); // 2 + 14 = 16
    EXPECT_EQ(fpdu_pad(15), 3u);
    EXPECT_EQ(fpdu_pad(17), 1u);
    EXPECT_EQ(fpdu_size(18, true), 24u);
    EXPECT_EQ(fpdu_size(19, false), 24u);
    EXPECT_EQ(mulpdu_for_emss(1460), 1454u); // 1460 mod 4 = 0
    EXPECT_EQ(mulpdu_for_emss(1461), 1454u);
    EXPECT_EQ(mulpdu_for_emss(10), 0u);
    for (std::size_t emss = 64; emss < 9000; emss += 7)
        EXPECT_LE(fpdu_size(mulpdu_for_emss(emss), true), emss) << emss;
}

// Length, ULPDU, zero pad to a multiple of 4, then the CRC of all that, LSB first.
TEST(IwarpFpdu, WireImage)
{
    const auto ulpdu = pattern(15, 1);
    const auto fpdu = encode_fpdu(ulpdu, true);
    ASSERT_EQ(fpdu.size(), 2u + 15 + 3 + 4);
    EXPECT_EQ(fpdu[0], std::byte{0});
    EXPECT_EQ(fpdu[1], std::byte{15});
    EXPECT_TRUE(std::equal(ulpdu.begin(), ulpdu.end(), fpdu.begin() + 2));
    EXPECT_EQ(fpdu[17], std::byte{0});
    EXPECT_EQ(fpdu[18], std::byte{0});
    EXPECT_EQ(fpdu[19], std::byte{0});
    EXPECT_EQ(wire::load_le32(fpdu.data() + 20), crc32c(std::span(fpdu).first(20)));
    EXPECT_EQ(encode_fpdu(ulpdu, false), std::vector<std::byte>(fpdu.begin(), fpdu.begin() + 20));

    // Framing from pieces gives the same bytes as from one buffer.
    const auto framing =
        frame_fpdu({std::span(ulpdu).first(4), std::span(ulpdu).subspan(4)}, true);
    EXPECT_EQ(concat({framing.length, ulpdu, framing.trailer_bytes()}), fpdu);
    EXPECT_THROW(encode_fpdu(std::vector<std::byte>(kMpaMaxUlpdu + 1), false),
                 std::invalid_argument);
}

// Three FPDUs of different pads, fed in chunks of every size from 1 byte up: each comes out
// whole and in order, nothing is left pending.
// Every complete ULPDU the reassembler holds, appended to `out`.
void take_complete(FpduReassembler &reassembler, std::vector<std::vector<std::byte>> &out)
{
    for (FpduStep step = reassembler.next(); step.status != FpduStatus::need_more;
         step = reassembler.next()) {
        ASSERT_EQ(step.status, FpduStatus::complete);
        out.emplace_back(step.ulpdu.begin(), step.ulpdu.end());
    }
}

TEST(IwarpFpdu, ReassemblesAnyChunking)
{
    for (bool crc : {false, true}) {
        const std::vector<std::vector<std::byte>> ulpdus = {pattern(14, 1), pattern(100, 2),
                                                            pattern(kMpaMaxUlpdu, 3), pattern(17, 4)};
        std::vector<std::byte> stream;
        for (const auto &u : ulpdus) {
            const auto f = encode_fpdu(u, crc);
            stream.insert(stream.end(), f.begin(), f.end());
        }
        for (std::size_t chunk : {1u, 2u, 3u, 5u, 64u, 1000u, 70000u, 200000u}) {
            FpduReassembler reassembler(crc);
            std::vector<std::vector<std::byte>> out;
            for (std::size_t at = 0; at < stream.size(); at += chunk) {
                reassembler.push(std::span(stream).subspan(at, std::min(chunk, stream.size() - at)));
                take_complete(reassembler, out);
            }
            EXPECT_EQ(out, ulpdus) << "crc " << crc << " chunk " << chunk;
            EXPECT_EQ(reassembler.pending(), 0u);
        }
    }
}

// A reader that reads straight into the reassembler (space(), filled()) rather than pushing
// a copy: reads of any size, some filling less than the room given, and many FPDUs' worth
// through one buffer, so that what was handed out is moved away while an FPDU is half in.
TEST(IwarpFpdu, ReassemblesReadsIntoItsSpace)
{
    for (bool crc : {false, true}) {
        std::vector<std::vector<std::byte>> ulpdus;
        std::vector<std::byte> stream;
        for (unsigned i = 0; i < 40; ++i) {
            ulpdus.push_back(pattern(i % 3 == 0 ? kMpaMaxUlpdu : 14 + i * 997 % 30000, i));
            const auto f = encode_fpdu(ulpdus.back(), crc);
            stream.insert(stream.end(), f.begin(), f.end());
        }
        for (std::size_t room : {1u, 7u, 4096u, 65536u}) {
            FpduReassembler reassembler(crc);
            std::vector<std::vector<std::byte>> out;
            for (std::size_t at = 0, read = 0; at < stream.size(); at += read, ++room) {
                const std::span<std::byte> space = reassembler.space(room);
                ASSERT_GE(space.size(), room);
                read = std::min({space.size(), stream.size() - at, room + room / 2});
                std::copy_n(stream.begin() + static_cast<std::ptrdiff_t>(at), read, space.begin());
                reassembler.filled(read);
                take_complete(reassembler, out);
            }
            EXPECT_EQ(out, ulpdus) << "crc " << crc << " room " << room;
            EXPECT_EQ(reassembler.pending(), 0u);
        }
    }
}

FpduStatus first_error(std::span<const std::byte> stream, bool crc, std::size_t max_ulpdu)
{
    FpduReassembler reassembler(crc, max_ulpdu);
    reassembler.push(stream);
    FpduStep step = reassembler.next();
    while (step.status == FpduStatus::complete)
        step = reassembler.next();
    // Errors are final: more bytes do not revive the stream.
    if (step.status != FpduStatus::need_more) {
        reassembler.push(encode_fpdu(pattern(20, 9), crc));
        EXPECT_EQ(reassembler.next().status, step.status);
    }
    return step.status;
}

TEST(IwarpFpdu, EveryError)
{
    const auto good = encode_fpdu(pattern(40, 1), true);
    EXPECT_EQ(first_error(good, true, kMpaMaxUlpdu), FpduStatus::need_more);

    EXPECT_EQ(first_error(bytes_of({0x00, 0x0d}), true, kMpaMaxUlpdu), FpduStatus::bad_length);
    EXPECT_EQ(first_error(bytes_of({0x00, 0x00}), false, kMpaMaxUlpdu), FpduStatus::bad_length);
    // Decided from the length alone, before the FPDU's body arrives.
    EXPECT_EQ(first_error(bytes_of({0x00, 0x29}), true, 40), FpduStatus::exceeds_mulpdu);
    EXPECT_EQ(first_error(good, true, 39), FpduStatus::exceeds_mulpdu);

    for (std::size_t flip : {std::size_t{1}, std::size_t{2}, std::size_t{30}, good.size() - 1}) {
        auto bad = good;
        bad[flip] ^= std::byte{0x10};
        // A flip in the length makes it another length: that FPDU is incomplete, not bad.
        const auto status = first_error(concat({bad, good, good}), true, kMpaMaxUlpdu);
        EXPECT_EQ(status, FpduStatus::crc_mismatch) << flip;
    }
    // The second FPDU broken, after a good one was handed out.
    auto second = good;
    second[10] ^= std::byte{1};
    EXPECT_EQ(first_error(concat({good, second}), true, kMpaMaxUlpdu), FpduStatus::crc_mismatch);
    // Without CRC the same flips pass: MPA cannot see them.
    const auto plain = encode_fpdu(pattern(40, 1), false);
    auto flipped = plain;
    flipped[30] ^= std::byte{0x10};
    EXPECT_EQ(first_error(flipped, false, kMpaMaxUlpdu), FpduStatus::need_more);
}

TEST(IwarpFpdu, PendingTellsACutStream)
{
    const auto good = encode_fpdu(pattern(40, 1), true);
    FpduReassembler reassembler(true);
    reassembler.push(std::span(good).first(good.size() - 1));
    EXPECT_EQ(reassembler.next().status, FpduStatus::need_more);
    EXPECT_EQ(reassembler.pending(), good.size() - 1);
}

} // namespace
