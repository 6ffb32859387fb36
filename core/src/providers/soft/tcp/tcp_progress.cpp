#include "providers/soft/tcp/tcp_progress.hpp"

#include <sys/epoll.h>

#include <algorithm>
#include <optional>
#include <system_error>
#include <vector>

namespace ndk::soft::tcp {

namespace {

constexpr std::uint32_t kStreamEvents = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
constexpr std::chrono::milliseconds kFirstPause{10}, kLongestPause{1000};

} // namespace

TcpProgress::TcpProgress(TcpProgressHandler &handler) : handler_(handler) { start(); }

TcpProgress::~TcpProgress() { stop(); }

void TcpProgress::insert(Entry entry, std::uint32_t events)
{
    std::lock_guard lock(mutex_);
    const std::uint64_t id = next_id_++;
    watch(entry.fd, id, events);
    entries_.emplace(id, entry);
    if (entry.kick)
        wake();
}

void TcpProgress::add(TcpAcceptor &acceptor)
{
    insert({Kind::acceptor, &acceptor, acceptor.fd()}, EPOLLIN);
}

void TcpProgress::add(TcpLink &link)
{
    // Served once at once: the establishment may have read its first FPDUs already.
    insert({Kind::link, &link, link.fd(), true}, kStreamEvents);
}

void TcpProgress::add_fd(int fd) { insert({Kind::fd, nullptr, fd}, kStreamEvents); }

void TcpProgress::erase(Kind kind, const void *object, int fd)
{
    std::lock_guard lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->second.kind == kind && it->second.object == object &&
            (object != nullptr || it->second.fd == fd)) {
            unwatch(it->second.fd);
            entries_.erase(it);
            return;
        }
    }
}

void TcpProgress::remove(TcpAcceptor &acceptor) { erase(Kind::acceptor, &acceptor, -1); }
void TcpProgress::remove(TcpLink &link) { erase(Kind::link, &link, -1); }
void TcpProgress::remove_fd(int fd) { erase(Kind::fd, nullptr, fd); }

void TcpProgress::serve_link(std::uint64_t id, bool readable, bool writable)
{
    auto it = entries_.find(id);
    auto *link = static_cast<TcpLink *>(it->second.object);
    if (writable)
        link->flush();
    if (readable && !it->second.ended) {
        handler_.readable(*link);
        it = entries_.find(id); // the handler may have removed it
        if (it == entries_.end())
            return;
    }
    if (!it->second.ended && link->state() != TcpLinkState::open) {
        it->second.ended = true;
        handler_.link_ended(*link);
    }
}

os::ProgressLoop::Sleep TcpProgress::before_sleep()
{
    std::lock_guard lock(mutex_);
    // Collected first: the handler may add or remove entries while it runs.
    std::vector<std::uint64_t> kicked;
    for (auto &[id, entry] : entries_)
        if (entry.kick) {
            entry.kick = false;
            kicked.push_back(id);
        }
    for (const std::uint64_t id : kicked)
        if (entries_.count(id) != 0)
            serve_link(id, true, true);
    return resume_paused();
}

void TcpProgress::serve_acceptor(std::uint64_t id)
{
    auto *acceptor = static_cast<TcpAcceptor *>(entries_.at(id).object);
    handler_.incoming(*acceptor);
    const auto it = entries_.find(id); // the handler may have removed it
    if (it == entries_.end())
        return;
    if (acceptor->starved())
        pause(it->second);
    else
        it->second.backoff = {};
}

void TcpProgress::pause(Entry &acceptor)
{
    // Out of the epoll set rather than watched for nothing: a shut-down listening socket
    // reports EPOLLHUP whatever it is watched for.
    unwatch(acceptor.fd);
    acceptor.paused = true;
    acceptor.backoff = acceptor.backoff.count() == 0 ? kFirstPause
                                                     : std::min(acceptor.backoff * 2, kLongestPause);
    acceptor.resume_at = Clock::now() + acceptor.backoff;
}

os::ProgressLoop::Sleep TcpProgress::resume_paused()
{
    const Clock::time_point now = Clock::now();
    std::optional<Clock::duration> sleep;
    for (auto &[id, entry] : entries_) {
        if (!entry.paused)
            continue;
        if (entry.resume_at <= now) {
            try {
                watch(entry.fd, id, EPOLLIN); // level-triggered: a waiting connection reports
                entry.paused = false;
                continue;
            } catch (const std::system_error &) {
                entry.resume_at = now + kLongestPause; // epoll refused it: later
            }
        }
        sleep = std::min(sleep.value_or(Clock::duration::max()), entry.resume_at - now);
    }
    if (!sleep)
        return {};
    return {static_cast<long>(std::chrono::ceil<std::chrono::microseconds>(*sleep).count())};
}

void TcpProgress::on_event(std::uint64_t id, std::uint32_t events)
{
    std::lock_guard lock(mutex_);
    const auto it = entries_.find(id);
    if (it == entries_.end())
        return; // removed after epoll_wait returned its event
    switch (it->second.kind) {
    case Kind::acceptor:
        serve_acceptor(id);
        return;
    case Kind::fd:
        handler_.ready(it->second.fd);
        return;
    case Kind::link:
        // A hang-up or error is readable too: receive() finds the EOF or the reset.
        serve_link(id, (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0,
                   (events & EPOLLOUT) != 0);
        return;
    }
}

} // namespace ndk::soft::tcp
