// Zero-copy between processes (docs/transport.md, "Zero-copy"): the harness's shared
// allocations (ndk/shared_memory.hpp), the payload form that names one (shm_messages.hpp), the
// peer's allocations mapped at the target (shm_peer_mappings.hpp) and the target side copying
// through them (shm_payloads.hpp): the bytes arrive, a payload that cannot be mapped still
// arrives by cross-memory attach, a hostile region is refused at decode, and mappings are
// released as the peer frees its allocations.
#include "ndk/shared_memory.hpp"
#include "providers/soft/shm/shm_payloads.hpp"
#include "providers/soft/shm/shm_peer_mappings.hpp"
#include "shm_payload_support.hpp"
#include "shm_support.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

namespace {

using namespace ndk::soft;
using ndk::SharedMemory;
using namespace ndk::soft::shm::test_support;

using shm::test_support::kMaxMessage;
using shm::test_support::through_slot;

SlotRoom room(shm::MessageType type)
{
    return {type == shm::MessageType::read_request ? 0 : shm::max_inline_write(kMaxMessage),
            shm::max_slot_vectors(kMaxMessage, type),
            shm::max_slot_shared_vectors(kMaxMessage, type)};
}

unsigned char pattern(std::size_t i, unsigned seed)
{
    return static_cast<unsigned char>((i * 7 + seed) % 253);
}

void fill(void *data, std::size_t size, unsigned seed)
{
    auto *bytes = static_cast<unsigned char *>(data);
    for (std::size_t i = 0; i < size; ++i)
        bytes[i] = pattern(i, seed);
}

bool holds_pattern(const void *data, std::size_t size, unsigned seed)
{
    const auto *bytes = static_cast<const unsigned char *>(data);
    for (std::size_t i = 0; i < size; ++i)
        if (bytes[i] != pattern(i, seed))
            return false;
    return true;
}

// How many mappings of shared allocations this process has (/proc/self/maps).
std::size_t allocation_mappings()
{
    std::ifstream maps("/proc/self/maps");
    std::size_t count = 0;
    for (std::string line; std::getline(maps, line);)
        count += line.find("/memfd:ndk-harness-alloc") != std::string::npos;
    return count;
}


TEST(SharedMemory, IsSealedWholePagesListedUntilFreed)
{
    const std::size_t before = ndk::shared_memory_count();
    {
        SharedMemory memory(5000);
        EXPECT_EQ(memory.size(), 5000u);
        EXPECT_EQ(memory.range().size % static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)), 0u);
        EXPECT_TRUE(holds_pattern(memory.data(), 0, 0));
        EXPECT_EQ(static_cast<const unsigned char *>(memory.data())[4999], 0) << "zero-filled";
        auto *at = static_cast<unsigned char *>(memory.data()) + 100;
        ASSERT_TRUE(ndk::find_shared_memory(at, 4000));
        EXPECT_EQ(ndk::find_shared_memory(at, 4000)->base, memory.range().base);
        EXPECT_FALSE(ndk::find_shared_memory(at, memory.range().size))
            << "a range running past the allocation is not in it";
        EXPECT_EQ(ndk::shared_memory_count(), before + 1);
        const int seals = ::fcntl(memory.range().fd, F_GET_SEALS);
        EXPECT_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
                  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
    }
    EXPECT_EQ(ndk::shared_memory_count(), before);
    EXPECT_THROW(SharedMemory(0), std::invalid_argument);
    std::vector<unsigned char> plain(100);
    EXPECT_FALSE(ndk::find_shared_memory(plain.data(), plain.size()));
}

TEST(SoftShmZeroCopy, AWriteFromASharedAllocationIsCopiedThroughTheMapping)
{
    SharedMemory source(1 << 20);
    fill(source.data(), source.size(), 3);
    Spans spans = {{static_cast<unsigned char *>(source.data()), source.size()}};
    std::vector<shm::WireVector> list;
    shm::Payload payload = outgoing_payload(spans, room(shm::MessageType::write), list);
    ASSERT_EQ(payload.form, shm::PayloadForm::shared_vectors);
    std::vector<std::byte> slot;
    shm::Message received = through_slot(shm::Write{.sequence = 1, .remote_address = 0,
                                                    .remote_token = 1, .payload = payload},
                                         slot);
    ASSERT_TRUE(std::holds_alternative<shm::Write>(received));

    shm::PeerMappings mappings;
    IncomingPayload incoming;
    ASSERT_TRUE(incoming.open(::getpid(), std::get<shm::Write>(received).payload, mappings));
    EXPECT_EQ(mappings.mapped(), 0u) << "mapped before the target side's checks passed";
    std::vector<unsigned char> target(source.size() + 1, 0xee);
    ASSERT_TRUE(incoming.copy_to({{target.data(), target.size()}}));
    EXPECT_TRUE(incoming.mapped());
    EXPECT_TRUE(holds_pattern(target.data(), source.size(), 3));
    EXPECT_EQ(target.back(), 0xee) << "a byte past the payload was written";
    EXPECT_EQ(mappings.mapped(), 1u);
}

