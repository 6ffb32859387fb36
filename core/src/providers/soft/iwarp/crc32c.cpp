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

// a * b mod P, both polynomials reflected as the CRC register is (bit 31 the coefficient of
// x^0): the same shift-and-reduce the register does, one bit of `a` at a time.
constexpr std::uint32_t multiply_mod(std::uint32_t a, std::uint32_t b)
{
    std::uint32_t product = 0;
    for (std::uint32_t bit = 0x80000000u; bit != 0; bit >>= 1) {
        if ((a & bit) != 0)
            product ^= b;
        b = (b & 1) != 0 ? (b >> 1) ^ kPolynomial : b >> 1; // b times x
    }
    return product;
}

// x^(8n) mod P: what running the register over n zero bytes multiplies it by.
constexpr std::uint32_t x_to_the_8n(std::size_t n)
{
    std::uint32_t result = 0x80000000u; // x^0
    std::uint32_t power = 0x00800000u;  // x^8
    for (; n != 0; n >>= 1) {
        if ((n & 1) != 0)
            result = multiply_mod(result, power);
        power = multiply_mod(power, power);
    }
    return result;
}

#if defined(__x86_64__)
std::uint64_t load_word(const std::byte *p)
{
    std::uint64_t word;
    std::memcpy(&word, p, sizeof word); // unaligned; x86 is little-endian as the CRC is
    return word;
}

// The crc32 instruction takes 3 cycles and can start one per cycle: one chain of it runs at a
// third of that.  So three blocks run as three chains side by side, the second and third from
// a zero register, and are joined after: the register is linear, so the CRC of A B C from
// `state` is crc(state, A) shifted over B and C, xor crc(0, B) shifted over C, xor crc(0, C)
// (the method of the Linux kernel's crc32c-pcl-intel, with the shifts multiplied out here).
constexpr std::size_t kStripeBlock = 4096;
constexpr std::uint32_t kShiftOneBlock = x_to_the_8n(kStripeBlock);
constexpr std::uint32_t kShiftTwoBlocks = x_to_the_8n(2 * kStripeBlock);

__attribute__((target("sse4.2"))) std::uint32_t sse42_three_chains(std::uint32_t state,
                                                                    const std::byte *&p,
                                                                    std::size_t &n)
{
    for (; n >= 3 * kStripeBlock; n -= 3 * kStripeBlock, p += 3 * kStripeBlock) {
        std::uint64_t first = state, second = 0, third = 0;
        for (std::size_t i = 0; i < kStripeBlock; i += 8) {
            first = _mm_crc32_u64(first, load_word(p + i));
            second = _mm_crc32_u64(second, load_word(p + kStripeBlock + i));
            third = _mm_crc32_u64(third, load_word(p + 2 * kStripeBlock + i));
        }
        state = multiply_mod(kShiftTwoBlocks, static_cast<std::uint32_t>(first)) ^
                multiply_mod(kShiftOneBlock, static_cast<std::uint32_t>(second)) ^
                static_cast<std::uint32_t>(third);
    }
    return state;
}

__attribute__((target("sse4.2"))) std::uint32_t sse42_update(std::uint32_t state,
                                                              const std::byte *p, std::size_t n)
{
    std::uint64_t wide = sse42_three_chains(state, p, n);
    for (; n >= 8; n -= 8, p += 8) {
        wide = _mm_crc32_u64(wide, load_word(p));
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
