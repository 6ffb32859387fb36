// A single-producer single-consumer ring of messages in memory two processes share (a
// ShmSegment).  Fixed-size slots, each a 32-bit length and the message: a connection's
// control and small-message traffic has a known upper size, and fixed slots keep both
// sides' arithmetic trivial (large payloads move by cross-memory copy, not through here).
//
// No locks: the producer alone writes `tail`, the consumer alone writes `head`; a message is
// published by the release store of `tail` after its bytes, and its slot returned by the
// release store of `head` after they were read.  So each side makes progress whenever the
// other is alive, and a side that dies mid-operation cannot leave a lock held.  The indices
// are 64-bit and only grow (slot = index % count), so full and empty differ without a spare
// slot and never wrap in practice.  Each index has its own cache line, and each side keeps a
// private copy of the other's index that it refreshes only when the ring looks full or empty,
// so in the steady state the two processes do not bounce one line between them.
//
// The peer is another process and may be buggy or gone: everything read from the shared
// header (geometry, the other side's index, a slot's length) is checked before it is used,
// and a violation is reported as `corrupt`, never followed out of bounds.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <span>
#include <stdexcept>

namespace ndk::soft::shm {

// Processes share the memory, not the atomics' implementation: only lock-free atomics work
// across address spaces (a lock-based one would take a lock in each process's own table).
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

inline constexpr std::size_t kCacheLine = 64;

struct RingHeader {
    alignas(kCacheLine) std::atomic<std::uint64_t> head; // next slot to read (consumer's)
    alignas(kCacheLine) std::atomic<std::uint64_t> tail; // next slot to write (producer's)
    // A word the producer publishes for its owner, in the tail's cache line, so that a
    // consumer polling the ring reads both in one line (the shm link's answers counter,
    // shm_link.hpp).  Written by the producer only.
    std::atomic<std::uint64_t> beside_tail;
    // Immutable after format(); `magic` is stored last (release) so that a side that sees it
    // sees the geometry too.
    alignas(kCacheLine) std::atomic<std::uint32_t> magic;
    std::uint32_t slot_count;
    std::uint32_t slot_size; // bytes per slot, length word included
};

enum class RingStatus { ok, empty, full, too_large, too_small, corrupt };

class ShmRing {
public:
    static constexpr std::uint32_t kMagic = 0x4e444b52; // "NDKR"
    static constexpr std::size_t kLengthBytes = sizeof(std::uint32_t);

    // Slots: a power of two (the slot of an index is a mask); slot size: a multiple of 8 (the
    // length word and payload stay aligned) with room for at least one payload byte.
    static constexpr bool valid_geometry(std::uint32_t slot_count, std::uint32_t slot_size)
    {
        return slot_count >= 1 && (slot_count & (slot_count - 1)) == 0 && slot_size >= 8 &&
               slot_size % 8 == 0;
    }

    static constexpr std::size_t bytes_for(std::uint32_t slot_count, std::uint32_t slot_size)
    {
        return sizeof(RingHeader) + std::size_t{slot_count} * slot_size;
    }

    // Lay a fresh ring into `region` (zeroed or reused).  Done by the side that creates the
    // segment, before it hands the segment over.  Throws std::invalid_argument.
    static void format(std::span<std::byte> region, std::uint32_t slot_count,
                       std::uint32_t slot_size)
    {
        if (!valid_geometry(slot_count, slot_size) ||
            region.size() < bytes_for(slot_count, slot_size))
            throw std::invalid_argument("shm ring geometry does not fit its region");
        if (reinterpret_cast<std::uintptr_t>(region.data()) % kCacheLine != 0)
            throw std::invalid_argument("shm ring region not cache-line aligned");
        auto *header = ::new (region.data()) RingHeader{};
        header->slot_count = slot_count;
        header->slot_size = slot_size;
        header->head.store(0, std::memory_order_relaxed);
        header->tail.store(0, std::memory_order_relaxed);
        header->beside_tail.store(0, std::memory_order_relaxed);
        header->magic.store(kMagic, std::memory_order_release);
    }

