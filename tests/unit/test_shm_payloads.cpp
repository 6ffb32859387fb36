// The soft data path's bytes in shm messages (core/src/providers/soft/shm/shm_payloads.*):
// spans described by the initiator in each payload form, through encode and decode, taken by
// the target side as a source (a Send) or a sink (a Read); this process plays both sides, as
// two adapters of one process do on the shm transport.
#include "providers/soft/shm/shm_payloads.hpp"
#include "shm_payload_support.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <numeric>
#include <variant>
#include <vector>

namespace {

using namespace ndk::soft;

using shm::test_support::kMaxMessage;
using shm::test_support::through_slot;

SlotRoom send_room()
{
    return {shm::max_inline_send(kMaxMessage),
            shm::max_slot_vectors(kMaxMessage, shm::MessageType::send)};
}

// `buffer` cut into pieces of `piece` bytes.
Spans cut(std::vector<unsigned char> &buffer, std::size_t piece)
{
    Spans spans;
    for (std::size_t at = 0; at < buffer.size(); at += piece)
        spans.push_back({buffer.data() + at, std::min(piece, buffer.size() - at)});
    return spans;
}

std::vector<unsigned char> pattern(std::size_t size, unsigned seed)
{
    std::vector<unsigned char> bytes(size);
    for (std::size_t i = 0; i < size; ++i)
        bytes[i] = static_cast<unsigned char>((i * 7 + seed) % 253);
    return bytes;
}


struct SendCase {
    std::size_t size, piece;
    shm::PayloadForm form;
};

class SoftShmSendPayload : public testing::TestWithParam<SendCase> {};

TEST_P(SoftShmSendPayload, ReachesTheReceiveBuffersByteExact)
{
    const SendCase c = GetParam();
    std::vector<unsigned char> source = pattern(c.size, 3);
    std::vector<shm::WireVector> list;
    shm::Payload payload = outgoing_payload(cut(source, c.piece), send_room(), list);
    ASSERT_EQ(payload.form, c.form);
    std::vector<std::byte> slot;
    shm::Message received =
        through_slot(shm::Send{.sequence = 1, .payload = payload}, slot);
    ASSERT_TRUE(std::holds_alternative<shm::Send>(received));

    shm::PeerMappings mappings;
    IncomingPayload incoming;
    ASSERT_TRUE(incoming.open(::getpid(), std::get<shm::Send>(received).payload, mappings));
    ASSERT_EQ(incoming.length(), c.size);
    std::vector<unsigned char> receive(c.size + 64, 0xee); // a larger posted receive
    ASSERT_TRUE(incoming.copy_to(cut(receive, 1000)));
    EXPECT_TRUE(std::equal(source.begin(), source.end(), receive.begin()));
    EXPECT_EQ(receive[c.size], 0xee) << "a byte past the payload was written";
}

INSTANTIATE_TEST_SUITE_P(
    Forms, SoftShmSendPayload,
    testing::Values(SendCase{0, 1, shm::PayloadForm::inline_bytes},
                    SendCase{64, 64, shm::PayloadForm::inline_bytes},
                    SendCase{64, 20, shm::PayloadForm::vectors},
                    SendCase{30000, 10000, shm::PayloadForm::vectors},
                    SendCase{9000, 3, shm::PayloadForm::vector_list}));

// A small Send's bytes taken straight from the slot (the target's common path, no vectors to
// open): scattered over a receive of many pieces, byte-exact, nothing past them written.
TEST(SoftShmInlinePayload, ScattersOverTheReceivesPiecesByteExact)
{
    std::vector<unsigned char> source = pattern(64, 5);
    const Span bytes = inline_span(std::as_bytes(std::span(source)));
    LocalPayload payload(std::span(&bytes, 1));
    ASSERT_EQ(payload.length(), 64u);
    std::vector<unsigned char> receive(100, 0xee);
    ASSERT_TRUE(payload.copy_to(cut(receive, 7)));
    EXPECT_TRUE(std::equal(source.begin(), source.end(), receive.begin()));
    EXPECT_EQ(receive[64], 0xee) << "a byte past the payload was written";
}

TEST(SoftShmReadPayload, TheResponseIsPushedIntoTheInitiatorsSink)
{
    std::vector<unsigned char> sink(20000, 0);
    std::vector<shm::WireVector> list;
    // A Read's sink never travels inline: the slot has no room for the response.
    shm::Payload payload = outgoing_payload(
        cut(sink, 700), {0, shm::max_slot_vectors(kMaxMessage, shm::MessageType::read_request)},
        list);
    ASSERT_NE(payload.form, shm::PayloadForm::inline_bytes);
    std::vector<std::byte> slot;
    shm::Payload sink_at_target = shm::test_support::read_sink_through_slot(payload, slot);

    shm::PeerMappings mappings;
    IncomingPayload incoming;
    ASSERT_TRUE(incoming.open(::getpid(), sink_at_target, mappings));
    std::vector<unsigned char> region = pattern(sink.size(), 5); // the target's registered memory
    ASSERT_TRUE(incoming.copy_from(cut(region, 4096)));
    EXPECT_EQ(sink, region);
}

TEST(SoftShmPayload, VectorsThatDoNotAddUpToTheTotalAreRefused)
{
    std::vector<unsigned char> source = pattern(100, 1);
    std::vector<shm::WireVector> list;
    shm::Payload payload = outgoing_payload(cut(source, 10), send_room(), list);
    ASSERT_EQ(payload.form, shm::PayloadForm::vectors);
    payload.total_length += 1; // what a buggy or hostile initiator might announce
    shm::PeerMappings mappings;
    IncomingPayload incoming;
    EXPECT_FALSE(incoming.open(::getpid(), payload, mappings));
    EXPECT_EQ(incoming.status(), shm::PeerVectorsStatus::malformed);
    EXPECT_FALSE(incoming.copy_from(cut(source, 10))) << "no vectors: nothing to push into";
}

} // namespace
