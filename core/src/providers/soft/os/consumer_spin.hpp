// Whether a consumer spins on its CQ right now, as a transport's progress thread asks before
// it sleeps (docs/transport.md, "Progress driven by the consumer"): while one spins, the
// consumer's empty polls serve the links, so the thread stops watching for arrivals and naps
// instead of being woken per message to wait on the lock the poller holds.
//
// "Spins" means 32 of one thread's empty polls in a row came less than 50 us apart on
// average, the last of them no longer ago than those 32 took plus 100 us.  A consumer that
// polls now and then (a loop that sleeps a millisecond between polls) does not count: the
// thread woken per arrival serves it better.  A spinning poll must cost no clock read (one
// clock_gettime was about 27% of a spinning initiator's samples in the zero-copy bandwidth
// runs, docs/performance.md), so each polling thread counts its polls of each ConsumerSpin and
// reads the clock once every 32 of them.
//
// ConsumerServing (below) marks a thread while such a poll runs the transport's handler.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace ndk::soft {

class ConsumerSpin {
public:
    static constexpr std::uint32_t kPollsPerClockRead = 32;

    // One empty poll by the calling thread.  Any thread.  Inline for the common case, a
    // thread polling the ConsumerSpin it polled last, its count short of a clock read.
    void note_poll()
    {
        if (PollClock *clock = tl_last_; clock != nullptr && clock->owner == this) {
            if (++clock->polls < kPollsPerClockRead)
                return;
            read_clock(*clock);
            return;
        }
        note_poll_of_another();
    }
    // Some thread spins right now (above).  Any thread.
    bool spinning() const;

    // A polling thread's count of its empty polls of one ConsumerSpin since it last read the
    // clock for it, and that reading.  A few per thread (consumer_spin.cpp), for a thread that
    // polls CQs of several adapters in turn; an owner destroyed and another made at its address
    // inherits a count, which only moves its next reading.
    struct PollClock {
        const void *owner = nullptr;
        std::uint32_t polls = 0;
        std::int64_t read_ns = 0;
    };

private:
    // The poll counted in this thread's PollClock for this object, found or taken over, which
    // becomes tl_last_.
    void note_poll_of_another();
    // A count that reached kPollsPerClockRead: the clock read, the spin judged, the count reset.
    void read_clock(PollClock &clock);

    // The PollClock of this thread's last poll.
    static inline thread_local PollClock *tl_last_ = nullptr;

    // Steady clock: until when a spinning consumer counts.  Written once per 32 polls of a
    // spinning thread, so that pollers of one adapter rarely share its cache line.
    std::atomic<std::int64_t> spinning_until_ns_{0};
};

// The mark a thread carries while a consumer's poll runs a transport's handler on it
// (poll_from_consumer, shm and tcp alike): the handler must not be entered again from inside
// itself (its buffers are in use), and the progress mutex, being recursive, would let it.
// One mark per thread, naming the progress object served; nested marks restore the outer.
class ConsumerServing {
public:
    explicit ConsumerServing(const void *progress) : previous_(std::exchange(current_, progress)) {}
    ~ConsumerServing() { current_ = previous_; }
    ConsumerServing(const ConsumerServing &) = delete;
    ConsumerServing &operator=(const ConsumerServing &) = delete;

    // The calling thread is inside a consumer's poll that serves `progress`.
    static bool serving(const void *progress) { return current_ == progress; }

private:
    static inline thread_local const void *current_ = nullptr;
    const void *previous_;
};

} // namespace ndk::soft
