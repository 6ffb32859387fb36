// Helpers of the iWARP codec's tests (test_iwarp_*.cpp): byte buffers from literals and
// patterns, so that expected wire images read as the RFC figures do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

namespace ndk::soft::iwarp::test_support {

inline std::vector<std::byte> bytes_of(std::initializer_list<unsigned> values)
{
    std::vector<std::byte> out;
    for (unsigned v : values)
        out.push_back(static_cast<std::byte>(v));
    return out;
}

// n bytes of a pattern that differs per seed and position (so a misplaced byte shows).
inline std::vector<std::byte> pattern(std::size_t n, unsigned seed)
{
    std::vector<std::byte> out(n);
    for (std::size_t i = 0; i < n; ++i)
        out[i] = static_cast<std::byte>(seed * 131 + i * 7 + (i >> 8));
    return out;
}

inline std::vector<std::byte> concat(std::initializer_list<std::span<const std::byte>> parts)
{
    std::vector<std::byte> out;
    for (auto part : parts)
        out.insert(out.end(), part.begin(), part.end());
    return out;
}

} // namespace ndk::soft::iwarp::test_support
