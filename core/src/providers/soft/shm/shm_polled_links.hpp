// The links a consumer's empty poll looks at without the progress thread's mutex
// (shm_progress.hpp, poll_from_consumer): their addresses, listed under that mutex and read by
// any number of polling threads at once.
//
// Why a pointer read from the list is alive: a link's owner destroys it only after the
// progress's remove() returned (soft_transport_progress.hpp; the transport tables destroy a
// retired connection after its queued removal), and remove() calls invalidate() under the
// mutex before the entry goes.  invalidate() marks the list stale and returns only once every
// read that may not have seen the mark has ended (os/asymmetric_readers.hpp: a reader
// announces itself, then loads the mark); a read that sees the mark reads no pointer.
//
// The cost of an empty turn: two plain stores to the polling thread's own slot, a load of a
// line written when links come or go, and each link's ring words; instead of the progress
// mutex's trylock and unlock (a line the progress thread shares) and a map lookup per link
// (docs/performance.md, "Two processes, shm").  invalidate() costs a membarrier system call.
//
// `Link` has has_messages(), callable from any thread while the link lives.
#pragma once

#include "providers/soft/os/asymmetric_readers.hpp"

#include <atomic>
#include <cstddef>
#include <vector>

namespace ndk::soft::shm {

template <class Link>
class PolledLinks {
public:
    using Fence = os::AsymmetricReaders::Fence;

    enum class Peek {
        empty,   // no listed link has anything
        waiting, // one has: serve them under the mutex
        stale,   // the list is to be made again (under the mutex)
    };

    explicit PolledLinks(Fence fence = os::AsymmetricReaders::default_fence()) : readers_(fence) {}

    // Any thread, no lock held or taken; not from inside another PolledLinks' peek.
    Peek peek() const
    {
        const os::AsymmetricReaders::Reading reading(readers_);
        if (!current_.load(std::memory_order_acquire))
            return Peek::stale;
        for (const Link *link : links_) // alive: the class comment
            if (link->has_messages())
                return Peek::waiting;
        return Peek::empty;
    }

    // Under the owner's mutex, before a link is added, removed or ends: returns once no
    // thread reads the old list (the class comment).
    void invalidate()
    {
        current_.store(false, std::memory_order_relaxed);
        readers_.wait_for_readers();
    }

    // Under the owner's mutex: the list is as the links stood at the last make().
    bool current() const { return current_.load(std::memory_order_relaxed); }

    // Under the owner's mutex, when not current(): the list made again from what `each`
    // passes to its argument (a callable taking `Link &`).  No thread reads the list
    // meanwhile: it is stale, and was since invalidate() returned.
    template <class Each>
    void make(Each each)
    {
        links_.clear();
        each([this](Link &link) { links_.push_back(&link); });
        current_.store(true, std::memory_order_release);
    }

    // Under the owner's mutex, while current(): the `index`th link passed to make(), alive
    // (no link came, went or ended since).
    Link &listed(std::size_t index) const { return *links_[index]; }

private:
    os::AsymmetricReaders readers_;
    // Whether links_ is as the links stand, and the list: written under the owner's mutex
    // when links come or go, read by every poll.
    alignas(64) std::atomic<bool> current_{false};
    std::vector<Link *> links_;
};

} // namespace ndk::soft::shm
