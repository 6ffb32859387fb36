#include "providers/soft/iwarp/mpa_fpdu.hpp"

#include "providers/soft/iwarp/crc32c.hpp"
#include "providers/soft/iwarp/wire_bytes.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace ndk::soft::iwarp {

FpduFraming frame_fpdu(std::initializer_list<std::span<const std::byte>> ulpdu_pieces, bool crc)
{
    return frame_fpdu(std::span(ulpdu_pieces.begin(), ulpdu_pieces.size()), crc);
}

FpduFraming frame_fpdu(std::span<const std::span<const std::byte>> ulpdu_pieces, bool crc)
{
    std::size_t ulpdu_length = 0;
    for (const auto &piece : ulpdu_pieces)
        ulpdu_length += piece.size();
    if (ulpdu_length > kMpaMaxUlpdu)
        throw std::invalid_argument("MPA ULPDU above 65535 bytes");

    FpduFraming framing;
    wire::store_be16(framing.length.data(), static_cast<std::uint16_t>(ulpdu_length));
    const std::size_t pad = fpdu_pad(ulpdu_length);
    framing.trailer_size = pad; // the pad bytes are already zero
    if (crc) {
        std::uint32_t sum = crc32c(framing.length);
        for (const auto &piece : ulpdu_pieces)
            sum = crc32c(piece, sum);
        sum = crc32c(std::span<const std::byte>(framing.trailer.data(), pad), sum);
        wire::store_le32(framing.trailer.data() + pad, sum);
        framing.trailer_size += kMpaCrcSize;
    }
    return framing;
}

std::vector<std::byte> encode_fpdu(std::span<const std::byte> ulpdu, bool crc)
{
    const FpduFraming framing = frame_fpdu({ulpdu}, crc);
    std::vector<std::byte> bytes(framing.length.begin(), framing.length.end());
    bytes.insert(bytes.end(), ulpdu.begin(), ulpdu.end());
    const auto trailer = framing.trailer_bytes();
    bytes.insert(bytes.end(), trailer.begin(), trailer.end());
    return bytes;
}

FpduStep parse_fpdu(std::span<const std::byte> bytes, bool crc, std::size_t max_ulpdu)
{
    FpduStep step;
    if (bytes.size() < kMpaLengthSize)
        return step;
    const std::size_t ulpdu_length = wire::load_be16(bytes.data());
    if (ulpdu_length < kMpaMinUlpdu) {
        step.status = FpduStatus::bad_length;
        return step;
    }
    if (ulpdu_length > max_ulpdu) {
        step.status = FpduStatus::exceeds_mulpdu;
        return step;
    }
    const std::size_t size = fpdu_size(ulpdu_length, crc);
    if (bytes.size() < size)
        return step;
    if (crc) {
        const std::size_t covered = size - kMpaCrcSize;
        const std::uint32_t expected = wire::load_le32(bytes.data() + covered);
        if (crc32c(bytes.first(covered)) != expected) {
            step.status = FpduStatus::crc_mismatch;
            return step;
        }
    }
    step.status = FpduStatus::complete;
    step.ulpdu = bytes.subspan(kMpaLengthSize, ulpdu_length);
    step.size = size;
    return step;
}

void FpduReassembler::make_room(std::size_t count)
{
    if (buffer_.size() - end_ >= count)
        return;
    // What was handed out goes now: the spans next() returned were valid until this call.
    if (start_ > 0 && end_ > start_)
        std::memmove(buffer_.data(), buffer_.data() + start_, end_ - start_);
    end_ -= start_;
    start_ = 0;
    // Room for several such reads, so that the move above is rare against the bytes read.
    if (buffer_.size() - end_ < count)
        buffer_.resize(std::max(end_ + count, 4 * count));
}

void FpduReassembler::push(std::span<const std::byte> chunk)
{
    if (failed_ != FpduStatus::complete)
        return; // the stream is dead; keep nothing
    if (chunk.empty())
        return;
    make_room(chunk.size());
    std::memcpy(buffer_.data() + end_, chunk.data(), chunk.size());
    end_ += chunk.size();
}

std::span<std::byte> FpduReassembler::space(std::size_t at_least)
{
    make_room(at_least);
    return std::span(buffer_).subspan(end_);
}

void FpduReassembler::filled(std::size_t count)
{
    if (failed_ == FpduStatus::complete)
        end_ += std::min(count, buffer_.size() - end_);
}

FpduStep FpduReassembler::next()
{
    if (failed_ != FpduStatus::complete)
        return {failed_, {}, 0};
    const std::span<const std::byte> rest(buffer_.data() + start_, end_ - start_);
    const FpduStep step = parse_fpdu(rest, crc_, max_ulpdu_);
    if (step.status == FpduStatus::complete)
        start_ += step.size;
    else if (step.status != FpduStatus::need_more)
        failed_ = step.status;
    return step;
}

} // namespace ndk::soft::iwarp
