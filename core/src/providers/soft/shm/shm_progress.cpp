#include "providers/soft/shm/shm_progress.hpp"

#include <sys/epoll.h>

namespace ndk::soft::shm {

namespace {

constexpr std::uint64_t data_of(std::uint64_t id, std::uint64_t source) { return id << 2 | source; }

} // namespace

ShmProgress::ShmProgress(ProgressHandler &handler, Options options)
    : TransportProgress(handler), options_(options)
{
    start();
}

ShmProgress::~ShmProgress() { stop(); }

void ShmProgress::watch(int fd, std::uint64_t id, Source source, std::uint32_t events)
{
    ProgressLoop::watch(fd, data_of(id, source), events);
}

void ShmProgress::watch_entry(std::uint64_t id, Entry &entry)
{
    if (entry.kind != Kind::link) {
        watch(entry.fd, id, Source::primary, EPOLLIN);
        return;
    }
    // Not armed yet: the thread looks at its ring (messages may be there already) before it
    // sleeps again; a consumer's poll looks at it once the polled list is made again.
    polled_.invalidate();
    ShmLink &link = entry.link();
    watch(link.doorbell_fd(), id, Source::primary, EPOLLIN);
    watch(link.peer_fd(), id, Source::pidfd, EPOLLIN);
    watch(link.control_fd(), id, Source::control, EPOLLIN | EPOLLRDHUP);
}

void ShmProgress::unwatch_entry(const Entry &entry)
{
    if (entry.kind == Kind::link) {
        // Before the entry goes, and so before its owner may destroy the link: no poll reads
        // its address from the polled list after this (shm_polled_links.hpp).
        polled_.invalidate();
        unwatch_link(entry.link());
    } else
        unwatch(entry.fd);
}

// Unwatching a descriptor already unwatched (a gone link's) is harmless.
void ShmProgress::unwatch_link(ShmLink &link)
{
    unwatch(link.doorbell_fd());
    unwatch(link.peer_fd());
    unwatch(link.control_fd());
}

ShmLink *ShmProgress::link_of(std::uint64_t id)
{
    const auto it = entries_.find(id);
    if (it == entries_.end() || it->second.kind != Kind::link || it->second.state.gone)
        return nullptr;
    return &it->second.link();
}

bool ShmProgress::poll_from_consumer()
{
    spin_.note_poll();
    // The empty turn, a spinning consumer's common case, takes no lock (shm_polled_links.hpp).
    if (polled_.peek() == PolledLinks<ShmLink>::Peek::empty)
        return false;
    const auto lock = consumer_serve();
    if (!lock)
        return false; // the progress thread is serving: what it finds, it completes
    const auto serving = serving_from_consumer();
    if (!polled_.current()) { // made again only when links came, went or ended
        polled_links_.clear();
        for (const auto &[id, entry] : entries_)
            if (entry.kind == Kind::link && !entry.state.gone)
                polled_links_.push_back(id);
        polled_.make([this](auto list) {
            for (const std::uint64_t id : polled_links_)
                list(entries_.at(id).link());
        });
    }
    bool served = false;
    // By index: the handler may add or remove entries (and so links) while it runs.  While
    // the list is current no link came, went or ended since it was made (the handler's own
    // changes invalidate it), so the listed address is alive; after a change, by id.
    for (std::size_t i = 0; i < polled_links_.size(); ++i) {
        ShmLink *link = polled_.current() ? &polled_.listed(i) : link_of(polled_links_[i]);
        if (link != nullptr && link->has_messages()) {
            handler_.readable(*link);
            served = true;
        }
    }
    return served;
}

bool ShmProgress::serve_ready_links()
{
    std::lock_guard lock(mutex_);
    // Collected first: the handler may add or remove entries while it runs.
    std::vector<std::uint64_t> awake;
    for (const auto &[id, entry] : entries_)
        if (entry.kind == Kind::link && !entry.state.armed && !entry.state.gone)
            awake.push_back(id);
    bool served = false;
    for (unsigned round = 0; round <= options_.spin; ++round) {
        for (const std::uint64_t id : awake) {
            ShmLink *link = link_of(id);
            if (link != nullptr && link->has_messages()) {
                handler_.readable(*link);
                served = true;
            }
        }
        if (served)
            return true;
    }
    if (consumers_polling_)
        return false; // nap unarmed: the pollers serve the rings, the thread looks now and then
    // Nothing came: arm them all.  One that has messages after all is served next round.
    bool ready = false;
    for (const std::uint64_t id : awake) {
        ShmLink *link = link_of(id);
        if (link == nullptr)
            continue;
        if (link->arm_doorbell())
            entries_.at(id).state.armed = true;
        else
            ready = true;
    }
    return ready;
}

void ShmProgress::report_gone(std::uint64_t id)
{
    ShmLink *link = link_of(id);
    if (link == nullptr)
        return;
    // What the peer published before it went is delivered first, batch after batch.
    while (link->has_messages()) {
        handler_.readable(*link);
        link = link_of(id); // the handler may have removed it
        if (link == nullptr)
            return;
    }
    polled_.invalidate(); // a poll no longer looks at it
    entries_.at(id).state.gone = true;
    unwatch_link(*link);
    handler_.link_ended(*link);
}

void ShmProgress::on_event(std::uint64_t data, std::uint32_t)
{
    std::lock_guard lock(mutex_);
    const std::uint64_t id = data >> 2;
    const auto it = entries_.find(id);
    if (it == entries_.end())
        return; // removed after epoll_wait returned its event
    Entry &entry = it->second;
    switch (entry.kind) {
    case Kind::acceptor:
        handler_.incoming(entry.acceptor());
        return;
    case Kind::fd:
        handler_.ready(entry.fd);
        return;
    case Kind::link:
        if ((data & 3) != Source::primary) {
            report_gone(id);
        } else if (!entry.state.gone) {
            // Rung: awake now; serve_ready_links() takes its messages before the next sleep.
            entry.state.armed = false;
            entry.link().doorbell_woken();
        }
        return;
    }
}

os::ProgressLoop::Sleep ShmProgress::before_sleep()
{
    consumers_polling_ = spin_.spinning();
    if (serve_ready_links())
        return {0};
    return {consumers_polling_ ? kConsumerCheckMicroseconds : Sleep::kUntilWoken};
}

} // namespace ndk::soft::shm
