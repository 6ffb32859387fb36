// What a transport with a progress thread of its own keeps (shm, tcp): its listeners'
// acceptors, the establishments and connections it owns, keyed as the progress thread reports
// them, and the queue of changes to what that thread watches (docs/transport.md, "Progress and
// locks").
//
// Why the queue: the progress thread runs its handler under its own mutex, and the handler
// takes the wire lock, so a thread holding the wire lock (a listen, a connect, a close) must
// never add or remove a descriptor itself: `later` queues the change and an eventfd wakes the
// progress thread, which applies the changes between handler calls (`apply_changes`).  The
// tables' mutex is taken last and never held while waiting for anything.
//
// Lifetimes: the connector's link and the QP's channel point at an Establishing or a
// Connection and, when they go (under the wire lock), retire it; a retired entry leaves the
// progress thread (the queued removal holds the last reference) before it is destroyed there.
//
// `Progress` has add_fd / remove_fd / add and remove of an Acceptor and of a Link;
// `Establishing` an `fd`; `Connection` a `wire()` (its Link), `qp` (atomic) and `connector`.
#pragma once

#include "providers/soft/os/unique_fd.hpp"
#include "providers/soft/soft_fabric.hpp"
#include "providers/soft/soft_quiet.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <vector>

namespace ndk::soft {

class SoftConnector;

template <class Progress, class Acceptor, class Link, class Establishing, class Connection>
class TransportTables {
public:
    TransportTables() : changes_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC))
    {
        if (changes_fd_.get() < 0)
            throw std::system_error(errno, std::generic_category(), "eventfd");
    }

    // The transport's progress thread, made after these tables (it watches changes_fd()) and
    // stopped before them.
    void attach(Progress &progress)
    {
        progress_ = &progress;
        progress.add_fd(changes_fd_.get());
    }

    // The eventfd the progress thread watches (add_fd) for the queued changes.
    int changes_fd() const { return changes_fd_.get(); }

    // Run `change` on the progress thread, outside the wire lock.
    void later(std::function<void()> change)
    {
        std::lock_guard lock(mu_);
        later_locked(std::move(change));
    }

    // On the progress thread, when changes_fd() is readable.  A change that fails (epoll
    // refused a descriptor: out of memory, or the limit of watches) leaves its connection
    // unserved, and that connection's establishment or RNR timer ends it.
    void apply_changes()
    {
        std::uint64_t count = 0;
        [[maybe_unused]] ssize_t n = ::read(changes_fd_.get(), &count, sizeof count);
        std::vector<std::function<void()>> changes;
        {
            std::lock_guard lock(mu_);
            changes.swap(changes_);
        }
        for (auto &change : changes) {
            try {
                change(); // what it captured (a retired object) goes with it, after the removal
            } catch (const std::exception &) {
            }
        }
    }

    // On the progress thread, when `fd` is readable: the queued changes applied when it is
    // changes_fd() (null then), else the establishment watched there (null when retired: its
    // removal is queued).
    std::shared_ptr<Establishing> ready(int fd)
    {
        if (fd == changes_fd()) {
            apply_changes();
            return nullptr;
        }
        return establishing_at(fd);
    }

    // ---- listeners, by their acceptor ----

    // `listener` takes connect requests through `acceptor`, at `endpoint`: watched from now on
    // (queued).
    void listen(SoftListener &listener, std::shared_ptr<Acceptor> acceptor, const Endpoint &endpoint)
    {
        std::lock_guard lock(mu_);
        acceptors_[&listener] = {acceptor, endpoint};
        later_locked([this, acceptor] { progress_->add(*acceptor); });
    }

    // `listener` takes no more: its acceptor (null when it had none) leaves the progress
    // thread, and is destroyed there (the queued removal holds the last reference).
    std::shared_ptr<Acceptor> unlisten(SoftListener &listener)
    {
        std::lock_guard lock(mu_);
        auto it = acceptors_.find(&listener);
        if (it == acceptors_.end())
            return nullptr;
        std::shared_ptr<Acceptor> acceptor = std::move(it->second.acceptor);
        acceptors_.erase(it);
        later_locked([this, acceptor] { progress_->remove(*acceptor); });
        return acceptor;
    }

    // On the progress thread: `read(listener, endpoint)` for the listener taking connect
    // requests through `acceptor` and where it listens, under the tables' mutex (the listener
    // cannot stop listening meanwhile, so `read` must only read); false, `read` not called,
    // once that listener is gone.
    template <class Read>
    bool read_listener(const Acceptor &acceptor, Read read)
    {
        std::lock_guard lock(mu_);
        for (const auto &[listener, listening] : acceptors_)
            if (listening.acceptor.get() == &acceptor) {
                read(*listener, listening.endpoint);
                return true;
            }
        return false;
    }

    // ---- establishments, by their socket ----

    // Watch an establishment's socket from now on (wire lock held: queued).
    void watch(const std::shared_ptr<Establishing> &establishing)
    {
        std::lock_guard lock(mu_);
        int fd = establishing->fd;
        establishing_[fd] = establishing;
        later_locked([this, fd] { progress_->add_fd(fd); });
    }

    // On the progress thread: one just accepted, watched at once.  False when epoll refused
    // it (not watched: the peer's establishment times out).
    bool watch_here(const std::shared_ptr<Establishing> &establishing)
    {
        int fd = establishing->fd;
        {
            std::lock_guard lock(mu_);
            establishing_[fd] = establishing;
        }
        try {
            progress_->add_fd(fd);
            return true;
        } catch (const std::exception &) {
            std::lock_guard lock(mu_);
            establishing_.erase(fd);
            return false;
        }
    }

    // The exchange is over (or its connector gone): it leaves the progress thread.
    void retire(const std::shared_ptr<Establishing> &establishing)
    {
        std::lock_guard lock(mu_);
        int fd = establishing->fd;
        auto it = establishing_.find(fd);
        if (it == establishing_.end() || it->second != establishing)
            return;
        establishing_.erase(it);
        later_locked([this, establishing, fd] { progress_->remove_fd(fd); });
    }

    // The exchange is over: retired; the connector it served, or null once that connector's
    // link is gone.
    SoftConnector *finish(const std::shared_ptr<Establishing> &establishing)
    {
        retire(establishing);
        return establishing->connector;
    }

    // The establishment watched at `fd`, or null (retired: its removal is queued).
    std::shared_ptr<Establishing> establishing_at(int fd)
    {
        std::lock_guard lock(mu_);
        auto it = establishing_.find(fd);
        return it == establishing_.end() ? nullptr : it->second;
    }

    // ---- established connections, by their link ----

    // A new link: its messages are read on the progress thread from now on.
    void watch(const std::shared_ptr<Connection> &connection)
    {
        std::lock_guard lock(mu_);
        connections_[&connection->wire()] = connection;
        later_locked([this, connection] { progress_->add(connection->wire()); });
    }

    // Neither the QP nor the connector uses the connection any more: it leaves.
    void retire_if_unused(const std::shared_ptr<Connection> &connection)
    {
        if (connection->qp.load() != nullptr || connection->connector != nullptr)
            return;
        std::lock_guard lock(mu_);
        if (connections_.erase(&connection->wire()) == 0)
            return;
        later_locked([this, connection] { progress_->remove(connection->wire()); });
    }

    std::shared_ptr<Connection> connection_of(const Link &link)
    {
        std::lock_guard lock(mu_);
        auto it = connections_.find(&link);
        return it == connections_.end() ? nullptr : it->second;
    }

    // The frame of a transport's quiescent() (soft_transport.hpp): the progress thread held
    // if it is idle, nothing queued for it and no establishment in flight (either would still
    // make something happen), then `quiet(entry)` for every object it watches, with what it
    // says of the connection's ends written into `ledger`.  The thread stays held in `ledger`
    // when everything is quiet.  Wire lock held (exclusive).
    template <class Quiet>
    bool quiescent(QuietLedger &ledger, Quiet quiet)
    {
        auto held = progress_->hold_if_idle();
        if (!held.owns_lock())
            return false;
        {
            std::lock_guard lock(mu_);
            if (!changes_.empty() || !establishing_.empty())
                return false;
        }
        for (const auto &[id, entry] : progress_->watched())
            if (!quiet(entry))
                return false;
        ledger.hold(std::move(held));
        return true;
    }

private:
    struct Listening {
        std::shared_ptr<Acceptor> acceptor;
        Endpoint endpoint;
    };

    void later_locked(std::function<void()> change)
    {
        changes_.push_back(std::move(change));
        const std::uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(changes_fd_.get(), &one, sizeof one);
    }

    Progress *progress_ = nullptr;
    os::UniqueFd changes_fd_;
    std::mutex mu_;
    std::map<SoftListener *, Listening> acceptors_;
    std::map<int, std::shared_ptr<Establishing>> establishing_;
    std::map<const Link *, std::shared_ptr<Connection>> connections_;
    std::vector<std::function<void()>> changes_;
};

} // namespace ndk::soft