    std::uint32_t slot_count() const { return count_; }
    std::size_t max_message() const { return slot_size_ - kLengthBytes; }
    // RingHeader::beside_tail: the producer stores it, the consumer loads it.
    std::atomic<std::uint64_t> &beside_tail() const { return header_->beside_tail; }

protected:
    // Attach to a ring format() laid out (here or in the peer).  The geometry is re-checked
    // against the region (the peer wrote it) and kept in private copies, so that the peer
    // rewriting it later cannot widen our accesses.  Throws std::invalid_argument.
    explicit ShmRing(std::span<std::byte> region)
    {
        if (region.size() < sizeof(RingHeader) ||
            reinterpret_cast<std::uintptr_t>(region.data()) % kCacheLine != 0)
            throw std::invalid_argument("shm ring region too small or misaligned");
        // The header was constructed by format(), possibly in the other process: the same
        // bytes, so the object is reached through a cast, as every shared-memory ring does.
        header_ = std::launder(reinterpret_cast<RingHeader *>(region.data()));
        if (header_->magic.load(std::memory_order_acquire) != kMagic)
            throw std::invalid_argument("shm ring not formatted");
        count_ = header_->slot_count;
        slot_size_ = header_->slot_size;
        if (!valid_geometry(count_, slot_size_) || region.size() < bytes_for(count_, slot_size_))
            throw std::invalid_argument("shm ring header does not fit its region");
        slots_ = region.data() + sizeof(RingHeader);
    }

    std::byte *slot(std::uint64_t index) const
    {
        return slots_ + (index & (count_ - 1)) * std::size_t{slot_size_};
    }

    RingHeader *header_ = nullptr;
    std::byte *slots_ = nullptr;
    std::uint32_t count_ = 0;
    std::uint32_t slot_size_ = 0;
};

class RingProducer : public ShmRing {
public:
    explicit RingProducer(std::span<std::byte> region)
        : ShmRing(region), tail_(header_->tail.load(std::memory_order_relaxed)),
          cached_head_(header_->head.load(std::memory_order_acquire))
    {
    }

    // Copy one message into the next slot and publish it.  `full` leaves the ring as it was:
    // the caller decides whether to spin, back off or fail the request (and checks its
    // PeerWatch: a consumer that died leaves the ring full for ever).
    RingStatus try_push(std::span<const std::byte> message)
    {
        if (message.size() > max_message())
            return RingStatus::too_large;
        return try_push_with([&message](std::span<std::byte> room) {
            if (!message.empty())
                std::memcpy(room.data(), message.data(), message.size());
            return message.size();
        });
    }

    // As try_push, with the message laid into the slot by `write(room)`, which returns its
    // length, or more than room.size() when it does not fit (`too_large`, nothing published).
    // Encoding in place saves a copy per message; the consumer reads a slot only after the
    // tail's release store, so it never sees one half written.
    template <class Write>
    RingStatus try_push_with(Write &&write)
    {
        if (tail_ - cached_head_ >= count_) {
            cached_head_ = header_->head.load(std::memory_order_acquire);
            // The consumer can never be ahead of what was published.
            if (cached_head_ > tail_)
                return RingStatus::corrupt;
            if (tail_ - cached_head_ >= count_)
                return RingStatus::full;
        }
        std::byte *s = slot(tail_);
        const std::size_t written = write(std::span<std::byte>(s + kLengthBytes, max_message()));
        if (written > max_message())
            return RingStatus::too_large;
        const auto length = static_cast<std::uint32_t>(written);
        std::memcpy(s, &length, kLengthBytes);
        header_->tail.store(++tail_, std::memory_order_release);
        return RingStatus::ok;
    }

private:
    std::uint64_t tail_;
    std::uint64_t cached_head_;
};

class RingConsumer : public ShmRing {
public:
    explicit RingConsumer(std::span<std::byte> region)
        : ShmRing(region), head_(header_->head.load(std::memory_order_relaxed)),
          cached_tail_(header_->tail.load(std::memory_order_acquire))
    {
    }

    // Copy the oldest message into `out` and free its slot; `length` is its size.  `too_small`
    // leaves the message in place and sets `length` to what it needs.
    RingStatus try_pop(std::span<std::byte> out, std::size_t &length)
    {
        if (head_ == cached_tail_) {
            cached_tail_ = header_->tail.load(std::memory_order_acquire);
            if (head_ == cached_tail_)
                return RingStatus::empty;
        }
        if (cached_tail_ < head_ || cached_tail_ - head_ > count_)
            return RingStatus::corrupt;
        const std::byte *s = slot(head_);
        std::uint32_t stored;
        // Read once: the checked value is the one used, whatever the peer writes meanwhile.
        std::memcpy(&stored, s, kLengthBytes);
        if (stored > max_message())
            return RingStatus::corrupt;
        length = stored;
        if (stored > out.size())
            return RingStatus::too_small;
        if (stored != 0)
            std::memcpy(out.data(), s + kLengthBytes, stored);
        header_->head.store(++head_, std::memory_order_release);
        return RingStatus::ok;
    }

private:
    std::uint64_t head_;
    std::uint64_t cached_tail_;
};

} // namespace ndk::soft::shm
