// Waking a consumer that sleeps on an empty ring, across processes, without a system call per
// message while it is awake.  Per ring direction: an eventfd (the consumer created it, or
// received it with the segment as SCM_RIGHTS) and a "consumer sleeping" word in the shared
// segment.  The consumer sets the word before it sleeps on the eventfd; the producer, after
// publishing a message, writes the eventfd only when it sees the word set.  A consumer that
// keeps up never sets the word, so its producer never makes a system call.
//
// Why no wake-up is lost (a Dekker pattern, each side a store then a load of the other's
// variable, with a seq_cst fence between):
//   producer: store ring tail (release)        consumer: store sleeping = 1
//             fence(seq_cst)                              fence(seq_cst)
//             load sleeping; if 1: write eventfd          load ring tail; if new: don't sleep
// The two fences are ordered in the single total order S.  If the producer's fence comes
// first, the consumer's load after its own fence sees the new tail and does not sleep; if the
// consumer's comes first, the producer's load sees sleeping == 1 and writes the eventfd,
// which then stays readable until the consumer reads it.  Either way the message is seen.
// (Without the fences both loads could see the old values - store buffers - and the consumer
// would sleep on a published message.)  Atomics in shared memory work across processes
// because they are lock-free (shm_ring.hpp).
//
// The producer that rings clears the word (an exchange), so a consumer slow to wake costs one
// system call, not one per message published meanwhile.  The word is 0 while the consumer
// sleeps only after such a ring, whose eventfd count it then finds.  A stale count (a ring
// racing the consumer's own clearing) only costs a spurious wake-up later: the consumer
// re-checks its ring whenever it wakes.
#pragma once

#include "providers/soft/os/full_fence.hpp"
#include "providers/soft/os/unique_fd.hpp"
#include "providers/soft/shm/shm_ring.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ndk::soft::shm {

// The shared word, alone on its cache line: the producer reads it after every message, and it
// must not share a line with the ring indices the two sides write.
struct DoorbellWord {
    alignas(kCacheLine) std::atomic<std::uint32_t> consumer_sleeping;
};
static_assert(sizeof(DoorbellWord) == kCacheLine);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

// A non-blocking, close-on-exec eventfd for one direction.  Throws std::system_error.
os::UniqueFd make_doorbell_fd();

// The producer's half.
class DoorbellRinger {
public:
    DoorbellRinger() = default;
    DoorbellRinger(DoorbellWord *word, os::UniqueFd eventfd) : word_(word), fd_(std::move(eventfd)) {}

    // Call after each publish (the ring's release store of its tail).  A system call only when
    // the consumer said it sleeps; true when it made one.
    bool after_publish()
    {
        os::full_fence(); // the ordering above (os/full_fence.hpp)
        if (word_->consumer_sleeping.load(std::memory_order_relaxed) == 0)
            return false;
        // One ring per sleep: the eventfd stays readable until the consumer reads it, so the
        // messages published while it wakes up need no system call of their own.  Clearing
        // the word here (only when it was set: an awake consumer's line stays unwritten) is
        // what spares them.  0 already: the consumer cleared it itself, it is awake.
        if (word_->consumer_sleeping.exchange(0, std::memory_order_relaxed) == 0)
            return false;
        ring();
        return true;
    }

    int fd() const { return fd_.get(); }

private:
    void ring() const;

    DoorbellWord *word_ = nullptr;
    os::UniqueFd fd_;
};

// The consumer's half.  Either its own wait(), or the steps for an outside poll loop (the
// progress thread's epoll): arm(), wait on fd() readable, then woken().
class DoorbellSleeper {
public:
    // Spin rounds before sleeping, by default: enough to catch a reply already in flight
    // (a few microseconds), far from a scheduler quantum.
    static constexpr unsigned kDefaultSpin = 200;

    DoorbellSleeper() = default;
    DoorbellSleeper(DoorbellWord *word, os::UniqueFd eventfd) : word_(word), fd_(std::move(eventfd))
    {
    }

    // Say "sleeping", then look at the ring once more (`has_work`, an acquire load of its
    // tail).  True: armed, the caller may now wait on fd().  False: work arrived, the word is
    // cleared again and the caller must not sleep.
    template <class HasWork>
    bool arm(HasWork &&has_work)
    {
        word_->consumer_sleeping.store(1, std::memory_order_relaxed);
        os::full_fence(); // the ordering above (os/full_fence.hpp)
        if (!has_work())
            return true;
        disarm();
        return false;
    }

    // Awake again: producers stop ringing.  Reads off the eventfd's count if it was rung.
    void woken()
    {
        disarm();
        drain();
    }

    enum class Wait { ready, timeout, other_fd };

    // At most this many other descriptors in one wait.
    static constexpr std::size_t kMaxOthers = 3;

    // Until `has_work()`, at most `limit`: spin `spin` rounds, then sleep on the eventfd and on
    // `others` (typically the peer's pidfd and control socket): `other_fd` when one of them is
    // readable (or hung up) and there is no work.
    template <class HasWork>
    Wait wait(HasWork &&has_work, std::chrono::milliseconds limit, unsigned spin = kDefaultSpin,
              std::span<const int> others = {})
    {
        for (unsigned i = 0; i < spin; ++i) {
            if (has_work())
                return Wait::ready;
            cpu_relax();
        }
        const auto deadline = std::chrono::steady_clock::now() + limit;
        for (;;) {
            if (!arm(has_work))
                return Wait::ready;
            const Sleep slept = sleep_until(deadline, others);
            woken();
            if (has_work())
                return Wait::ready;
            if (slept == Sleep::other_fd)
                return Wait::other_fd;
            if (slept == Sleep::timeout)
                return Wait::timeout;
        }
    }

    int fd() const { return fd_.get(); }
    // How many times wait() slept on the eventfd (tests: was the doorbell exercised?).
    std::uint64_t sleeps() const { return sleeps_; }

private:
    enum class Sleep { rung, timeout, other_fd };

    void disarm() { word_->consumer_sleeping.store(0, std::memory_order_relaxed); }
    void drain() const;
    Sleep sleep_until(std::chrono::steady_clock::time_point deadline, std::span<const int> others);
    static void cpu_relax()
    {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        asm volatile("yield");
#endif
    }

    DoorbellWord *word_ = nullptr;
    os::UniqueFd fd_;
    std::uint64_t sleeps_ = 0;
};

} // namespace ndk::soft::shm
