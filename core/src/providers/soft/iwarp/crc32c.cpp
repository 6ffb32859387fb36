#include "providers/soft/iwarp/crc32c.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace ndk::soft::iwarp {

namespace {

constexpr std::uint32_t kPolynomial = 0x82F63B78; // 0x1EDC6F41 bit-reversed (LSB-first CRC)

// kTables[0] is the classic byte-at-a-time table; kTables[k][b] is the CRC contribution of
// byte b followed by k zero bytes, which lets the loop fold eight bytes per step.
using Tables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr Tables make_tables()
{
    Tables t{};
    for (std::uint32_t b = 0; b < 256; ++b) {
        std::uint32_t crc = b;
        for (int bit = 0; bit < 8; ++bit)
            crc = (crc >> 1) ^ ((crc & 1) != 0 ? kPolynomial : 0);
        t[0][b] = crc;
    }
    for (std::size_t k = 1; k < t.size(); ++k)
        for (std::size_t b = 0; b < 256; ++b)
            t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
    return t;
}

constexpr Tables kTables = make_tables();

std::uint32_t byte_step(std::uint32_t state, std::byte b)
{
    return (state >> 8) ^ kTables[0][(state ^ std::to_integer<std::uint32_t>(b)) & 0xff];
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t sse42_update(std::uint32_t state,
                                                              const std::byte *p, std::size_t n)
{
    std::uint64_t wide = state;
    for (; n >= 8; n -= 8, p += 8) {
        std::uint64_t word;
        std::memcpy(&word, p, sizeof word); // unaligned; x86 is little-endian as the CRC is
        wide = _mm_crc32_u64(wide, word);
    }
    auto narrow = static_cast<std::uint32_t>(wide);
    for (; n > 0; --n, ++p)
        narrow = _mm_crc32_u8(narrow, std::to_integer<unsigned char>(*p));
    return narrow;
}
#endif

} // namespace

std::uint32_t crc32c_portable(std::span<const std::byte> data, std::uint32_t crc)
{
    std::uint32_t state = ~crc; // the register starts all ones and is inverted at the end
    const std::byte *p = data.data();
    std::size_t n = data.size();
    for (; n >= 8; n -= 8, p += 8) {
        const std::uint32_t low = state ^ (std::to_integer<std::uint32_t>(p[0]) |
                                           std::to_integer<std::uint32_t>(p[1]) << 8 |
                                           std::to_integer<std::uint32_t>(p[2]) << 16 |
                                           std::to_integer<std::uint32_t>(p[3]) << 24);
        state = kTables[7][low & 0xff] ^ kTables[6][(low >> 8) & 0xff] ^
                kTables[5][(low >> 16) & 0xff] ^ kTables[4][low >> 24] ^
                kTables[3][std::to_integer<std::uint32_t>(p[4])] ^
                kTables[2][std::to_integer<std::uint32_t>(p[5])] ^
                kTables[1][std::to_integer<std::uint32_t>(p[6])] ^
                kTables[0][std::to_integer<std::uint32_t>(p[7])];
    }
    for (; n > 0; --n, ++p)
        state = byte_step(state, *p);
    return ~state;
}

bool crc32c_hardware_available()
{
#if defined(__x86_64__)
    static const bool available = __builtin_cpu_supports("sse4.2");
    return available;
#else
    return false;
#endif
}

std::uint32_t crc32c_hardware(std::span<const std::byte> data, std::uint32_t crc)
{
#if defined(__x86_64__)
    if (crc32c_hardware_available())
        return ~sse42_update(~crc, data.data(), data.size());
#endif
    return crc32c_portable(data, crc);
}

std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc)
{
    return crc32c_hardware(data, crc);
}

} // namespace ndk::soft::iwarp
