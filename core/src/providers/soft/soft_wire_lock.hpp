// The soft fabric's wire lock, a reader-writer lock with two modes (docs/architecture.md,
// "The soft provider's locks"):
//  - shared: the data path of a connection.  Posting a send, write, read or receive and the
//    transfers it runs take it shared, plus the connection's own mutex, the CQ's and the SRQ's:
//    two connections on two threads run side by side.
//  - exclusive: everything else (creates, closes, connection management, memory registration,
//    requests that change memory access, the engine's tasks).  It sees the whole fabric still,
//    which is what keeps the provider's rules checkable.
//
// A distributed reader count (the "big-reader" lock of the Linux kernel, percpu_rw_semaphore):
// each thread counts itself in its own cache line, so two posting threads never write the
// same line, which an ordinary rwlock's one reader count makes them do on every post (measured:
// pthread_rwlock_rdlock + unlock were 13% of `ndk_perf msg_rate --connections 2`).  The price
// is paid by the rare exclusive holder, which scans the slots.  Writers are preferred: once one
// announces itself new readers wait, so a control call is never starved by threads that keep
// posting.  Not recursive in either mode.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <thread>

namespace ndk::soft {

// How a caller holds the wire lock: Shared on the data path (with the QP's connection lock),
// Exclusive everywhere else.
enum class Hold { Shared, Exclusive };

class WireLock { // SharedMutex: std::lock_guard / std::unique_lock / std::shared_lock
public:
    WireLock() = default;
    WireLock(const WireLock &) = delete;
    WireLock &operator=(const WireLock &) = delete;

    void lock()
    {
        writers_.lock(); // one exclusive holder at a time
        writer_.store(true, std::memory_order_seq_cst);
        for (Slot &slot : slots_) // wait for the readers already in (seq_cst pairs with theirs)
            for (int n = slot.readers.load(std::memory_order_seq_cst); n != 0;
                 n = slot.readers.load(std::memory_order_seq_cst))
                slot.readers.wait(n, std::memory_order_seq_cst);
    }
    void unlock()
    {
        writer_.store(false, std::memory_order_seq_cst);
        writer_.notify_all();
        writers_.unlock();
    }

    void lock_shared()
    {
        Slot &slot = my_slot();
        for (;;) {
            slot.readers.fetch_add(1, std::memory_order_seq_cst);
            if (!writer_.load(std::memory_order_seq_cst))
                return;
            release(slot); // a writer is in or waiting: let it go first
            writer_.wait(true, std::memory_order_seq_cst);
        }
    }
    void unlock_shared() { release(my_slot()); }

private:
    static constexpr size_t kSlots = 64;
    struct alignas(64) Slot {
        std::atomic<int> readers{0};
    };

    // A thread's slot, fixed for its life: threads take slots round-robin, so two threads
    // share one only when more than kSlots use the fabric.
    Slot &my_slot()
    {
        static std::atomic<size_t> next{0};
        thread_local size_t index = next.fetch_add(1, std::memory_order_relaxed) % kSlots;
        return slots_[index];
    }

    void release(Slot &slot)
    {
        if (slot.readers.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
            writer_.load(std::memory_order_seq_cst))
            slot.readers.notify_all(); // the writer scanning the slots may wait on this one
    }

    std::array<Slot, kSlots> slots_{};
    alignas(64) std::atomic<bool> writer_{false};
    std::mutex writers_;
};

} // namespace ndk::soft
