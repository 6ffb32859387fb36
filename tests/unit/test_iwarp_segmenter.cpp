// DDP segmentation and the receive side's order checks (core/src/providers/soft/iwarp/
// ddp_segmenter.hpp): messages of 1 B to 1 MiB cut for MULPDUs of 128 to 16384 bytes, sent
// through the whole codec (headers, FPDUs with CRC, a reassembler fed odd chunks, parse,
// order check) and placed byte-exact; then each order error.
#include "iwarp_support.hpp"
#include "providers/soft/iwarp/ddp_segmenter.hpp"
#include "providers/soft/iwarp/mpa_fpdu.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>

namespace {

using namespace ndk::soft::iwarp;
using namespace ndk::soft::iwarp::test_support;

// Sends `message` as one DDP message with header `first`, and returns what the receiver
// placed: tagged segments at their offset from the first one's, untagged at their MO.
std::vector<std::byte> send_and_place(const SegmentHeader &first,
                                      const std::vector<std::byte> &message,
                                      std::size_t max_ulpdu, DdpSequenceCheck &check,
                                      std::size_t *segments)
{
    std::vector<std::byte> stream;
    Segmenter segmenter(first, message.size(), max_ulpdu);
    *segments = 0;
    while (!segmenter.done()) {
        const SegmentPiece piece = segmenter.next();
        const HeaderBytes header = encode_segment_header(piece.header);
        const auto payload = std::span(message).subspan(piece.offset, piece.size);
        EXPECT_LE(header.size + payload.size(), max_ulpdu);
        const FpduFraming framing = frame_fpdu({header.span(), payload}, true);
        for (auto part : {std::span<const std::byte>(framing.length), header.span(), payload,
                          framing.trailer_bytes()})
            stream.insert(stream.end(), part.begin(), part.end());
        ++*segments;
    }

    std::vector<std::byte> placed(message.size());
    FpduReassembler reassembler(true, max_ulpdu);
    bool complete = false;
    const std::size_t chunk = 1 + max_ulpdu / 3; // chunks that straddle FPDUs
    for (std::size_t at = 0; at < stream.size(); at += chunk) {
        reassembler.push(std::span(stream).subspan(at, std::min(chunk, stream.size() - at)));
        for (FpduStep step = reassembler.next(); step.status == FpduStatus::complete;
             step = reassembler.next()) {
            const auto parsed = parse_segment(step.ulpdu);
            EXPECT_TRUE(parsed);
            if (!parsed)
                return {};
            const auto verdict = check.accept(parsed->header, parsed->payload.size());
            EXPECT_EQ(verdict.error, DdpSequenceError::none);
            EXPECT_FALSE(complete); // nothing after the last segment
            complete = verdict.message_complete;
            const std::size_t offset =
                is_tagged(first.opcode) ? parsed->header.tagged_offset - first.tagged_offset
                                        : parsed->header.message_offset;
            EXPECT_LE(offset + parsed->payload.size(), placed.size());
            std::copy(parsed->payload.begin(), parsed->payload.end(),
                      placed.begin() + static_cast<std::ptrdiff_t>(offset));
        }
    }
    EXPECT_TRUE(complete);
    EXPECT_EQ(reassembler.pending(), 0u);
    return placed;
}

TEST(IwarpSegmenter, MessagesFrom1BTo1MiBByteExact)
{
    const std::size_t sizes[] = {1, 3, 113, 114, 4096, 65535, 65536, 300001, 1 << 20};
    const std::size_t mulpdus[] = {128, 1454, 4096, 16384};
    unsigned seed = 0;
    for (std::size_t max_ulpdu : mulpdus) {
        DdpSequenceCheck check; // one connection: MSNs go on across messages
        std::uint32_t msn = 1;
        for (std::size_t size : sizes) {
            const auto message = pattern(size, ++seed);
            SegmentHeader write;
            write.opcode = RdmapOpcode::rdma_write;
            write.stag = 0x100 + seed;
            write.tagged_offset = 0x7000'0000'0000 + seed;
            std::size_t segments = 0;
            EXPECT_EQ(send_and_place(write, message, max_ulpdu, check, &segments), message)
                << "write " << size << " / " << max_ulpdu;
            const std::size_t tagged_room = max_ulpdu - kTaggedHeaderSize;
            EXPECT_EQ(segments, (size + tagged_room - 1) / tagged_room);

            SegmentHeader send;
            send.opcode = RdmapOpcode::send_solicited_invalidate;
            send.invalidate_stag = seed;
            send.msn = msn++;
            EXPECT_EQ(send_and_place(send, message, max_ulpdu, check, &segments), message)
                << "send " << size << " / " << max_ulpdu;
            const std::size_t untagged_room = max_ulpdu - kUntaggedHeaderSize;
            EXPECT_EQ(segments, (size + untagged_room - 1) / untagged_room);
        }
    }
}

TEST(IwarpSegmenter, ZeroLengthAndSingleSegmentMessages)
{
    SegmentHeader write;
    write.opcode = RdmapOpcode::rdma_write;
    Segmenter empty(write, 0, 128);
    ASSERT_FALSE(empty.done());
    const auto piece = empty.next();
    EXPECT_TRUE(piece.header.last);
    EXPECT_EQ(piece.size, 0u);
    EXPECT_TRUE(empty.done());
    EXPECT_THROW(empty.next(), std::logic_error);

    SegmentHeader read;
    read.opcode = RdmapOpcode::read_request;
    read.queue = kQueueReadRequest;
    EXPECT_NO_THROW(Segmenter(read, kReadRequestSize, kUntaggedHeaderSize + kReadRequestSize));
    EXPECT_THROW(Segmenter(read, kReadRequestSize, kUntaggedHeaderSize + kReadRequestSize - 1),
                 std::invalid_argument);
    EXPECT_THROW(Segmenter(write, 10, kTaggedHeaderSize), std::invalid_argument);
    write.tagged_offset = ~std::uint64_t{0} - 5;
    EXPECT_THROW(Segmenter(write, 10, 128), std::invalid_argument);
    SegmentHeader send;
    EXPECT_THROW(Segmenter(send, std::size_t{1} << 32, 128), std::invalid_argument);
}

SegmentHeader send_segment(std::uint32_t msn, std::uint32_t mo, bool last)
{
    return {.opcode = RdmapOpcode::send, .last = last, .msn = msn, .message_offset = mo};
}

SegmentHeader write_segment(std::uint32_t stag, std::uint64_t to, bool last)
{
    return {.opcode = RdmapOpcode::rdma_write, .last = last, .stag = stag, .tagged_offset = to};
}

TEST(IwarpSegmenter, UntaggedOrderErrors)
{
    DdpSequenceCheck check;
    EXPECT_EQ(check.accept(send_segment(2, 0, true), 10).error, DdpSequenceError::msn_out_of_order);
    EXPECT_EQ(check.accept(send_segment(1, 0, false), 10).error, DdpSequenceError::none);
    EXPECT_EQ(check.accept(send_segment(1, 11, false), 10).error, DdpSequenceError::mo_out_of_order);
    EXPECT_EQ(check.accept(send_segment(1, 9, false), 10).error, DdpSequenceError::mo_out_of_order);
    EXPECT_EQ(check.accept(send_segment(2, 10, true), 10).error, DdpSequenceError::msn_out_of_order);
    const auto done = check.accept(send_segment(1, 10, true), 5);
    EXPECT_EQ(done.error, DdpSequenceError::none);
    EXPECT_TRUE(done.message_complete);
    EXPECT_EQ(check.accept(send_segment(1, 0, true), 1).error, DdpSequenceError::msn_out_of_order);
    EXPECT_EQ(check.accept(send_segment(2, 0, true), 1).error, DdpSequenceError::none);

    // Queues count apart: the Read Request queue starts at MSN 1 too.
    SegmentHeader read = send_segment(1, 0, true);
    read.opcode = RdmapOpcode::read_request;
    read.queue = kQueueReadRequest;
    EXPECT_EQ(check.accept(read, 0).error, DdpSequenceError::none);
    read.queue = 3;
    EXPECT_EQ(check.accept(read, 0).error, DdpSequenceError::invalid_queue);

    DdpSequenceCheck big;
    EXPECT_EQ(big.accept(send_segment(1, 0, false), 0xffff'fff0).error, DdpSequenceError::none);
    EXPECT_EQ(big.accept(send_segment(1, 0xffff'fff0, true), 0x20).error,
              DdpSequenceError::message_too_long);
}

TEST(IwarpSegmenter, TaggedOrderErrors)
{
    DdpSequenceCheck check;
    EXPECT_EQ(check.accept(write_segment(7, 100, false), 50).error, DdpSequenceError::none);
    EXPECT_EQ(check.accept(write_segment(8, 150, false), 50).error, DdpSequenceError::stag_changed);
    EXPECT_EQ(check.accept(write_segment(7, 151, false), 50).error,
              DdpSequenceError::offset_out_of_order);
    // A Read Response may come between a Write's segments.
    SegmentHeader response = write_segment(9, 0, true);
    response.opcode = RdmapOpcode::read_response;
    EXPECT_EQ(check.accept(response, 10).error, DdpSequenceError::none);
    EXPECT_TRUE(check.accept(write_segment(7, 150, true), 50).message_complete);
    // A new message may start anywhere.
    EXPECT_EQ(check.accept(write_segment(3, 0, true), 50).error, DdpSequenceError::none);
    EXPECT_EQ(check.accept(write_segment(3, ~std::uint64_t{0} - 2, true), 50).error,
              DdpSequenceError::offset_out_of_order);
}

} // namespace
