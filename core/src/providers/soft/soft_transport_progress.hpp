// What the progress threads of the transports with a thread of their own (shm_progress.hpp,
// tcp_progress.hpp) keep and whom they tell: the objects they watch - listeners' acceptors,
// established links, and the bare descriptors of establishments in flight - each under an id
// that its epoll events carry, and the owner's handler, called for what happened to each.
// Written once here; how each kind of object is watched (which descriptors, which events) and
// what an event means is the transport's (watch_entry, unwatch_entry, on_event).
//
// add() and remove() may be called from any thread, and from the handler (os::ProgressLoop's
// mutex_, which the transport holds around every handler call, is recursive).  After remove()
// returns the handler is not called for that object again, so the owner may destroy it;
// objects must not move while registered.
#pragma once

#include "providers/soft/os/consumer_spin.hpp"
#include "providers/soft/os/progress_loop.hpp"

#include <cstdint>
#include <map>
#include <mutex>

namespace ndk::soft {

// The owner of a transport's progress thread: told, on that thread and one call at a time,
// what happened to what it watches.
template <class Acceptor, class Link>
class ProgressHandler {
public:
    virtual ~ProgressHandler() = default;
    // A connection waits: acceptor.accept() until it returns nothing.
    virtual void incoming(Acceptor &acceptor) = 0;
    // The link has something to take (shm: messages in its ring, a batch of them at a time;
    // tcp: bytes, or the stream's end, on its socket, until there is nothing left).
    virtual void readable(Link &link) = 0;
    // The link ended (shm: the peer exited or closed it; tcp: EOF, reset, or a Terminate
    // either way).  Once per link.
    virtual void link_ended(Link &link) = 0;
    // A descriptor given to add_fd() is ready: the establishment's poll().
    virtual void ready(int fd) = 0;
};

// The watched objects under their ids.  `State` is what the transport keeps per entry.
template <class Acceptor, class Link, class State>
class TransportProgress : public os::ProgressLoop {
public:
    using Handler = ProgressHandler<Acceptor, Link>;

    void add(Acceptor &acceptor) { insert({Kind::acceptor, &acceptor, acceptor.fd()}); }
    void remove(Acceptor &acceptor) { erase(Kind::acceptor, &acceptor, -1); }
    // Served before the thread next sleeps, whatever its descriptors say: the link may hold
    // what was read or published before it was added.
    void add(Link &link)
    {
        insert({Kind::link, &link, -1});
        wake();
    }
    void remove(Link &link) { erase(Kind::link, &link, -1); }
    void add_fd(int fd) { insert({Kind::fd, nullptr, fd}); }
    void remove_fd(int fd) { erase(Kind::fd, nullptr, fd); }

    enum class Kind { acceptor, link, fd };
    struct Entry {
        Kind kind;
        void *object = nullptr; // the Acceptor or the Link
        int fd = -1;            // the acceptor's, or the bare descriptor
        State state{};

        Acceptor &acceptor() const { return *static_cast<Acceptor *>(object); }
        Link &link() const { return *static_cast<Link *>(object); }
    };

    // The thread's mutex if nobody holds it right now (the thread serves nothing, no
    // consumer's poll serves a link, nothing is being added or removed), else an empty lock.
    // Never waited for, so that a caller holding the wire lock, which handlers take inside
    // this mutex, cannot deadlock; never inside a handler call (the mutex is recursive).
    // What the transport's knob `quiescent` looks at is looked at under it (watched()).
    std::unique_lock<std::recursive_mutex> hold_if_idle()
    {
        if (serving_here())
            return {};
        return std::unique_lock(mutex_, std::try_to_lock);
    }
    // What is watched, under their ids: only with hold_if_idle()'s lock held.
    const std::map<std::uint64_t, Entry> &watched() const { return entries_; }

protected:
    explicit TransportProgress(Handler &handler) : handler_(handler) {}

    // The calling thread is inside a handler call: the loop's own thread, or a consumer's
    // poll that serves the links (serving_from_consumer()).
    bool serving_here() const { return on_loop_thread() || ConsumerServing::serving(this); }

    // Where a consumer's empty poll (the transport's poll_from_consumer) begins: counted as
    // one (spin_), then the mutex if this thread may serve the links now, else an empty lock:
    // not from within a handler call (its buffers are in use, and the mutex is recursive),
    // nor while another thread serves (the progress thread delivers what it finds).  Never
    // waited for, as hold_if_idle().
    std::unique_lock<std::recursive_mutex> consumer_poll()
    {
        spin_.note_poll();
        return consumer_serve();
    }
    // consumer_poll() past its count: for a transport that counted the poll itself and looked
    // whether anything waits before it asks for the mutex (shm).
    std::unique_lock<std::recursive_mutex> consumer_serve()
    {
        if (serving_here())
            return {};
        return std::unique_lock(mutex_, std::try_to_lock);
    }
    // This thread's mark while it runs the handler from a consumer's poll, under
    // consumer_poll()'s lock.
    ConsumerServing serving_from_consumer() const { return ConsumerServing(this); }

    // Put `entry`'s descriptors into the epoll set, their events carrying `id`
    // (std::system_error when epoll refuses one); take them out again (one not watched, or
    // watched no more, is no error).  Under mutex_.
    virtual void watch_entry(std::uint64_t id, Entry &entry) = 0;
    virtual void unwatch_entry(const Entry &entry) = 0;

    Handler &handler_;
    ConsumerSpin spin_; // consumer_poll()'s record: whether a consumer spins
    // Under mutex_, which the handler runs under (so remove() on another thread waits for the
    // call in progress to end) and which lets it call add() or remove() itself.
    std::map<std::uint64_t, Entry> entries_;
    // How many times entries_ gained or lost an entry, or an entry changed what a list made
    // from it looks at (tcp: a link ended), under mutex_: such a list is current while this
    // has not moved (entries_changed_since()).
    std::uint64_t entries_changed_ = 0;
    // A list made from entries_ when this count stood at `made` (kNeverMade: not yet) is to be
    // made again: true, and `made` takes the count now.
    static constexpr std::uint64_t kNeverMade = ~std::uint64_t{0};
    bool entries_changed_since(std::uint64_t &made) const
    {
        if (made == entries_changed_)
            return false;
        made = entries_changed_;
        return true;
    }

private:
    // An entry epoll refused is not kept: add() throws what it threw.
    void insert(Entry entry)
    {
        std::lock_guard lock(mutex_);
        const std::uint64_t id = next_id_++;
        Entry &added = entries_.emplace(id, entry).first->second;
        ++entries_changed_;
        try {
            watch_entry(id, added);
        } catch (...) {
            unwatch_entry(added);
            entries_.erase(id);
            ++entries_changed_;
            throw;
        }
    }

    void erase(Kind kind, const void *object, int fd)
    {
        std::lock_guard lock(mutex_);
        for (auto it = entries_.begin(); it != entries_.end(); ++it) {
            const Entry &entry = it->second;
            if (entry.kind == kind && entry.object == object && (object != nullptr || entry.fd == fd)) {
                unwatch_entry(entry);
                entries_.erase(it);
                ++entries_changed_;
                return;
            }
        }
    }

    std::uint64_t next_id_ = 1; // 0 is the loop's wake eventfd's
};

} // namespace ndk::soft
