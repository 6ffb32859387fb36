// The input format of fuzz_tcp_receive (fuzz_tcp_receive.cpp), shared with the unit test that
// writes its seed corpus (tests/unit/test_tcp_receive_corpus.cpp), so that the two cannot
// drift apart.
//
//   byte 0: flags
//     kRawEstablishment  the stream is the whole of what the peer sends, from its MPA request
//                        on (the establishment path); else the harness establishes the
//                        connection with the codec's frames (an MPA request, then the RTR
//                        once the reply is there) and the stream follows the RTR
//     kCrc               harness establishment: our request asks for CRC32c; raw: the
//                        consumer rejects the connect event (NdkReject)
//     kReadRtr           harness establishment: offer a Read RTR only, else a Write RTR
//                        only; raw: the consumer closes the connector without an answer
//     kFixUp             before sending, walk the FPDUs as their lengths lay them out (after
//                        the request in raw mode), relocate each one's placeholder STags
//                        (kMrStag: the adapter's registered MR, with the tagged offset
//                        counted from its start) and write its CRC, so that mutations get
//                        past MPA and reach the memory checks
//     bits 4-5           the consumer's request posted before the stream (harness
//                        establishment): none, a Send, an RDMA Write, an RDMA Read
//                        (kPostedBytes each), so that a Read Response or a Terminate can
//                        answer it
//     bits 6-7           receives posted before the connection: kReceiveCounts[n], each
//                        kReceiveBytes
//   byte 1: the number of chunk sizes that follow (low 4 bits); kPause: a pause after each
//           chunk (kPauseMicroseconds), so that the provider's read sees the cut;
//           kLateReceive: one more receive posted after the first chunk (and a pause), for a
//           Send the provider holds without one; kLongRnr: the adapter's rnr_timeout_ms is
//           kLongRnrMs (a held Send waits for the receive or the FIN), else 1 (its timer
//           races them)
//   then:   that many chunk sizes, one byte each (0 means 256), used in turn, over and over:
//           the stream is written in pieces of those sizes, one send() each
//   rest:   the byte stream
//
// What the harness knows that the seeds use: the consumer's Read names sink STag 1 at offset
// 0 in its Read Request (the provider's first sink STag on a connection), and a Send or Write
// is followed by a zero-length Read Request with sink STag 1, whose Read Response completes it.
#pragma once

#include "iwarp_fuzz_input.hpp"
#include "providers/soft/iwarp/crc32c.hpp"
#include "providers/soft/iwarp/ddp_rdmap.hpp"
#include "providers/soft/iwarp/mpa.hpp"
#include "providers/soft/iwarp/mpa_fpdu.hpp"
#include "providers/soft/iwarp/wire_bytes.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ndk::soft::iwarp::tcp_fuzz_input {

inline constexpr std::uint8_t kRawEstablishment = 0x01;
inline constexpr std::uint8_t kCrc = 0x02;
inline constexpr std::uint8_t kReadRtr = 0x04;
inline constexpr std::uint8_t kFixUp = 0x08;
inline constexpr std::uint8_t kPostShift = 4;
inline constexpr std::uint8_t kReceiveShift = 6;
inline constexpr std::uint8_t kPause = 0x10;       // in byte 1
inline constexpr std::uint8_t kLateReceive = 0x20; // in byte 1
inline constexpr std::uint8_t kLongRnr = 0x40;     // in byte 1
inline constexpr unsigned kLongRnrMs = 1000;

enum class Posted : std::uint8_t { none = 0, send = 1, write = 2, read = 3 };

inline constexpr std::array<unsigned, 4> kReceiveCounts = {0, 1, 4, 8};
inline constexpr std::size_t kReceiveBytes = 256;
inline constexpr std::size_t kPostedBytes = 64;
inline constexpr unsigned kPauseMicroseconds = 100;
// The STag a seed writes where the registered MR's remote token goes (kFixUp).
inline constexpr std::uint32_t kMrStag = 0x4d520000;
// What the harness's MR covers, and where its posted receives and requests lie in it.
inline constexpr std::size_t kMrBytes = 64 * 1024;
inline constexpr std::size_t kReceiveOffset = 0x8000;
inline constexpr std::size_t kPostedOffset = 0xc000;
// Our IRD and ORD (the request's, and NDK's Accept).
inline constexpr std::uint16_t kReadDepth = 4;

struct Input {
    std::uint8_t flags = 0;
    bool pause = false;
    bool late_receive = false;
    bool long_rnr = false;
    std::vector<std::size_t> chunks;
    std::span<const std::byte> stream;

