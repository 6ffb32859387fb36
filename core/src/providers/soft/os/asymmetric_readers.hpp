// Readers that announce themselves with plain stores, and a writer that waits for them: the
// handshake of a list read on a hot path without a lock and changed rarely under one
// (shm_polled_links.hpp).
//
// The rule it keeps is Dekker's: a reader says "reading this" (its thread's slot) and then
// loads the writer's flag; the writer stores the flag and then looks at every slot; so either
// the reader sees the flag or the writer sees the reader (and waits for it to end).  Each side
// needs a full barrier between its store and its load.  Here the writer pays for both
// (Fence::membarrier): membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) makes every running thread
// of the process execute a full barrier before it returns, so a reader needs only a compiler
// barrier, and the read costs two plain stores where two locked read-modify-writes cost about
// 4 ns a turn (a loop of the two on this machine's AMD EPYC: 4.3 ns against 0.7 ns).  Where
// the kernel refuses membarrier (before Linux 4.14, or a seccomp filter), both sides fence
// (Fence::full).  The writer's side is a system call of about 0.5 us: for rare changes.
//
// Each thread that reads has one slot for the life of the thread (taken at its first read,
// given back at its exit for another thread to take), so reads of several owners by one
// thread must not nest.  A read after the thread gave its slot back (from a thread-local
// destructor that runs after the slot's) takes a slot of its own that it keeps: the one given
// back may already be another thread's.
#pragma once

#include "providers/soft/os/full_fence.hpp"

#include <atomic>

namespace ndk::soft::os {

class AsymmetricReaders {
public:
    enum class Fence {
        membarrier, // the writer makes the readers' stores visible (readers: a compiler barrier)
        full,       // each side fences
    };
    // membarrier when the kernel registered this process for it (asked once), else full.
    static Fence default_fence();

    // membarrier only where default_fence() says so (the process must be registered).
    explicit AsymmetricReaders(Fence fence = default_fence())
        : fence_(fence == Fence::membarrier ? default_fence() : fence)
    {
    }
    Fence fence() const { return fence_; }

    // A read, from construction to destruction, on any thread: what it loads after it began
    // that the writer stored before wait_for_readers() is seen.
    class Reading {
    public:
        explicit Reading(const AsymmetricReaders &owner) : slot_(this_threads_slot())
        {
            slot_.store(&owner, std::memory_order_relaxed);
            if (owner.fence_ == Fence::membarrier)
                std::atomic_signal_fence(std::memory_order_seq_cst);
            else
                full_fence();
        }
        ~Reading() { slot_.store(nullptr, std::memory_order_release); }
        Reading(const Reading &) = delete;
        Reading &operator=(const Reading &) = delete;

    private:
        std::atomic<const void *> &slot_;
    };

    // The writer, after the stores that readers must see (a flag a reader checks before it
    // reads anything else): returns once every read that may have missed them has ended.  A
    // read is expected to be short; a reader descheduled mid-read is waited for, yielding.
    void wait_for_readers() const;

private:
    // The calling thread's slot: a thread-local pointer once taken (no call, no guard on the
    // read path), taken from the process's list at the thread's first read.
    static std::atomic<const void *> &this_threads_slot()
    {
        if (tl_slot_ == nullptr)
            tl_slot_ = &take_this_threads_slot();
        return *tl_slot_;
    }
    static std::atomic<const void *> &take_this_threads_slot();
    static inline thread_local std::atomic<const void *> *tl_slot_ = nullptr;
    // Set once the thread's slot was given back (trivially destructible: still readable by
    // thread-local destructors that run after the slot's).
    static inline thread_local bool tl_slot_given_back_ = false;
    struct ThreadSlot;

    Fence fence_;
};

} // namespace ndk::soft::os