TEST(SoftShmZeroCopy, AReadsSinkInASharedAllocationIsWrittenThroughTheMapping)
{
    SharedMemory sink(20000);
    Spans spans = {{static_cast<unsigned char *>(sink.data()), 7000},
                   {static_cast<unsigned char *>(sink.data()) + 9000, 9000}};
    std::vector<shm::WireVector> list;
    shm::Payload payload = outgoing_payload(spans, room(shm::MessageType::read_request), list);
    ASSERT_EQ(payload.form, shm::PayloadForm::shared_vectors);
    std::vector<std::byte> slot;
    shm::Payload sink_at_target = shm::test_support::read_sink_through_slot(payload, slot);

    shm::PeerMappings mappings;
    IncomingPayload incoming;
    ASSERT_TRUE(incoming.open(::getpid(), sink_at_target, mappings));
    std::vector<unsigned char> region(16000);
    fill(region.data(), region.size(), 5);
    ASSERT_TRUE(incoming.copy_from({{region.data(), region.size()}}));
    EXPECT_TRUE(incoming.mapped());
    auto *bytes = static_cast<unsigned char *>(sink.data());
    EXPECT_EQ(std::memcmp(bytes, region.data(), 7000), 0);
    EXPECT_EQ(std::memcmp(bytes + 9000, region.data() + 7000, 9000), 0);
    EXPECT_EQ(bytes[7000], 0) << "the gap between the sink's pieces is untouched";
}

TEST(SoftShmZeroCopy, VectorsInPlainMemoryOrSpanningAllocationsGoByCrossMemoryAttach)
{
    SharedMemory a(4096), b(4096);
    std::vector<unsigned char> plain(4096);
    std::vector<shm::WireVector> list;
    Spans in_plain = {{plain.data(), plain.size()}};
    EXPECT_EQ(outgoing_payload(in_plain, room(shm::MessageType::write), list).form,
              shm::PayloadForm::vectors);
    Spans in_two = {{static_cast<unsigned char *>(a.data()), 4096},
                    {static_cast<unsigned char *>(b.data()), 4096}};
    EXPECT_EQ(outgoing_payload(in_two, room(shm::MessageType::write), list).form,
              shm::PayloadForm::vectors);
}

TEST(SoftShmZeroCopy, ARegionThatIsNotThePeersFileIsCopiedByCrossMemoryAttach)
{
    SharedMemory source(8192);
    fill(source.data(), source.size(), 4);
    Spans spans = {{static_cast<unsigned char *>(source.data()), source.size()}};
    std::vector<shm::WireVector> list;
    shm::Payload payload = outgoing_payload(spans, room(shm::MessageType::write), list);
    ASSERT_EQ(payload.form, shm::PayloadForm::shared_vectors);
    payload.region.inode += 1; // a descriptor that now names another file
    shm::PeerMappings mappings;
    IncomingPayload incoming;
    ASSERT_TRUE(incoming.open(::getpid(), payload, mappings));
    std::vector<unsigned char> target(source.size());
    ASSERT_TRUE(incoming.copy_to({{target.data(), target.size()}}));
    EXPECT_FALSE(incoming.mapped());
    EXPECT_TRUE(holds_pattern(target.data(), target.size(), 4));
    EXPECT_EQ(mappings.mapped(), 0u);
}

