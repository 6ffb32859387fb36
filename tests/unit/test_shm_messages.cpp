// The shm connection's wire messages (core/src/providers/soft/shm/shm_messages.*): each
// message encodes and decodes to itself, and every field a peer could get wrong decodes to
// Malformed (never a read past the bytes); a vector list too long for a slot travels by
// reference and is pulled back (shm_peer_vectors.*).
#include "providers/soft/shm/shm_messages.hpp"
#include "providers/soft/shm/shm_peer_vectors.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <deque>
#include <functional>
#include <vector>

namespace {

using namespace ndk::soft::shm;

constexpr std::size_t kSlotMessage = 508; // a 512-byte slot less its length word

std::vector<std::byte> bytes_of(const char *text)
{
    const auto *p = reinterpret_cast<const std::byte *>(text);
    return {p, p + std::strlen(text)};
}

Endpoint v4(std::uint8_t last, std::uint16_t port)
{
    Endpoint e;
    e.address = {192, 0, 2, last};
    e.port = port;
    return e;
}

// Encoded into a buffer the size of a slot's message.
std::vector<std::byte> encoded(const Message &message, std::size_t room = kSlotMessage)
{
    std::vector<std::byte> out(room);
    out.resize(encode(message, out));
    return out;
}

// A decoded message's spans point into its wire: every wire decoded here is kept for the rest
// of the run (a deque: adding one moves none of the others).
std::deque<std::vector<std::byte>> kept_wires;

template <class T>
T decoded(std::vector<std::byte> bytes)
{
    const std::vector<std::byte> &wire = kept_wires.emplace_back(std::move(bytes));
    const Message m = decode(wire);
    if (const auto *bad = std::get_if<Malformed>(&m))
        ADD_FAILURE() << "malformed: " << bad->why;
    EXPECT_TRUE(std::holds_alternative<T>(m));
    return std::holds_alternative<T>(m) ? std::get<T>(m) : T{};
}

std::vector<std::byte> as_vector(std::span<const std::byte> s) { return {s.begin(), s.end()}; }

TEST(ShmMessages, EstablishmentRoundTrips)
{
    const auto pd = bytes_of("hello from the active side");
    ConnectRequest request{v4(1, 7000), v4(2, 8000), 4, 8, {1234, 99887766}, pd};
    request.destination.family = AddressFamily::ipv6;
    request.destination.address = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    const auto wire = encoded(request);
    ASSERT_EQ(wire.size(), sizeof(WireConnectRequest) + pd.size());
    const auto back = decoded<ConnectRequest>(wire);
    EXPECT_EQ(back.source, request.source);
    EXPECT_EQ(back.destination, request.destination);
    EXPECT_EQ(back.inbound_read_limit, 4u);
    EXPECT_EQ(back.outbound_read_limit, 8u);
    EXPECT_EQ(back.sender, request.sender);
    EXPECT_EQ(as_vector(back.private_data), pd);

    const auto reply = decoded<Reply>(encoded(Reply{16, 2, pd}));
    EXPECT_EQ(reply.inbound_read_limit, 16u);
    EXPECT_EQ(reply.outbound_read_limit, 2u);
    EXPECT_EQ(as_vector(reply.private_data), pd);
    const auto reject = decoded<Reject>(encoded(Reject{std::span<const std::byte>(pd)}));
    ASSERT_TRUE(reject.private_data.has_value());
    EXPECT_EQ(as_vector(*reject.private_data), pd);
    // A Reject with no private data at all differs from one with empty private data.
    EXPECT_FALSE(decoded<Reject>(encoded(Reject{})).private_data.has_value());
    const auto empty = decoded<Reject>(encoded(Reject{std::span<const std::byte>()}));
    ASSERT_TRUE(empty.private_data.has_value());
    EXPECT_TRUE(empty.private_data->empty());
    decoded<ReadyToUse>(encoded(ReadyToUse{}));
    decoded<Abandon>(encoded(Abandon{}));
    decoded<RefuseReply>(encoded(RefuseReply{}));
    EXPECT_EQ(decoded<Disconnect>(encoded(Disconnect{DisconnectReason::abortive})).reason,
              DisconnectReason::abortive);

    // 196 bytes of private data is the most.
    const std::vector<std::byte> most(kMaxPrivateData, std::byte{7});
    EXPECT_EQ(decoded<Reply>(encoded(Reply{0, 0, most})).private_data.size(), kMaxPrivateData);
    const std::vector<std::byte> over(kMaxPrivateData + 1);
    EXPECT_THROW(encoded(Reply{0, 0, over}), std::invalid_argument);
}

TEST(ShmMessages, DataRoundTrips)
{
    const auto data = bytes_of("inline payload");
    Send send{42, true, true, 0xabcd, 2500, Payload::inline_data(data)};
    const auto s = decoded<Send>(encoded(send));
    EXPECT_EQ(s.sequence, 42u);
    EXPECT_TRUE(s.solicited);
    EXPECT_TRUE(s.invalidate);
    EXPECT_EQ(s.invalidate_token, 0xabcdu);
    EXPECT_EQ(s.rnr_timeout_ms, 2500u);
    EXPECT_EQ(s.payload.form, PayloadForm::inline_bytes);
    EXPECT_EQ(as_vector(s.payload.bytes), data);

    const WireVector vectors[] = {{0x1000, 10}, {0x5000, 20}, {0x9000, 30}};
    const auto w = decoded<Write>(encoded(Write{43, 0xfeed0000, 77, Payload::vectors_of(vectors)}));
    EXPECT_EQ(w.remote_address, 0xfeed0000u);
    EXPECT_EQ(w.remote_token, 77u);
    EXPECT_EQ(w.payload.total_length, 60u);
    ASSERT_EQ(w.payload.vector_count(), 3u);
    EXPECT_EQ(w.payload.vector(2).address, 0x9000u);
    EXPECT_EQ(w.payload.vector(2).length, 30u);

    const auto r = decoded<ReadRequest>(
        encoded(ReadRequest{44, 0xbeef, 5, Payload::vectors_of(vectors)}));
    EXPECT_EQ(r.sink.total_length, 60u);
    EXPECT_EQ(r.sink.vector_count(), 3u);

    const auto ack = decoded<Ack>(encoded(Ack{45, 0xC0000120}));
    EXPECT_EQ(ack.sequence, 45u);
    EXPECT_EQ(ack.status, 0xC0000120u);
    const auto t = decoded<Terminate>(encoded(Terminate{46, 0xC000020C}));
    EXPECT_EQ(t.status, 0xC000020Cu);
    decoded<ReceiveReady>(encoded(ReceiveReady{}));

    // Zero bytes inline is a valid (empty) Send.
    EXPECT_EQ(decoded<Send>(encoded(Send{1, false, false, 0, 0, {}})).payload.total_length, 0u);
}

// A Send's fixed part is stored field by field into the slot (encode_send: no copy of a
// WireSend built on the stack), so every byte of it, reserved fields included, must be
// written: encoded over a slot that held 0xff bytes, at the slot's offset (after its 4-byte
// length word, so not 8-aligned), it is the WireSend the layout says, byte for byte.
TEST(ShmMessages, ASendIsEncodedWhollyOverWhatTheSlotHeld)
{
    const auto data = bytes_of("sixty-four bytes, more or less");
    for (const bool invalidate : {false, true}) {
        std::vector<std::byte> slot(4 + kSlotMessage, std::byte{0xff});
        const std::span<std::byte> room(slot.data() + 4, kSlotMessage);
        const Send send{0x1122334455667788, true, invalidate, 0xabcd, 2500, Payload::inline_data(data)};
        const std::size_t length = encode(send, room);
        ASSERT_EQ(length, sizeof(WireSend) + data.size());

        WireSend expected{};
        expected.header = {static_cast<std::uint16_t>(MessageType::send),
                           static_cast<std::uint16_t>(kSolicited | (invalidate ? kInvalidate : 0)), 0};
        expected.sequence = 0x1122334455667788;
        expected.invalidate_token = invalidate ? 0xabcd : 0;
        expected.rnr_timeout_ms = 2500;
        expected.payload = {data.size(), static_cast<std::uint16_t>(PayloadForm::inline_bytes), 0,
                            static_cast<std::uint32_t>(data.size())};
        EXPECT_EQ(std::memcmp(room.data(), &expected, sizeof expected), 0);
        EXPECT_EQ(std::memcmp(room.data() + sizeof expected, data.data(), data.size()), 0);
        EXPECT_EQ(room[length], std::byte{0xff}); // nothing written past the message

        const auto s = decoded<Send>(as_vector(room.first(length)));
        EXPECT_EQ(s.sequence, 0x1122334455667788u);
        EXPECT_EQ(s.invalidate, invalidate);
        EXPECT_EQ(as_vector(s.payload.bytes), data);
    }
}

TEST(ShmMessages, WhatDoesNotFitASlotIsNotEncoded)
{
    const std::vector<std::byte> big(max_inline_send(kSlotMessage) + 1);
    EXPECT_EQ(encoded(Send{1, false, false, 0, 0, Payload::inline_data(big)}).size(), 0u);
    const std::vector<std::byte> fits(max_inline_send(kSlotMessage));
    EXPECT_EQ(encoded(Send{1, false, false, 0, 0, Payload::inline_data(fits)}).size(), kSlotMessage);
    std::vector<WireVector> many(max_slot_vectors(kSlotMessage, MessageType::write) + 1);
    EXPECT_EQ(encoded(Write{1, 0, 0, Payload::vectors_of(many)}).size(), 0u);
    many.pop_back();
    EXPECT_GT(encoded(Write{1, 0, 0, Payload::vectors_of(many)}).size(), 0u);
}

// Every field of every message, set out of range one at a time (or the bytes cut or
// extended): each must decode to Malformed.
struct Mutation {
    const char *what;
    std::function<Message()> valid;
    std::function<void(std::vector<std::byte> &)> spoil;
};

template <class T>
void poke(std::vector<std::byte> &wire, std::size_t offset, T value)
{
    ASSERT_LE(offset + sizeof value, wire.size());
    std::memcpy(wire.data() + offset, &value, sizeof value);
}

TEST(ShmMessages, EveryFieldOutOfRangeIsMalformed)
{
    static const auto pd = bytes_of("pd");
    static const std::vector<std::byte> data(16, std::byte{1});
    static const WireVector vectors[] = {{0x1000, 8}, {0x2000, 8}};
    const auto request = [] { return Message(ConnectRequest{v4(1, 1), v4(2, 2), 1, 1, {10, 20}, pd}); };
    const auto send = [] { return Message(Send{1, false, false, 0, 0, Payload::inline_data(data)}); };
    const auto vsend = [] { return Message(Send{1, false, false, 0, 0, Payload::vectors_of(vectors)}); };
    const auto write = [] { return Message(Write{1, 2, 3, Payload::vectors_of(vectors)}); };
    const auto read = [] { return Message(ReadRequest{1, 2, 3, Payload::vectors_of(vectors)}); };
    const auto list = [] {
        return Message(Write{1, 2, 3, Payload::remote_list(std::span(vectors), 16)});
    };
    const auto ack = [] { return Message(Ack{1, 0}); };
    const std::size_t source = offsetof(WireConnectRequest, source);
    const std::size_t payload = offsetof(WireTagged, payload);
    const std::size_t send_payload = offsetof(WireSend, payload);
    const std::vector<Mutation> mutations = {
        {"empty", ack, [](auto &w) { w.clear(); }},
        {"short header", ack, [](auto &w) { w.resize(7); }},
        {"unknown type", ack, [](auto &w) { poke<std::uint16_t>(w, 0, 99); }},
        {"type 0", ack, [](auto &w) { poke<std::uint16_t>(w, 0, 0); }},
        {"header reserved", ack, [](auto &w) { poke<std::uint32_t>(w, 4, 1); }},
        {"ack flags", ack, [](auto &w) { poke<std::uint16_t>(w, 2, 1); }},
        {"ack reserved", ack, [](auto &w) { poke<std::uint32_t>(w, 20, 1); }},
        {"ack cut", ack, [](auto &w) { w.pop_back(); }},
        {"ack trailing byte", ack, [](auto &w) { w.push_back(std::byte{0}); }},
        {"request cut", request, [](auto &w) { w.resize(sizeof(WireConnectRequest) - 1); }},
        {"request family", request, [=](auto &w) { poke<std::uint16_t>(w, source, 5); }},
        {"request ipv4 tail", request, [=](auto &w) { poke<std::uint8_t>(w, source + 4 + 4, 1); }},
        {"request destination family", request,
         [=](auto &w) { poke<std::uint16_t>(w, offsetof(WireConnectRequest, destination), 0); }},
        {"request pid", request,
         [](auto &w) { poke<std::int32_t>(w, offsetof(WireConnectRequest, sender), -1); }},
        {"request identity reserved", request,
         [](auto &w) { poke<std::uint32_t>(w, offsetof(WireConnectRequest, sender) + 4, 1); }},
        {"request private length over 196", request,
         [](auto &w) { poke<std::uint32_t>(w, offsetof(WireConnectRequest, private_length), 197); }},
        {"request private length past the bytes", request,
         [](auto &w) { poke<std::uint32_t>(w, offsetof(WireConnectRequest, private_length), 3); }},
        {"request reserved", request,
         [](auto &w) { poke<std::uint32_t>(w, offsetof(WireConnectRequest, reserved), 1); }},
        {"request flags", request, [](auto &w) { poke<std::uint16_t>(w, 2, 1); }},
        {"reply private length", [] { return Message(Reply{1, 1, pd}); },
         [](auto &w) { poke<std::uint32_t>(w, offsetof(WireReply, private_length), 1000); }},
        {"reply reserved", [] { return Message(Reply{1, 1, pd}); },
         [](auto &w) { poke<std::uint32_t>(w, offsetof(WireReply, reserved), 1); }},
        {"reject private length", [] { return Message(Reject{std::span<const std::byte>(pd)}); },
         [](auto &w) { poke<std::uint32_t>(w, offsetof(WireReject, private_length), 1); }},
        {"reject unknown flag", [] { return Message(Reject{std::span<const std::byte>(pd)}); },
         [](auto &w) { poke<std::uint16_t>(w, 2, 3); }},
        {"reject private data without its flag",
         [] { return Message(Reject{std::span<const std::byte>(pd)}); },
         [](auto &w) { poke<std::uint16_t>(w, 2, 0); }},
        {"refuse with a body", [] { return Message(RefuseReply{}); },
         [](auto &w) { w.push_back(std::byte{0}); }},
        {"ready with a body", [] { return Message(ReadyToUse{}); },
         [](auto &w) { w.push_back(std::byte{0}); }},
        {"abandon with flags", [] { return Message(Abandon{}); },
         [](auto &w) { poke<std::uint16_t>(w, 2, 4); }},
        {"disconnect reason 0", [] { return Message(Disconnect{}); },
         [](auto &w) { poke<std::uint32_t>(w, 8, 0); }},
        {"disconnect reason 4", [] { return Message(Disconnect{}); },
         [](auto &w) { poke<std::uint32_t>(w, 8, 4); }},
        {"send unknown flag", send, [](auto &w) { poke<std::uint16_t>(w, 2, 4); }},
        {"send token without invalidate", send,
         [](auto &w) { poke<std::uint32_t>(w, offsetof(WireSend, invalidate_token), 5); }},
        {"send form 0", send, [=](auto &w) { poke<std::uint16_t>(w, send_payload + 8, 0); }},
        {"send form 4", send, [=](auto &w) { poke<std::uint16_t>(w, send_payload + 8, 4); }},
        {"send payload reserved", send, [=](auto &w) { poke<std::uint16_t>(w, send_payload + 10, 1); }},
        {"send inline total differs", send, [=](auto &w) { poke<std::uint64_t>(w, send_payload, 15); }},
        {"send inline count past the bytes", send,
         [=](auto &w) {
             poke<std::uint64_t>(w, send_payload, 17);
             poke<std::uint32_t>(w, send_payload + 12, 17);
         }},
        {"send inline huge count", send,
         [=](auto &w) {
             poke<std::uint64_t>(w, send_payload, 0xffffffffu);
             poke<std::uint32_t>(w, send_payload + 12, 0xffffffffu);
         }},
        {"send inline cut", send, [](auto &w) { w.pop_back(); }},
        {"send vectors count past the bytes", vsend,
         [=](auto &w) { poke<std::uint32_t>(w, send_payload + 12, 3); }},
        {"send vectors huge count", vsend,
         [=](auto &w) { poke<std::uint32_t>(w, send_payload + 12, 0x10000000u); }},
        {"send vectors sum differs", vsend, [=](auto &w) { poke<std::uint64_t>(w, send_payload, 17); }},
        {"write vectors overflow", write,
         [=](auto &w) {
             poke<std::uint64_t>(w, sizeof(WireTagged) + 8, UINT64_MAX);
             poke<std::uint64_t>(w, payload, 7);
         }},
        {"write flags", write, [](auto &w) { poke<std::uint16_t>(w, 2, 1); }},
        {"write reserved", write, [](auto &w) { poke<std::uint32_t>(w, offsetof(WireTagged, reserved), 1); }},
        {"write vector cut", write, [](auto &w) { w.resize(w.size() - 8); }},
        {"read inline sink", read,
         [=](auto &w) {
             poke<std::uint16_t>(w, payload + 8, 1);
             poke<std::uint64_t>(w, payload, 32);
         }},
        {"list count 0", list, [=](auto &w) { poke<std::uint32_t>(w, payload + 12, 0); }},
        {"list count over the cap", list,
         [=](auto &w) { poke<std::uint32_t>(w, payload + 12, kMaxRemoteVectors + 1); }},
        {"list length differs from count", list,
         [=](auto &w) { poke<std::uint64_t>(w, sizeof(WireTagged) + 8, 16); }},
        {"list descriptor cut", list, [](auto &w) { w.pop_back(); }},
        {"list trailing bytes", list, [](auto &w) { w.push_back(std::byte{0}); }},
    };
    for (const Mutation &m : mutations) {
        auto wire = encoded(m.valid());
        ASSERT_FALSE(wire.empty()) << m.what;
        ASSERT_FALSE(std::holds_alternative<Malformed>(decode(wire))) << m.what << " (valid form)";
        m.spoil(wire);
        const Message result = decode(wire);
        EXPECT_TRUE(std::holds_alternative<Malformed>(result)) << m.what;
    }
}

// A list of 3000 vectors cannot travel in a slot: it goes by reference and the receiver pulls
// it (here from this very process, which process_vm_readv allows whatever ptrace_scope is).
TEST(ShmMessages, AVectorListLongerThanASlotIsPulledByReference)
{
    std::vector<std::byte> data(3000 * 3);
    std::vector<WireVector> list;
    for (std::size_t i = 0; i < 3000; ++i)
        list.push_back({reinterpret_cast<std::uintptr_t>(data.data() + 3 * i), i % 4});
    std::uint64_t total = 0;
    for (const auto &v : list)
        total += v.length;
    ASSERT_GT(list.size(), max_slot_vectors(kSlotMessage, MessageType::send));
    const auto wire = encoded(Send{9, false, false, 0, 0, Payload::remote_list(list, total)});
    ASSERT_EQ(wire.size(), sizeof(WireSend) + sizeof(WireVector));
    const auto send = decoded<Send>(wire);
    ASSERT_EQ(send.payload.form, PayloadForm::vector_list);
    std::vector<iovec> pulled;
    const PeerVectors got = peer_vectors(::getpid(), send.payload, pulled);
    ASSERT_EQ(got.status, PeerVectorsStatus::ok) << to_string(got.copy.status);
    ASSERT_EQ(pulled.size(), list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pulled[i].iov_base), list[i].address);
        EXPECT_EQ(pulled[i].iov_len, list[i].length);
    }
    // The list's lengths must add up to the announced total.
    Payload lying = send.payload;
    lying.total_length = total + 1;
    EXPECT_EQ(peer_vectors(::getpid(), lying, pulled).status, PeerVectorsStatus::malformed);
    EXPECT_TRUE(pulled.empty());
    // A list at an address that is not mapped is a failed copy, not a crash.
    lying = send.payload;
    lying.list_address = 8;
    EXPECT_EQ(peer_vectors(::getpid(), lying, pulled).status, PeerVectorsStatus::copy_failed);
}

} // namespace
