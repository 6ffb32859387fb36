// The thread that makes the shm transport's connections progress while nobody posts: it
// sleeps in epoll on every listening socket, every link's doorbell, control socket and peer
// pidfd, and on any descriptor an establishment waits on, and calls the owner's handler for
// what happened: a connection waiting on an acceptor, messages on a link, a link whose peer is
// gone, a descriptor readable.  One per process or per owner object (the soft provider: per
// adapter); the handler runs on this thread, one call at a time.
//
// Sleeping without losing a message: before each epoll_wait the thread arms every link's
// doorbell (shm_doorbell.hpp: "sleeping", then one more look at the ring); a link with
// messages is served instead and the thread does not sleep.  While it is serving, links are
// not armed, so a busy peer makes no system call per message.  Options::spin looks at the
// rings that many more rounds before arming (latency for CPU).
//
// A peer that dies (its pidfd readable) or closes the link (its control socket readable: at
// EOF, or carrying anything, which an established link never does) is reported once per link
// by peer_gone(), after one more messages() call if its ring still holds what it published
// before it went, and within the time an epoll wake-up takes.  The link's descriptors then
// leave the epoll set; the link stays registered until remove().
//
// Progress driven by the consumer, as libfabric's providers make progress inside fi_cq_read: a
// thread that polls and finds nothing calls poll_from_consumer(), which serves the links'
// rings itself unless the progress thread is serving them right then.  A poll that finds every
// ring empty takes no lock (shm_polled_links.hpp).  While consumers poll,
// the progress thread leaves the doorbells unarmed and looks at the rings every
// kConsumerCheckMicroseconds instead of sleeping until rung: a producer then makes no system call per
// message and wakes no thread, and two busy-polling processes on a small host keep their cores
// (docs/transport.md, "Progress").  "Consumers poll" means one spins (ConsumerSpin): a
// consumer that polls once a millisecond would leave messages waiting for its next poll, so
// for it the thread arms the doorbells and sleeps until rung, as when nobody polls.
//
// add() and remove() may be called from any thread, including from the handler
// (soft_transport_progress.hpp).  stop() (and the destructor) joins the thread.
#pragma once

#include "providers/soft/os/consumer_spin.hpp"
#include "providers/soft/shm/shm_link.hpp"
#include "providers/soft/shm/shm_polled_links.hpp"
#include "providers/soft/soft_transport_progress.hpp"

#include <cstdint>
#include <vector>

namespace ndk::soft::shm {

// incoming: a connection waits on an acceptor; readable: messages wait in a link's ring
// (receive them, or a batch of them: while the ring holds any the thread calls again before it
// sleeps, a consumer's poll at its next poll, and a link's end only after them); link_ended: the peer exited
// or closed the link; ready: a descriptor given to add_fd() is readable (an establishment's
// answer, typically).
using ProgressHandler = soft::ProgressHandler<ShmAcceptor, ShmLink>;

struct ShmEntryState {
    bool armed = false; // a link's doorbell is armed
    bool gone = false;  // a link's link_ended() was called
};

class ShmProgress final : public TransportProgress<ShmAcceptor, ShmLink, ShmEntryState> {
public:
    struct Options {
        unsigned spin = 0; // rounds over the links' rings before arming their doorbells
    };

    explicit ShmProgress(ProgressHandler &handler) : ShmProgress(handler, Options{}) {}
    ShmProgress(ProgressHandler &handler, Options options);
    ~ShmProgress();

    // A descriptor given to add_fd() is watched level-triggered until removed: the handler
    // must consume what makes it readable.

    // Serve the links whose rings hold messages, on the calling thread (the handler runs
    // here); false when the progress thread is serving (try again at the next poll), when
    // called from within the handler, or when nothing was waiting.  Any thread that holds
    // none of the locks the handler takes.
    bool poll_from_consumer();

    // How long the progress thread sleeps unarmed while consumers poll (above).  Each of its
    // wake-ups takes a core from a poller: in the two-process ping-pong (ndk_perf send_lat
    // --processes, transport=shm) 250 us gave a p99 of 31-34 us, 2 ms 1.3 us, at the same
    // median (0.9 us).  A consumer that stops polling leaves messages to the thread for at
    // most two naps; then it arms the doorbells and sleeps until rung.
    static constexpr int kConsumerCheckMicroseconds = 2000;

private:
    // Which of a link's descriptors an epoll event is for (the low bits of its data).
    enum Source : std::uint64_t { primary = 0, pidfd = 1, control = 2 };

    void watch_entry(std::uint64_t id, Entry &entry) override;
    void unwatch_entry(const Entry &entry) override;
    void watch(int fd, std::uint64_t id, Source source, std::uint32_t events);
    void unwatch_link(ShmLink &link);
    // The links with messages served; then armed, the thread sleeps until something is rung;
    // unarmed while consumers poll, a short nap, after which the thread looks at the rings
    // and at whether anybody still polls.
    Sleep before_sleep() override;
    void on_event(std::uint64_t data, std::uint32_t events) override;
    // The links with messages, served; false when every link is armed (the thread may sleep)
    // or, while consumers poll, when nothing came (the thread naps unarmed).
    bool serve_ready_links();
    void report_gone(std::uint64_t id);
    ShmLink *link_of(std::uint64_t id);

    Options options_;
    bool consumers_polling_ = false;           // the thread's view: nap unarmed
    // poll_from_consumer's lists of the links not gone: their addresses, looked at without
    // mutex_ by an empty poll and served under it while current (polled_), and their ids,
    // served under mutex_ once a handler changed the links (link_of() skips those removed or
    // gone since: the handler may remove or end links while it runs).  Made
    // under mutex_ when polled_ is not current; polled_ is invalidated before a link is added,
    // removed or ends (watch_entry, unwatch_entry, report_gone).
    PolledLinks<ShmLink> polled_;
    std::vector<std::uint64_t> polled_links_;
};

} // namespace ndk::soft::shm
