#include "providers/soft/os/asymmetric_readers.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <thread>

namespace ndk::soft::os {

namespace {

long membarrier(int command) { return ::syscall(__NR_membarrier, command, 0, 0); }

// The readers' slots, one per thread that ever read, in a list that only grows (slots are
// given back, never freed), so that the writer walks it without a lock.
struct Slot {
    alignas(64) std::atomic<const void *> reading{nullptr};
    std::atomic<bool> taken{true};
    Slot *next = nullptr;
};

std::atomic<Slot *> g_slots{nullptr};

Slot &take_slot()
{
    for (Slot *slot = g_slots.load(std::memory_order_acquire); slot != nullptr; slot = slot->next) {
        bool free = false;
        if (!slot->taken.load(std::memory_order_relaxed) &&
            slot->taken.compare_exchange_strong(free, true, std::memory_order_acquire))
            return *slot;
    }
    auto *slot = new Slot; // never freed: the writer may be walking the list
    slot->next = g_slots.load(std::memory_order_relaxed);
    while (!g_slots.compare_exchange_weak(slot->next, slot, std::memory_order_release,
                                          std::memory_order_relaxed)) {
    }
    return *slot;
}

void relax(unsigned turn)
{
    if (turn < 64) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        asm volatile("yield");
#endif
    } else {
        std::this_thread::yield();
    }
}

} // namespace

// The calling thread's slot, given back when the thread exits.  A read that comes later (a
// thread-local destructor that runs after this one) must not use it: from the release on,
// another thread may have taken it, and its reads would end this thread's announcement.
struct AsymmetricReaders::ThreadSlot {
    Slot &slot = take_slot();
    ~ThreadSlot()
    {
        tl_slot_ = nullptr;
        tl_slot_given_back_ = true;
        slot.taken.store(false, std::memory_order_release);
    }
};

AsymmetricReaders::Fence AsymmetricReaders::default_fence()
{
    static const Fence fence = [] {
        const long commands = membarrier(MEMBARRIER_CMD_QUERY);
        if (commands < 0 || !(commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
            membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0)
            return Fence::full;
        return Fence::membarrier;
    }();
    return fence;
}

std::atomic<const void *> &AsymmetricReaders::take_this_threads_slot()
{
    if (tl_slot_given_back_)          // reading while the thread exits: a slot kept for good
        return take_slot().reading; // (one per such thread; `mine` is gone)
    thread_local ThreadSlot mine;     // gives the slot back when the thread exits
    return mine.slot.reading;
}

void AsymmetricReaders::wait_for_readers() const
{
    // The writer's barrier between its stores and its look at the slots; with membarrier,
    // also each running reader's.  Registered in default_fence(), which made fence_ so, the
    // call does not fail.
    if (fence_ == Fence::membarrier)
        membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
    else
        full_fence();
    for (Slot *slot = g_slots.load(std::memory_order_acquire); slot != nullptr; slot = slot->next)
        for (unsigned turn = 0; slot->reading.load(std::memory_order_acquire) == this; ++turn)
            relax(turn);
}

} // namespace ndk::soft::os