TEST(SoftShmZeroCopy, DecodeRefusesASharedVectorOutsideItsRegionOrABadRegion)
{
    SharedMemory source(8192);
    Spans spans = {{static_cast<unsigned char *>(source.data()), 4096}};
    std::vector<shm::WireVector> list;
    shm::Payload payload = outgoing_payload(spans, room(shm::MessageType::write), list);
    ASSERT_EQ(payload.form, shm::PayloadForm::shared_vectors);
    std::vector<std::byte> slot;
    auto decoded = [&](const shm::Payload &p) {
        return through_slot(shm::Write{.sequence = 1, .payload = p}, slot);
    };
    shm::Payload smaller = payload;
    smaller.region.size = 100; // the vector runs past the region
    EXPECT_TRUE(std::holds_alternative<shm::Malformed>(decoded(smaller)));
    shm::Payload wrapping = payload;
    wrapping.region.base = UINT64_MAX - 10;
    EXPECT_TRUE(std::holds_alternative<shm::Malformed>(decoded(wrapping)));
    shm::Payload no_fd = payload;
    no_fd.region.fd = -1;
    EXPECT_TRUE(std::holds_alternative<shm::Malformed>(decoded(no_fd)));
    shm::Payload reserved = payload;
    reserved.region.reserved = 1;
    EXPECT_TRUE(std::holds_alternative<shm::Malformed>(decoded(reserved)));
    EXPECT_TRUE(std::holds_alternative<shm::Write>(decoded(payload)));
}

// A peer that allocates, is mapped, and frees, 1000 times: the target keeps at most the
// allocations the peer still holds plus the one it freed last, and clear() releases them all.
TEST(SoftShmZeroCopy, MappingsGoWithThePeersAllocationsOver1000Rounds)
{
    const std::size_t baseline = allocation_mappings();
    shm::PeerMappings mappings;
    SharedMemory kept(4096);
    for (int round = 0; round < 1000; ++round) {
        SharedMemory memory(65536);
        Spans spans = {{static_cast<unsigned char *>(memory.data()), memory.size()}};
        std::vector<shm::WireVector> list;
        shm::Payload payload = outgoing_payload(spans, room(shm::MessageType::write), list);
        ASSERT_EQ(payload.form, shm::PayloadForm::shared_vectors);
        ASSERT_TRUE(mappings.map(::getpid(), payload.region)) << "round " << round;
        const auto &k = kept.range();
        ASSERT_TRUE(mappings.map(::getpid(), {k.base, k.size, k.device, k.inode, k.fd, 0}));
        ASSERT_LE(mappings.mapped(), 3u) << "round " << round;
    }
    // Ours: `kept`, mapped here by the allocation and by `mappings`, and at most one stale.
    EXPECT_LE(allocation_mappings(), baseline + 3);
    mappings.clear();
    EXPECT_EQ(mappings.mapped(), 0u);
    EXPECT_EQ(allocation_mappings(), baseline + 1) << "only `kept` itself is left";
}

// Across processes: a child's allocation opened through /proc/<child>/fd, mapped and read; once
// the child frees it, the next new mapping sweeps it out.
TEST(SoftShmZeroCopy, AChildsAllocationIsMappedAndReleasedWhenTheChildFreesIt)
{
    Pipe ready, step, release;
    Pipe regions;
    Child child = Child::spawn([&] {
        release.write_end.reset();
        step.write_end.reset();
        auto first = std::make_unique<SharedMemory>(1 << 20);
        fill(first->data(), first->size(), 11);
        SharedMemory second(4096);
        const ndk::SharedRange ranges[2] = {first->range(), second.range()};
        if (::write(regions.write_end.get(), ranges, sizeof ranges) != sizeof ranges)
            return 2;
        if (step.get() != 's')
            return 3;
        first.reset(); // freed: the parent's next new mapping drops its own
        ready.put('f');
        return release.get() == -1 ? 0 : 4;
    });
    release.read_end.reset();
    step.read_end.reset();
    ready.write_end.reset();
    regions.write_end.reset();
    ndk::SharedRange ranges[2];
    ASSERT_EQ(::read(regions.read_end.get(), ranges, sizeof ranges),
              static_cast<ssize_t>(sizeof ranges));
    auto region = [](const ndk::SharedRange &r) {
        return shm::WireRegion{r.base, r.size, r.device, r.inode, r.fd, 0};
    };

    shm::PeerMappings mappings;
    {
        std::shared_ptr<const shm::PeerMapping> mapping = mappings.map(child.pid(), region(ranges[0]));
        ASSERT_TRUE(mapping) << "the child's allocation could not be opened through /proc";
        EXPECT_TRUE(holds_pattern(mapping->local(region(ranges[0]), ranges[0].base), 1 << 20, 11));
    }
    EXPECT_EQ(mappings.mapped(), 1u);
    step.put('s');
    ASSERT_EQ(ready.get(), 'f');
    ASSERT_TRUE(mappings.map(child.pid(), region(ranges[1])));
    EXPECT_EQ(mappings.mapped(), 1u) << "the freed allocation's mapping was kept";
    release.write_end.reset();
    EXPECT_EQ(child.wait(), 0);
}

} // namespace
