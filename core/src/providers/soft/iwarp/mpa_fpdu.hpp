// MPA's framing of the TCP byte stream into FPDUs (RFC 5044 section 4), without markers:
//
//  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//  |          ULPDU_Length         |   ULPDU (the DDP segment)     |
//  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               |
//  |   ...                                         | PAD (0-3, 0s) |
//  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//  |                     CRC32c (when negotiated)                  |
//  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// ULPDU_Length counts the ULPDU alone; the pad brings length field + ULPDU to a multiple of 4
// (section 4.2); the CRC covers length, ULPDU and pad (section 4.4) and is sent least
// significant byte first.  Markers (section 5) are never negotiated (mpa.hpp refuses a peer
// that asks), so an FPDU is always exactly these fields and the stream needs no marker
// stripping.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

namespace ndk::soft::iwarp {

inline constexpr std::size_t kMpaLengthSize = 2;
inline constexpr std::size_t kMpaCrcSize = 4;
inline constexpr std::size_t kMpaMaxUlpdu = 0xffff;
// The shortest ULPDU the DDP layer above can accept: a tagged header (ddp_rdmap.hpp).  A
// shorter length is garbage, reported at once instead of being waited for.
inline constexpr std::size_t kMpaMinUlpdu = 14;

constexpr std::size_t fpdu_pad(std::size_t ulpdu_length)
{
    return (4 - (kMpaLengthSize + ulpdu_length) % 4) % 4;
}

constexpr std::size_t fpdu_size(std::size_t ulpdu_length, bool crc)
{
    return kMpaLengthSize + ulpdu_length + fpdu_pad(ulpdu_length) + (crc ? kMpaCrcSize : 0);
}

// The largest ULPDU whose FPDU fits one TCP segment of `emss` bytes without markers
// (RFC 5044 section 4.3: MULPDU = EMSS - (6 + EMSS mod 4)).
constexpr std::size_t mulpdu_for_emss(std::size_t emss)
{
    return emss < 6 + emss % 4 + kMpaMinUlpdu ? 0 : emss - (6 + emss % 4);
}

// What goes around a ULPDU on the wire, for a sender that writes the ULPDU from where its
// pieces are (headers, then payload in place) with one writev: [length][pieces...][trailer].
struct FpduFraming {
    std::array<std::byte, kMpaLengthSize> length{};
    std::array<std::byte, 3 + kMpaCrcSize> trailer{}; // pad, then the CRC when on
    std::size_t trailer_size = 0;
    std::span<const std::byte> trailer_bytes() const { return {trailer.data(), trailer_size}; }
};

// Throws std::invalid_argument for a ULPDU above 65535 bytes.
FpduFraming frame_fpdu(std::span<const std::span<const std::byte>> ulpdu_pieces, bool crc);
FpduFraming frame_fpdu(std::initializer_list<std::span<const std::byte>> ulpdu_pieces, bool crc);
// The whole FPDU in one buffer (tests, control messages).
std::vector<std::byte> encode_fpdu(std::span<const std::byte> ulpdu, bool crc);

enum class FpduStatus {
    complete,
    need_more,      // the FPDU is not all there yet
    bad_length,     // ULPDU_Length below the shortest DDP segment
    exceeds_mulpdu, // ULPDU_Length above the receiver's limit
    crc_mismatch,   // the CRC field differs from the CRC of what arrived
};

struct FpduStep {
    FpduStatus status = FpduStatus::need_more;
    std::span<const std::byte> ulpdu; // when complete: the DDP segment, inside the input
    std::size_t size = 0;             // when complete: the FPDU's bytes, to skip
};

// The FPDU at the start of `bytes`, checked: its length within [kMpaMinUlpdu, max_ulpdu]
// (decided from the first two bytes, before the rest arrives) and its CRC when `crc`.
FpduStep parse_fpdu(std::span<const std::byte> bytes, bool crc, std::size_t max_ulpdu);

// Reassembles FPDUs from a TCP stream read in chunks of any size.  It holds the bytes in one
// buffer, consumed from an offset: a reader either push()es a chunk (a copy) or reads straight
// into space() and says how much it filled(); next() hands out one complete, checked ULPDU at a
// time.  What was handed out is dropped only when space is needed, by moving the unfinished
// FPDU behind it to the front, so the bytes are moved once per buffer's worth, not per read.
// An error is final (without markers nothing in the stream says where the next FPDU starts):
// every later next() repeats it, and the connection ends with a Terminate.
class FpduReassembler {
public:
    explicit FpduReassembler(bool crc, std::size_t max_ulpdu = kMpaMaxUlpdu)
        : crc_(crc), max_ulpdu_(max_ulpdu)
    {
    }

    void push(std::span<const std::byte> chunk);
    // At least `at_least` writable bytes after those held, for a read to fill; then filled().
    std::span<std::byte> space(std::size_t at_least);
    void filled(std::size_t count);
    // The ULPDU it returns stays valid until the next push() or space().
    FpduStep next();

    // Bytes held that are not yet a complete FPDU: nonzero at the stream's end means the
    // peer stopped in the middle of one.
    std::size_t pending() const { return end_ - start_; }

private:
    // Room for `count` more bytes after end_, moving the held ones to the front first.
    void make_room(std::size_t count);

    bool crc_;
    std::size_t max_ulpdu_;
    std::vector<std::byte> buffer_; // its size is its capacity; [start_, end_) is held
    std::size_t start_ = 0;         // first byte not yet handed out
    std::size_t end_ = 0;           // one past the last byte received
    FpduStatus failed_ = FpduStatus::complete; // complete: no error so far
};

} // namespace ndk::soft::iwarp
