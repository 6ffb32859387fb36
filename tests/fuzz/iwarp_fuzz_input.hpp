// The input format of fuzz_iwarp (fuzz_iwarp.cpp), shared with the unit test that writes
// its seed corpus (tests/unit/test_iwarp_corpus.cpp), so that the two cannot drift apart.
//
//   byte 0: flags (kCrc, kFixCrc, kMpaFirst, and the MULPDU choice in bits 4-5)
//   byte 1: the number of chunk sizes that follow (low 4 bits)
//   then:   that many chunk sizes, one byte each (0 means 256), used in turn, over and over,
//           to cut the stream into the reads a TCP socket could return
//   rest:   the byte stream
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ndk::soft::iwarp::fuzz_input {

inline constexpr std::uint8_t kCrc = 0x01;      // the connection negotiated CRC32c
inline constexpr std::uint8_t kFixCrc = 0x02;   // the harness writes correct CRCs first, so
                                                // that mutated FPDUs reach the DDP parser
inline constexpr std::uint8_t kMpaFirst = 0x04; // the stream starts with an MPA request
inline constexpr std::array<std::size_t, 4> kMaxUlpdus = {0xffff, 128, 1454, 16384};

// The `count` chunk sizes at the front of `data` (fewer if it is shorter) into `chunks`; what
// follows them.  Shared with fuzz_tcp_receive's format (tcp_receive_fuzz_input.hpp).
inline std::span<const std::byte> take_chunks(std::span<const std::byte> data, std::size_t count,
                                              std::vector<std::size_t> &chunks)
{
    count = count < data.size() ? count : data.size();
    for (std::size_t i = 0; i < count; ++i) {
        const auto size = std::to_integer<std::size_t>(data[i]);
        chunks.push_back(size == 0 ? 256 : size);
    }
    return data.subspan(count);
}

struct Input {
    std::uint8_t flags = 0;
    std::size_t max_ulpdu = kMaxUlpdus[0];
    std::vector<std::size_t> chunks;
    std::span<const std::byte> stream;
};

inline Input decode(std::span<const std::byte> data)
{
    Input input;
    if (data.size() < 2)
        return input;
    input.flags = std::to_integer<std::uint8_t>(data[0]);
    input.max_ulpdu = kMaxUlpdus[(input.flags >> 4) & 3];
    input.stream = take_chunks(data.subspan(2), std::to_integer<std::size_t>(data[1]) & 0x0f,
                               input.chunks);
    return input;
}

inline std::vector<std::byte> encode(std::uint8_t flags, std::span<const std::uint8_t> chunks,
                                     std::span<const std::byte> stream)
{
    std::vector<std::byte> out{std::byte{flags}, static_cast<std::byte>(chunks.size() & 0x0f)};
    for (std::size_t i = 0; i < chunks.size() && i < 0x0f; ++i)
        out.push_back(std::byte{chunks[i]});
    out.insert(out.end(), stream.begin(), stream.end());
    return out;
}

} // namespace ndk::soft::iwarp::fuzz_input
