#include "providers/soft/shm/shm_progress.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <system_error>

namespace ndk::soft::shm {

namespace {

constexpr std::uint64_t kWakeData = 0; // entry ids start at 1

constexpr std::uint64_t data_of(std::uint64_t id, std::uint64_t source) { return id << 2 | source; }

// The progress object whose handler this thread is running, if any: the handler must not be
// entered again from inside itself (its buffers are in use), and the mutex is recursive.
thread_local const ShmProgress *tl_serving = nullptr;

class Serving {
public:
    explicit Serving(const ShmProgress *progress) : previous_(tl_serving) { tl_serving = progress; }
    ~Serving() { tl_serving = previous_; }
    Serving(const Serving &) = delete;
    Serving &operator=(const Serving &) = delete;

private:
    const ShmProgress *previous_;
};

} // namespace

ShmProgress::ShmProgress(ProgressHandler &handler, Options options)
    : handler_(handler), options_(options), epoll_(::epoll_create1(EPOLL_CLOEXEC)),
      wake_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC))
{
    if (!epoll_ || !wake_)
        throw std::system_error(errno, std::generic_category(), "epoll or eventfd");
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = kWakeData;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &event) != 0)
        throw std::system_error(errno, std::generic_category(), "epoll_ctl");
    thread_ = std::thread([this] { run(); });
}

ShmProgress::~ShmProgress() { stop(); }

void ShmProgress::stop()
{
    stopping_.store(true);
    wake();
    if (thread_.joinable())
        thread_.join();
}

void ShmProgress::wake() const
{
    const std::uint64_t one = 1;
    while (::write(wake_.get(), &one, sizeof one) < 0 && errno == EINTR) {
    }
}

std::uint64_t ShmProgress::insert(Entry entry)
{
    const std::uint64_t id = next_id_++;
    entries_.emplace(id, entry);
    return id;
}

void ShmProgress::watch(int fd, std::uint64_t id, Source source, std::uint32_t events)
{
    epoll_event event{};
    event.events = events;
    event.data.u64 = data_of(id, source);
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event) != 0)
        throw std::system_error(errno, std::generic_category(), "epoll_ctl ADD");
}

void ShmProgress::add(ShmAcceptor &acceptor)
{
    std::lock_guard lock(mutex_);
    watch(acceptor.fd(), insert({Kind::acceptor, &acceptor}), Source::primary, EPOLLIN);
}

void ShmProgress::add(ShmLink &link)
{
    std::lock_guard lock(mutex_);
    const std::uint64_t id = insert({Kind::link, &link});
    watch(link.doorbell_fd(), id, Source::primary, EPOLLIN);
    watch(link.peer_fd(), id, Source::pidfd, EPOLLIN);
    watch(link.control_fd(), id, Source::control, EPOLLIN | EPOLLRDHUP);
    // Not armed yet: the thread must look at its ring (messages may be there already) before
    // it sleeps again.
    wake();
}

void ShmProgress::add_fd(int fd)
{
    std::lock_guard lock(mutex_);
    watch(fd, insert({Kind::fd, nullptr, fd}), Source::primary, EPOLLIN);
}

void ShmProgress::erase(Kind kind, const void *object, int fd)
{
    std::lock_guard lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->second.kind != kind || it->second.object != object || it->second.fd != fd)
            continue;
        // Deleting a descriptor already deleted (a gone link's) fails harmlessly.
        auto unwatch = [this](int watched) {
            ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, watched, nullptr);
        };
        if (kind == Kind::link) {
            auto *link = static_cast<ShmLink *>(it->second.object);
            unwatch(link->doorbell_fd());
            unwatch(link->peer_fd());
            unwatch(link->control_fd());
        } else {
            unwatch(kind == Kind::acceptor ? static_cast<ShmAcceptor *>(it->second.object)->fd()
                                           : fd);
        }
        entries_.erase(it);
        return;
    }
}

void ShmProgress::remove(ShmAcceptor &acceptor) { erase(Kind::acceptor, &acceptor, -1); }
void ShmProgress::remove(ShmLink &link) { erase(Kind::link, &link, -1); }
void ShmProgress::remove_fd(int fd) { erase(Kind::fd, nullptr, fd); }

ShmLink *ShmProgress::link_of(std::uint64_t id)
{
    const auto it = entries_.find(id);
    if (it == entries_.end() || it->second.kind != Kind::link || it->second.gone)
        return nullptr;
    return static_cast<ShmLink *>(it->second.object);
}

