// What the tests of shm payloads share (test_shm_payloads.cpp, test_shm_peer_mappings.cpp): the
// default slot's room and a message taken through a slot as the ring carries it.
#pragma once

#include "providers/soft/shm/shm_messages.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <variant>
#include <vector>

namespace ndk::soft::shm::test_support {

inline constexpr std::size_t kMaxMessage = 508; // a 512-byte slot less its length word

// `message` encoded into a slot, then decoded from the slot's bytes (kept in `slot`).
inline Message through_slot(const Message &message, std::vector<std::byte> &slot)
{
    slot.assign(kMaxMessage, std::byte{0});
    std::size_t length = encode(message, slot);
    EXPECT_GT(length, 0u) << "the message did not fit the slot";
    slot.resize(length);
    return decode(slot);
}

// A Read Request with `sink` through a slot: the sink as the responder decodes it (an empty
// payload, after a test failure, when the message did not decode).
inline Payload read_sink_through_slot(const Payload &sink, std::vector<std::byte> &slot)
{
    Message received = through_slot(
        ReadRequest{.sequence = 2, .remote_address = 0x1000, .remote_token = 9, .sink = sink},
        slot);
    EXPECT_TRUE(std::holds_alternative<ReadRequest>(received));
    auto *request = std::get_if<ReadRequest>(&received);
    return request ? request->sink : Payload{};
}

} // namespace ndk::soft::shm::test_support
