// CRC32c (core/src/providers/soft/iwarp/crc32c.hpp): RFC 3720 B.4's known answers on the
// table path and on the SSE4.2 path, the byte order MPA sends it in, and chaining.
#include "iwarp_support.hpp"
#include "providers/soft/iwarp/crc32c.hpp"
#include "providers/soft/iwarp/wire_bytes.hpp"

#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <string_view>

namespace {

using namespace ndk::soft::iwarp;
using namespace ndk::soft::iwarp::test_support;

using CrcFunction = std::function<std::uint32_t(std::span<const std::byte>, std::uint32_t)>;

struct KnownAnswer {
    const char *name;
    std::vector<std::byte> data;
    std::uint32_t crc;
};

std::vector<KnownAnswer> rfc3720_b4()
{
    std::vector<std::byte> incrementing(32), decrementing(32);
    for (unsigned i = 0; i < 32; ++i) {
        incrementing[i] = static_cast<std::byte>(i);
        decrementing[i] = static_cast<std::byte>(31 - i);
    }
    // The iSCSI SCSI Read (10) command PDU of B.4, 48 bytes.
    const auto read_command = bytes_of({0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
                                        0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00,
                                        0x00, 0x18, 0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                        0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00});
    return {
        {"32 zeros", std::vector<std::byte>(32, std::byte{0x00}), 0x8a9136aa},
        {"32 0xff", std::vector<std::byte>(32, std::byte{0xff}), 0x62a8ab43},
        {"incrementing", incrementing, 0x46dd794e},
        {"decrementing", decrementing, 0x113fdb5c},
        {"iSCSI read command", read_command, 0xd9963a56},
    };
}

void expect_known_answers(const CrcFunction &crc)
{
    for (const auto &answer : rfc3720_b4())
        EXPECT_EQ(crc(answer.data, 0), answer.crc) << answer.name;
    const std::string_view check = "123456789"; // the catalogue's check value for CRC-32C
    EXPECT_EQ(crc(std::as_bytes(std::span(check)), 0), 0xe3069283u);
    EXPECT_EQ(crc({}, 0), 0u);
}

TEST(Crc32c, PortableKnownAnswers)
{
    expect_known_answers(crc32c_portable);
}

TEST(Crc32c, HardwareKnownAnswers)
{
    if (!crc32c_hardware_available())
        GTEST_SKIP() << "no SSE4.2 on this CPU (the portable path is what runs)";
    expect_known_answers(crc32c_hardware);
}

TEST(Crc32c, DispatchedKnownAnswers)
{
    expect_known_answers([](auto data, auto crc) { return crc32c(data, crc); });
}

// B.4 writes the digests as the bytes on the wire: "aa 36 91 8a" for 32 zeros.
TEST(Crc32c, SentLeastSignificantByteFirst)
{
    std::array<std::byte, 4> wire{};
    wire::store_le32(wire.data(), crc32c(std::vector<std::byte>(32, std::byte{0})));
    EXPECT_EQ(std::vector<std::byte>(wire.begin(), wire.end()), bytes_of({0xaa, 0x36, 0x91, 0x8a}));
    EXPECT_EQ(wire::load_le32(wire.data()), 0x8a9136aau);
}

// Every length and alignment the 8-byte loops and their tails see, both paths agreeing, and
// a CRC continued over pieces equal to the CRC of the whole.
TEST(Crc32c, PathsAgreeAndChain)
{
    const auto data = pattern(300, 7);
    for (std::size_t start = 0; start < 9; ++start)
        for (std::size_t size = 0; start + size <= data.size(); size += 13) {
            const auto piece = std::span(data).subspan(start, size);
            const std::uint32_t whole = crc32c_portable(piece);
            ASSERT_EQ(crc32c_hardware(piece), whole) << start << "+" << size;
            for (std::size_t cut : {std::size_t{0}, size / 3, size}) {
                const std::uint32_t first = crc32c(piece.first(cut));
                ASSERT_EQ(crc32c(piece.subspan(cut), first), whole) << cut;
                ASSERT_EQ(crc32c_portable(piece.subspan(cut), crc32c_portable(piece.first(cut))),
                          whole);
            }
        }
}

// Runs long enough for the hardware path's three chains (12 KiB stripes of three 4 KiB
// blocks, joined by shifting the first two over the rest): every stripe count up to a 64 KiB
// FPDU's, with tails of every length class and unaligned starts, continued from a nonzero
// CRC, against the portable path.
TEST(Crc32c, ThreeChainsAgreeWithThePortablePath)
{
    const auto data = pattern(3 * 65536 + 64, 11);
    for (std::size_t start : {std::size_t{0}, std::size_t{3}, std::size_t{8}})
        for (std::size_t size : {std::size_t{12287}, std::size_t{12288}, std::size_t{12289},
                                 std::size_t{12288 + 4095}, std::size_t{24576 + 7},
                                 std::size_t{65536}, std::size_t{65536 + 13},
                                 std::size_t{3 * 65536}}) {
            const auto piece = std::span(data).subspan(start, size);
            ASSERT_EQ(crc32c_hardware(piece), crc32c_portable(piece)) << start << "+" << size;
            ASSERT_EQ(crc32c_hardware(piece, 0x12345678u), crc32c_portable(piece, 0x12345678u))
                << start << "+" << size;
        }
}

} // namespace