bool ShmProgress::poll_from_consumer()
{
    note_consumer_poll();
    if (tl_serving == this)
        return false;
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (!lock)
        return false; // the progress thread is serving: what it finds, it completes
    Serving serving(this);
    polled_links_.clear();
    for (const auto &[id, entry] : entries_)
        if (entry.kind == Kind::link && !entry.gone)
            polled_links_.push_back(id);
    bool served = false;
    // By index: the handler may add or remove entries (and so links) while it runs.
    for (std::size_t i = 0; i < polled_links_.size(); ++i) {
        ShmLink *link = link_of(polled_links_[i]);
        if (link != nullptr && link->has_messages()) {
            handler_.messages(*link);
            served = true;
        }
    }
    return served;
}

namespace {

std::int64_t steady_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// A poll is recorded at most this often (two pollers of one adapter then share a cache line
// rarely), and a consumer spins when its recorded polls come closer than kSpinGap.
constexpr std::int64_t kRecordEvery = 2'000;  // ns
constexpr std::int64_t kSpinGap = 50'000;     // ns
constexpr std::int64_t kStillSpinning = 100'000; // ns: the last poll no longer ago than this

} // namespace

void ShmProgress::note_consumer_poll()
{
    const std::int64_t now = steady_ns();
    const std::int64_t previous = last_poll_ns_.load(std::memory_order_relaxed);
    if (now - previous < kRecordEvery)
        return;
    consumer_spins_.store(now - previous < kSpinGap, std::memory_order_relaxed);
    last_poll_ns_.store(now, std::memory_order_relaxed);
}

bool ShmProgress::consumers_spinning() const
{
    return consumer_spins_.load(std::memory_order_relaxed) &&
           steady_ns() - last_poll_ns_.load(std::memory_order_relaxed) < kStillSpinning;
}

bool ShmProgress::serve_ready_links()
{
    std::lock_guard lock(mutex_);
    Serving serving(this);
    // Collected first: the handler may add or remove entries while it runs.
    std::vector<std::uint64_t> awake;
    for (const auto &[id, entry] : entries_)
        if (entry.kind == Kind::link && !entry.armed && !entry.gone)
            awake.push_back(id);
    bool served = false;
    for (unsigned round = 0; round <= options_.spin; ++round) {
        for (const std::uint64_t id : awake) {
            ShmLink *link = link_of(id);
            if (link != nullptr && link->has_messages()) {
                handler_.messages(*link);
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
            entries_.at(id).armed = true;
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
    // What the peer published before it went is delivered first.
    if (link->has_messages())
        handler_.messages(*link);
    link = link_of(id); // the handler may have removed it
    if (link == nullptr)
        return;
    Entry &entry = entries_.at(id);
    entry.gone = true;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, link->doorbell_fd(), nullptr);
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, link->peer_fd(), nullptr);
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, link->control_fd(), nullptr);
    handler_.peer_gone(*link);
}

void ShmProgress::dispatch(std::uint64_t data)
{
    std::lock_guard lock(mutex_);
    Serving serving(this);
    const std::uint64_t id = data >> 2;
    const auto it = entries_.find(id);
    if (it == entries_.end())
        return; // removed after epoll_wait returned its event
    Entry &entry = it->second;
    switch (entry.kind) {
    case Kind::acceptor:
        handler_.incoming(*static_cast<ShmAcceptor *>(entry.object));
        return;
    case Kind::fd:
        handler_.readable(entry.fd);
        return;
    case Kind::link:
        if ((data & 3) != Source::primary) {
            report_gone(id);
        } else if (!entry.gone) {
            // Rung: awake now; serve_ready_links() takes its messages before the next sleep.
            entry.armed = false;
            static_cast<ShmLink *>(entry.object)->doorbell_woken();
        }
        return;
    }
}

void ShmProgress::run()
{
    constexpr int kBatch = 64;
    epoll_event events[kBatch];
    while (!stopping_.load()) {
        consumers_polling_ = consumers_spinning();
        if (serve_ready_links())
            continue;
        // Armed: until something is rung.  Unarmed while consumers poll: a short nap, after
        // which the thread looks at the rings and at whether anybody still polls.
        int n;
        if (consumers_polling_) {
            const timespec nap{0, kConsumerCheckMicroseconds * 1000L};
            n = ::epoll_pwait2(epoll_.get(), events, kBatch, &nap, nullptr);
            if (n < 0 && errno == ENOSYS) // before Linux 5.11: a millisecond's nap
                n = ::epoll_wait(epoll_.get(), events, kBatch, 1);
        } else {
            n = ::epoll_wait(epoll_.get(), events, kBatch, -1);
        }
        if (n < 0 && errno != EINTR)
            throw std::system_error(errno, std::generic_category(), "epoll_wait");
        for (int i = 0; i < n; ++i) {
            if (events[i].data.u64 == kWakeData) {
                std::uint64_t count;
                while (::read(wake_.get(), &count, sizeof count) < 0 && errno == EINTR) {
                }
                continue;
            }
            dispatch(events[i].data.u64);
        }
    }
}

} // namespace ndk::soft::shm
