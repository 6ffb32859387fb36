// The shm transport's building blocks used together the way the transport will use them
// (docs/transport.md, "shm"): a listener registers its endpoint; a connecting process finds
// it in the registry, connects to its socket and receives the connection's segment (one ring
// each way); it asks over its ring for a cross-memory read of its buffer; the listener reads
// it with process_vm_readv and answers; each side watches the other's pidfd while it waits.
#include "providers/soft/os/cross_memory.hpp"
#include "providers/soft/os/peer_watch.hpp"
#include "providers/soft/shm/shm_handoff.hpp"
#include "providers/soft/shm/shm_registry.hpp"
#include "providers/soft/shm/shm_ring.hpp"
#include "providers/soft/shm/shm_segment.hpp"
#include "shm_support.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <vector>

namespace {

using namespace ndk::soft::shm;
using namespace ndk::soft::os;
using namespace ndk::soft::shm::test_support;
namespace fs = std::filesystem;

constexpr std::uint32_t kSlots = 16;
constexpr std::uint32_t kSlotSize = 64;
constexpr std::size_t kRingBytes = ShmRing::bytes_for(kSlots, kSlotSize); // a multiple of 64
constexpr std::size_t kBuffer = 256 * 1024;

// The connection's segment: the listener's ring to the connector, then the reverse.
std::span<std::byte> to_connector(const ShmSegment &s) { return s.bytes().subspan(0, kRingBytes); }
std::span<std::byte> to_listener(const ShmSegment &s)
{
    return s.bytes().subspan(kRingBytes, kRingBytes);
}

// A read request: where the bytes are in the requester, and how many.
struct ReadRequest {
    std::uint64_t address;
    std::uint64_t length;
};

std::byte pattern(std::size_t i) { return static_cast<std::byte>((i * 7 + i / 251) & 0xff); }

// The connecting process: 0 when the listener read its buffer and answered.
int connector(const fs::path &registry_dir)
{
    std::vector<std::byte> buffer(kBuffer);
    for (std::size_t i = 0; i < kBuffer; ++i)
        buffer[i] = pattern(i);
    const auto listener = EndpointRegistry(registry_dir).find("192.0.2.1", 7000);
    if (!listener)
        return 2;
    auto watch = PeerWatch::open(listener->owner);
    if (!watch)
        return 3;
    UniqueFd connection = connect_abstract(listener->socket_name);
    std::byte tag[1];
    std::size_t received = 0;
    ShmSegment segment = ShmSegment::adopt(receive_fd(connection.get(), tag, received));
    RingProducer requests(to_listener(segment));
    RingConsumer answers(to_connector(segment));
    const ReadRequest request{reinterpret_cast<std::uintptr_t>(buffer.data()), kBuffer};
    if (requests.try_push(std::as_bytes(std::span(&request, 1))) != RingStatus::ok)
        return 4;
    std::byte answer[kSlotSize];
    std::size_t length = 0;
    if (!pop_while_alive(answers, *watch, answer, length))
        return 5;
    return length == 2 && std::memcmp(answer, "ok", 2) == 0 ? 0 : 6;
}

using ShmConnection = ShmRegistryDirTest;

TEST_F(ShmConnection, ConnectorFindsTheListenerAndItsBufferIsReadAcrossProcesses)
{
    const PtracePolicy policy = ptrace_policy();
    if (policy == PtracePolicy::none || (policy == PtracePolicy::admin_only && ::geteuid() != 0))
        GTEST_SKIP() << "Yama ptrace_scope (/proc/sys/kernel/yama/ptrace_scope) forbids cross-memory copies into a child here: set it to 0 or 1, or run as root under 2";
    // Listen, then register: a connector that finds the entry finds a socket to connect to.
    EndpointRegistry registry(dir_);
    const std::string socket_name = unique_name("listener");
    UniqueFd listener = listen_abstract(socket_name);
    const ProcessIdentity self = self_identity();
    ASSERT_EQ(registry.add({"192.0.2.1", 7000, self, socket_name}), AddResult::added);

    Child child = Child::spawn([&] { return connector(dir_); });
    const PeerWatch watch = watch_child(child);
    UniqueFd connection = accept_while_alive(listener.get(), watch);
    ASSERT_EQ(peer_credentials(connection.get()).uid, ::geteuid());
    ShmSegment segment = ShmSegment::create("connection", 2 * kRingBytes);
    ShmRing::format(to_connector(segment), kSlots, kSlotSize);
    ShmRing::format(to_listener(segment), kSlots, kSlotSize);
    const std::byte one[1] = {std::byte{1}};
    send_fd(connection.get(), segment.fd(), one);

    RingConsumer requests(to_listener(segment));
    RingProducer answers(to_connector(segment));
    ReadRequest request{};
    std::size_t length = 0;
    ASSERT_TRUE(pop_while_alive(requests, watch, std::as_writable_bytes(std::span(&request, 1)),
                                length));
    ASSERT_EQ(length, sizeof request);
    ASSERT_EQ(request.length, kBuffer);
    std::vector<std::byte> copy(kBuffer);
    const iovec local[] = {{copy.data(), copy.size()}};
    const iovec remote[] = {{reinterpret_cast<void *>(request.address), request.length}};
    const CopyResult read = read_from(child.pid(), local, remote);
    ASSERT_EQ(read.status, CopyStatus::ok) << to_string(read.status);
    ASSERT_EQ(read.bytes, kBuffer);
    for (std::size_t i = 0; i < kBuffer; ++i)
        ASSERT_EQ(copy[i], pattern(i)) << i;
    ASSERT_EQ(answers.try_push(std::as_bytes(std::span("ok", 2))), RingStatus::ok);
    EXPECT_EQ(child.wait(), 0);

    // The connector is gone: its memory with it, and the endpoint stays ours until removed.
    EXPECT_EQ(read_from(watch.pid(), local, remote).status, CopyStatus::peer_gone);
    EXPECT_EQ(registry.find("192.0.2.1", 7000)->owner, self);
    EXPECT_TRUE(registry.remove("192.0.2.1", 7000, self));
}

} // namespace
