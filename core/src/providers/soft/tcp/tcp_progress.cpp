#include "providers/soft/tcp/tcp_progress.hpp"

#include <sys/epoll.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <system_error>
#include <vector>

namespace ndk::soft::tcp {

namespace {

constexpr std::uint32_t kStreamEvents = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
// A link's while consumers spin: its hang-up, error or room to write, not its arrivals.
constexpr std::uint32_t kQuietLinkEvents = EPOLLOUT | EPOLLRDHUP | EPOLLET;
constexpr std::chrono::milliseconds kFirstPause{10}, kLongestPause{1000};

// The progress objects alive, for a thread that left answers held in one of them and polls
// another (release_answers_held_elsewhere): looked up under the mutex, so that one destroyed
// meanwhile is not touched.  An object made again at a destroyed one's address may have its
// answers released early: that only sends them sooner.
std::mutex &live_mutex()
{
    static std::mutex mutex;
    return mutex;
}
std::set<const void *> &live_progress()
{
    static std::set<const void *> live;
    return live;
}

// The progress objects in which this thread's consumer polls left answers held.
thread_local std::vector<TcpProgress *> tl_holding;

} // namespace

void TcpProgress::release_answers_held_elsewhere()
{
    if (tl_holding.empty() || (tl_holding.size() == 1 && tl_holding.front() == this))
        return; // none, or only here: this poll releases them under its lock
    std::lock_guard live(live_mutex());
    std::erase_if(tl_holding, [&](TcpProgress *holding) {
        if (holding == this)
            return false;
        if (live_progress().count(holding) == 0)
            return true; // destroyed, its links with it
        const auto lock = holding->hold_if_idle();
        if (!lock)
            return false; // its holder releases them before it lets go (on_event, a poll);
                          // looked at again at this thread's next poll all the same
        holding->release_held_answers();
        return true;
    });
}

bool TcpProgress::poll_from_consumer()
{
    // The thread polls here, not there: what it held there for its next send goes now, not
    // at that object's thread's next look (a nap away), which the peer polled here may wait on.
    release_answers_held_elsewhere();
    const auto lock = consumer_poll();
    if (!lock)
        return false; // the progress thread is serving
    release_held_answers(); // this consumer came back without sending on those links
    if (entries_changed_since(polled_links_made_)) { // made again when a link came, went or ended
        polled_links_.clear();
        polled_fds_.clear();
        for (const auto &[id, entry] : entries_)
            if (entry.kind == Kind::link && !entry.state.ended) {
                polled_links_.push_back(id);
                polled_fds_.push_back({entry.fd, POLLIN | POLLRDHUP, 0});
            }
    }
    if (polled_links_.size() == 1) { // one socket: the read that asks it takes what came
        TcpLink &link = entries_.at(polled_links_[0]).link();
        if (!link.read_ahead())
            return false;
        const auto serving = serving_from_consumer();
        deliver_from_consumer(polled_links_[0]);
        return true;
    }
    if (polled_fds_.empty() || ::poll(polled_fds_.data(), polled_fds_.size(), 0) <= 0)
        return false;
    const auto serving = serving_from_consumer();
    bool served = false;
    for (std::size_t i = 0; i < polled_links_.size(); ++i) {
        if (polled_fds_[i].revents != POLLIN)
            continue; // nothing, or an end: the progress thread's event reports it
        const auto it = entries_.find(polled_links_[i]);
        if (it == entries_.end() || it->second.state.ended)
            continue; // the handler removed it, or it ended, meanwhile
        it->second.link().arrival_reported(false);
        deliver_from_consumer(polled_links_[i]);
        served = true;
    }
    return served;
}

void TcpProgress::deliver_from_consumer(std::uint64_t id)
{
    TcpLink &link = entries_.at(id).link();
    if (arrivals_unwatched_) { // the thread naps: it releases them within one nap
        link.hold_answers();
        held_links_.push_back(id);
        if (std::find(tl_holding.begin(), tl_holding.end(), this) == tl_holding.end())
            tl_holding.push_back(this);
    }
    handler_.readable(link);
    const auto it = entries_.find(id); // the handler may have removed it
    if (it != entries_.end() && it->second.link().state() != TcpLinkState::open) {
        it->second.state.kick = true; // link_ended() from the progress thread, before it sleeps
        wake();
    }
}

TcpProgress::TcpProgress(TcpProgressHandler &handler, Options options)
    : TransportProgress(handler), options_(options)
{
    {
        std::lock_guard live(live_mutex());
        live_progress().insert(this);
    }
    start();
}

TcpProgress::~TcpProgress()
{
    {
        std::lock_guard live(live_mutex()); // no other thread's poll reaches it from now on
        live_progress().erase(this);
    }
    stop();
}

void TcpProgress::watch_entry(std::uint64_t id, Entry &entry)
{
    switch (entry.kind) {
    case Kind::acceptor: watch(entry.fd, id, EPOLLIN); return;
    case Kind::fd: watch(entry.fd, id, kStreamEvents); return;
    case Kind::link:
        // Served once at once: the establishment may have read its first FPDUs already.
        entry.fd = entry.link().fd();
        entry.state.kick = true;
        watch(entry.fd, id, link_events());
        return;
    }
}

void TcpProgress::unwatch_entry(const Entry &entry) { unwatch(entry.fd); }

void TcpProgress::release_held_answers()
{
    for (const std::uint64_t id : held_links_) {
        const auto it = entries_.find(id);
        if (it != entries_.end())
            it->second.link().release_answers();
    }
    held_links_.clear();
}

std::uint32_t TcpProgress::link_events() const
{
    return arrivals_unwatched_ ? kQuietLinkEvents : kStreamEvents;
}

void TcpProgress::follow_consumers()
{
    const bool spinning = options_.consumers_spin || spin_.spinning();
    if (spinning == arrivals_unwatched_)
        return;
    arrivals_unwatched_ = spinning;
    for (const auto &[id, entry] : entries_)
        if (entry.kind == Kind::link)
            rewatch(entry.fd, id, link_events());
}

void TcpProgress::serve_link(std::uint64_t id, bool readable, bool writable)
{
    auto it = entries_.find(id);
    TcpLink *link = &it->second.link();
    if (writable)
        link->flush();
    if (readable && !it->second.state.ended) {
        handler_.readable(*link);
        it = entries_.find(id); // the handler may have removed it
        if (it == entries_.end())
            return;
    }
    if (!it->second.state.ended && link->state() != TcpLinkState::open) {
        it->second.state.ended = true;
        ++entries_changed_; // ended: no more the consumers' to poll
        handler_.link_ended(*link);
    }
}

os::ProgressLoop::Sleep TcpProgress::before_sleep()
{
    std::lock_guard lock(mutex_);
    release_held_answers(); // a consumer that stopped polling sends them no more
    // Collected first: the handler may add or remove entries while it runs.
    std::vector<std::uint64_t> kicked;
    for (auto &[id, entry] : entries_)
        if (entry.state.kick) {
            entry.state.kick = false;
            kicked.push_back(id);
        }
    for (const std::uint64_t id : kicked)
        if (entries_.count(id) != 0)
            serve_link(id, true, true);
    follow_consumers();
    const Sleep until_resumed = resume_paused();
    if (!arrivals_unwatched_)
        return until_resumed;
    if (until_resumed.microseconds == Sleep::kUntilWoken)
        return {kConsumerCheckMicroseconds};
    return {std::min<long>(until_resumed.microseconds, kConsumerCheckMicroseconds)};
}

void TcpProgress::serve_acceptor(std::uint64_t id)
{
    TcpAcceptor *acceptor = &entries_.at(id).acceptor();
    handler_.incoming(*acceptor);
    const auto it = entries_.find(id); // the handler may have removed it
    if (it == entries_.end())
        return;
    if (acceptor->starved())
        pause(it->second);
    else
        it->second.state.backoff = {};
}

void TcpProgress::pause(Entry &acceptor)
{
    // Out of the epoll set rather than watched for nothing: a shut-down listening socket
    // reports EPOLLHUP whatever it is watched for.
    unwatch(acceptor.fd);
    TcpEntryState &s = acceptor.state;
    s.paused = true;
    s.backoff = s.backoff.count() == 0 ? kFirstPause : std::min(s.backoff * 2, kLongestPause);
    s.resume_at = Clock::now() + s.backoff;
}

os::ProgressLoop::Sleep TcpProgress::resume_paused()
{
    const Clock::time_point now = Clock::now();
    std::optional<Clock::duration> sleep;
    for (auto &[id, entry] : entries_) {
        TcpEntryState &s = entry.state;
        if (!s.paused)
            continue;
        if (s.resume_at <= now) {
            try {
                watch(entry.fd, id, EPOLLIN); // level-triggered: a waiting connection reports
                s.paused = false;
                continue;
            } catch (const std::system_error &) {
                s.resume_at = now + kLongestPause; // epoll refused it: later
            }
        }
        sleep = std::min(sleep.value_or(Clock::duration::max()), s.resume_at - now);
    }
    if (!sleep)
        return {};
    return {static_cast<long>(std::chrono::ceil<std::chrono::microseconds>(*sleep).count())};
}

void TcpProgress::on_event(std::uint64_t id, std::uint32_t events)
{
    std::lock_guard lock(mutex_);
    release_held_answers(); // a consumer's poll elsewhere may have found this mutex held
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
    case Kind::link: {
        // A hang-up or error is readable too: receive() finds the EOF or the reset.
        const bool hangup = (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
        const bool readable = hangup || (events & EPOLLIN) != 0;
        if (readable)
            it->second.link().arrival_reported(hangup); // one read when it leaves nothing
        serve_link(id, readable, (events & EPOLLOUT) != 0);
        return;
    }
    }
}

} // namespace ndk::soft::tcp
