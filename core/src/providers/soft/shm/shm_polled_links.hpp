// The links a consumer's empty poll looks at without the progress thread's mutex
// (shm_progress.hpp, poll_from_consumer): their addresses, listed under that mutex and read by
// any number of polling threads at once.
//
// Why a pointer read from the list is alive: a link's owner destroys it only after the
// progress's remove() returned (soft_transport_progress.hpp; the transport tables destroy a
// retired connection after its queued removal), and remove() calls invalidate() under the
// mutex before the entry goes.  invalidate() returns only once no thread reads the list
// (readers_ is zero); a read that begins after it sees the list stale and reads no pointer.
// That is Dekker's handshake, sequentially consistent on both sides: a reader counts itself
// and then loads current_, invalidate() clears current_ and then loads readers_, so either the
// reader sees the list stale or invalidate() sees the reader and waits for it.  A read is a
// few loads per link and never waits, so the wait is that long.
//
// The cost of an empty turn: an atomic increment and decrement of a line only pollers write,
// a load of a line written when links come or go, and each link's ring words; instead of the
// progress mutex's trylock and unlock (a line the progress thread shares) and a map lookup
// per link (docs/performance.md, "Two processes, shm").
//
// `Link` has has_messages(), callable from any thread while the link lives.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace ndk::soft::shm {

template <class Link>
class PolledLinks {
public:
    enum class Peek {
        empty,   // no listed link has anything
        waiting, // one has: serve them under the mutex
        stale,   // the list is to be made again (under the mutex)
    };

    // Any thread, no lock held or taken.
    Peek peek() const
    {
        readers_.fetch_add(1, std::memory_order_seq_cst);
        Peek seen = Peek::stale;
        if (current_.load(std::memory_order_seq_cst)) {
            seen = Peek::empty;
            for (const Link *link : links_) // alive: the class comment
                if (link->has_messages()) {
                    seen = Peek::waiting;
                    break;
                }
        }
        readers_.fetch_sub(1, std::memory_order_release);
        return seen;
    }

    // Under the owner's mutex, before a link is added, removed or ends: returns once no
    // thread reads the list (the class comment).
    void invalidate()
    {
        current_.store(false, std::memory_order_seq_cst);
        for (unsigned turn = 0; readers_.load(std::memory_order_seq_cst) != 0; ++turn)
            relax(turn);
    }

    // Under the owner's mutex: the list is as the links stood at the last make().
    bool current() const { return current_.load(std::memory_order_relaxed); }

    // Under the owner's mutex, when not current(): the list made again from what `each`
    // passes to its argument (a callable taking `const Link &`).  No thread reads the list
    // meanwhile: it is stale, and was since invalidate() returned.
    template <class Each>
    void make(Each each)
    {
        links_.clear();
        each([this](const Link &link) { links_.push_back(&link); });
        current_.store(true, std::memory_order_release);
    }

private:
    // A reader is a few loads away from done; a reader descheduled mid-read is not, and the
    // CPU is better given to it.
    static void relax(unsigned turn)
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

    // Pollers reading the list right now; its own line, written only by them.
    alignas(64) mutable std::atomic<std::uint32_t> readers_{0};
    // Whether links_ is as the links stand, and the list: written under the owner's mutex
    // when links come or go, read by every poll.
    alignas(64) std::atomic<bool> current_{false};
    std::vector<const Link *> links_;
};

} // namespace ndk::soft::shm
