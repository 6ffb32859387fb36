// Big-endian (network order) loads and stores for the iWARP headers.  The codec reads every
// field through these from a byte span whose length was checked first, never through a cast
// of the buffer to a struct: the input is a peer's bytes, unaligned and of any length.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ndk::soft::iwarp::wire {

inline std::uint16_t load_be16(const std::byte *p)
{
    return static_cast<std::uint16_t>(std::to_integer<unsigned>(p[0]) << 8 |
                                      std::to_integer<unsigned>(p[1]));
}

inline std::uint32_t load_be32(const std::byte *p)
{
    return std::uint32_t{load_be16(p)} << 16 | load_be16(p + 2);
}

inline std::uint64_t load_be64(const std::byte *p)
{
    return std::uint64_t{load_be32(p)} << 32 | load_be32(p + 4);
}

inline void store_be16(std::byte *p, std::uint16_t v)
{
    p[0] = static_cast<std::byte>(v >> 8);
    p[1] = static_cast<std::byte>(v);
}

inline void store_be32(std::byte *p, std::uint32_t v)
{
    store_be16(p, static_cast<std::uint16_t>(v >> 16));
    store_be16(p + 2, static_cast<std::uint16_t>(v));
}

inline void store_be64(std::byte *p, std::uint64_t v)
{
    store_be32(p, static_cast<std::uint32_t>(v >> 32));
    store_be32(p + 4, static_cast<std::uint32_t>(v));
}

// MPA's CRC field is the one exception: it goes out least significant byte first, as iSCSI's
// digest does (RFC 3720 B.4's examples; Linux's crc32c shash writes it so, and siw compares
// the four bytes as they came).
inline std::uint32_t load_le32(const std::byte *p)
{
    return std::to_integer<std::uint32_t>(p[0]) | std::to_integer<std::uint32_t>(p[1]) << 8 |
           std::to_integer<std::uint32_t>(p[2]) << 16 | std::to_integer<std::uint32_t>(p[3]) << 24;
}

inline void store_le32(std::byte *p, std::uint32_t v)
{
    for (int i = 0; i < 4; ++i)
        p[i] = static_cast<std::byte>(v >> (8 * i));
}

} // namespace ndk::soft::iwarp::wire