    bool raw() const { return (flags & kRawEstablishment) != 0; }
    Posted posted() const { return static_cast<Posted>((flags >> kPostShift) & 3); }
    unsigned receives() const { return kReceiveCounts[(flags >> kReceiveShift) & 3]; }
};

inline Input decode(std::span<const std::byte> data)
{
    Input input;
    if (data.size() < 2)
        return input;
    input.flags = std::to_integer<std::uint8_t>(data[0]);
    const auto second = std::to_integer<std::uint8_t>(data[1]);
    input.pause = (second & kPause) != 0;
    input.late_receive = (second & kLateReceive) != 0;
    input.long_rnr = (second & kLongRnr) != 0;
    input.stream = fuzz_input::take_chunks(data.subspan(2), second & 0x0f, input.chunks);
    return input;
}

// `second`: byte 1's flags (kPause, kLateReceive, kLongRnr).
inline std::vector<std::byte> encode(std::uint8_t flags, std::uint8_t second,
                                     std::span<const std::uint8_t> chunks,
                                     std::span<const std::byte> stream)
{
    const auto count = static_cast<std::uint8_t>(chunks.size() < 0x0f ? chunks.size() : 0x0f);
    std::vector<std::byte> out{std::byte{flags}, static_cast<std::byte>(count | (second & 0xf0))};
    for (std::size_t i = 0; i < count; ++i)
        out.push_back(std::byte{chunks[i]});
    out.insert(out.end(), stream.begin(), stream.end());
    return out;
}

inline std::uint8_t flags_of(bool raw, bool crc, bool read_rtr, bool fix_up, Posted posted,
                             unsigned receive_choice)
{
    return static_cast<std::uint8_t>((raw ? kRawEstablishment : 0) | (crc ? kCrc : 0) |
                                     (read_rtr ? kReadRtr : 0) | (fix_up ? kFixUp : 0) |
                                     (static_cast<unsigned>(posted) << kPostShift) |
                                     ((receive_choice & 3) << kReceiveShift));
}

// The request the harness sends (and a raw seed starts with): IRD and ORD kReadDepth, the
// RTR offered, CRC as asked.
inline MpaSettings request_settings(bool crc, bool read_rtr)
{
    MpaSettings s;
    s.crc = crc;
    s.ird = kReadDepth;
    s.ord = kReadDepth;
    s.rtr = read_rtr ? MpaRtrTypes{false, false, true} : MpaRtrTypes{false, true, false};
    return s;
}

// One ULPDU relocated in place: a tagged segment on kMrStag, and a Read Request whose data
// source is kMrStag, get the MR's token and its base added to their offset.
inline void relocate(std::span<std::byte> ulpdu, std::uint32_t stag, std::uint64_t base)
{
    if (ulpdu.size() < 2)
        return;
    auto fix = [&](std::size_t stag_at, std::size_t offset_at) {
        if (ulpdu.size() < offset_at + 8 || wire::load_be32(ulpdu.data() + stag_at) != kMrStag)
            return;
        wire::store_be32(ulpdu.data() + stag_at, stag);
        wire::store_be64(ulpdu.data() + offset_at,
                         wire::load_be64(ulpdu.data() + offset_at) + base);
    };
    const bool tagged = (std::to_integer<unsigned>(ulpdu[0]) & 0x80) != 0;
    const auto opcode = static_cast<RdmapOpcode>(std::to_integer<unsigned>(ulpdu[1]) & 0x0f);
    if (tagged)
        fix(2, 6); // STag, tagged offset
    else if (opcode == RdmapOpcode::read_request)
        fix(kUntaggedHeaderSize + 16, kUntaggedHeaderSize + 20); // data source STag, TO
}

// kFixUp on `stream` from `at` on: each FPDU relocated, then its CRC written (with `crc`).
inline void fix_up(std::span<std::byte> stream, std::size_t at, bool crc, std::uint32_t stag,
                   std::uint64_t base)
{
    while (at <= stream.size() && stream.size() - at >= kMpaLengthSize) {
        const std::size_t length = wire::load_be16(stream.data() + at);
        const std::size_t size = fpdu_size(length, crc);
        if (stream.size() - at < size)
            return;
        relocate(stream.subspan(at + kMpaLengthSize, length), stag, base);
        if (crc)
            wire::store_le32(stream.data() + at + size - kMpaCrcSize,
                             crc32c(stream.subspan(at, size - kMpaCrcSize)));
        at += size;
    }
}

} // namespace ndk::soft::iwarp::tcp_fuzz_input
