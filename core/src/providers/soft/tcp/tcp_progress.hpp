// The thread that makes the tcp transport's sockets progress while nobody posts: epoll on
// acceptors, established links and the descriptors of establishments in flight, calling the
// owner's handler for what happened (tcp_establish.hpp, tcp_link.hpp).  The loop is the one
// the shm transport's ShmProgress runs on (progress_loop.hpp); one per owner (the soft
// provider: per adapter), the handler called on this thread, one call at a time.
//
// Links and establishment descriptors are watched edge-triggered for reading and writing:
// a link's readable() must call receive(), which reads until the socket would block (or, for
// an event that reported no hang-up, until a read leaves it empty: TcpLink::arrival_reported,
// since every later arrival is an event of its own), and an establishment's ready() must call
// poll(), which reads until it would block; a link that becomes writable
// is flushed here (its queued FPDUs go), without a handler call.  A link added with bytes
// already read past the handshake gets one readable() at once, since the socket may not
// become readable again for them.  The first time a link is seen ended (EOF, reset,
// Terminate either way) the handler's link_ended() is called, once; the link stays watched
// (its queue, a Terminate, may still need flushing) until remove().
//
// While a consumer spins on its CQ (ConsumerSpin, consumer_spin.hpp), its empty polls serve
// the links (poll_from_consumer): the thread then watches the links for hang-ups, errors and
// room to write only, not for arrivals, and naps kConsumerCheckMicroseconds between looks at
// whether one still spins, as ShmProgress leaves its doorbells unarmed; otherwise each arrival
// woke it to wait on the mutex the poller holds.  Once nobody spins, the links are watched
// for reading again, which reports at once what arrived meanwhile.  Meanwhile the answers a
// consumer's delivery sends (the Read Responses to the peer's fences) are held in the link's
// corked stream (TcpLink::hold_answers()) until the consumer sends on it (its answer, the
// pong of a ping-pong: both in one sendmsg) or its thread polls again empty - this object or
// any other TcpProgress: a thread that drives two adapters (both ends of a link in one
// process) polls the other's CQ next, and the other's peer is this link, waiting for what is
// held - or the thread's next look, for a consumer that stopped polling: what the peer waits
// for is late by one turn of the consumer's loop, or one nap at most once nobody polls.
// Whoever holds the mutex releases what is held before it lets go (a poll, on_event,
// before_sleep), so a poll elsewhere that finds it held need not wait for it.
//
// An acceptor that could not take a waiting connection for want of descriptors or memory
// (TcpAcceptor::starved(): EMFILE, ENFILE) is not watched for a while: its socket stays
// readable while the connection waits in the kernel's queue, so watching it would spin.  It
// is watched again after a pause that doubles, from 10 ms up to 1 s, while it stays starved,
// and starts again at 10 ms once it accepts; the connections wait in the kernel's backlog
// meanwhile, and are taken once a descriptor frees (a silent peer dropped, docs/semantics.md
// TCP-LISTENER).
//
// add() and remove() may be called from any thread, and from the handler
// (soft_transport_progress.hpp).  stop() (and the destructor) joins the thread.
#pragma once

#include "providers/soft/soft_transport_progress.hpp"
#include "providers/soft/tcp/tcp_establish.hpp"
#include "providers/soft/tcp/tcp_link.hpp"

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <vector>

namespace ndk::soft::tcp {

// incoming: a connection waits on an acceptor; readable: bytes arrived on a link, or the
// peer closed (link.receive(sink)); link_ended: the link has ended (link.state() says how);
// ready: a descriptor given to add_fd() became readable or writable (the establishment's
// poll()).
using TcpProgressHandler = ProgressHandler<TcpAcceptor, TcpLink>;

struct TcpEntryState {
    using Clock = std::chrono::steady_clock;
    bool kick = false;  // a link to serve before the next sleep
    bool ended = false; // link_ended() was called
    // An acceptor out of descriptors: not watched until resume_at (pause()).
    bool paused = false;
    std::chrono::milliseconds backoff{0};
    Clock::time_point resume_at{};
};

struct TcpProgressOptions {
    // The thread behaves as while a consumer spins (arrivals unwatched, naps, answers a
    // consumer's poll delivers held), whatever the clock says: for tests of that state, which
    // a loaded machine's slow polls would otherwise leave now and then.
    bool consumers_spin = false;
};

class TcpProgress final : public TransportProgress<TcpAcceptor, TcpLink, TcpEntryState> {
public:
    using Options = TcpProgressOptions;
    explicit TcpProgress(TcpProgressHandler &handler, Options options = {});
    ~TcpProgress();

    // Serve, on the calling thread (the handler runs here), the links whose sockets hold
    // bytes: one poll(2) over the open links, then their readable() as for an event without
    // hang-up; with one link open, one read of its socket instead (TcpLink::read_ahead()),
    // then its readable() if it found anything, so that an arrival costs one system call.  A
    // link's end stays the progress thread's to report.  False when the progress
    // thread is serving (what it finds, it delivers), when called from within the handler, or
    // when nothing was waiting.  Any thread that holds none of the locks the handler takes.
    bool poll_from_consumer();

    // How long the thread naps, the links' arrivals unwatched, while a consumer spins: a
    // consumer that stops spinning leaves what arrives to the thread for at most that long.
    static constexpr int kConsumerCheckMicroseconds = 2000;

private:
    using Clock = TcpEntryState::Clock;

    void watch_entry(std::uint64_t id, Entry &entry) override;
    void unwatch_entry(const Entry &entry) override;
    // The links added with bytes to serve (kick), served, and the paused acceptors whose
    // pause is over watched again; then sleep until an event or the next pause's end.
    Sleep before_sleep() override;
    void on_event(std::uint64_t id, std::uint32_t events) override;
    void serve_link(std::uint64_t id, bool readable, bool writable);
    // poll_from_consumer's delivery of what link `id` holds, on the consumer's thread.
    void deliver_from_consumer(std::uint64_t id);
    void serve_acceptor(std::uint64_t id);
    void pause(Entry &acceptor);
    // Watch again the acceptors whose pause is over; how long to sleep until the next one's
    // is (none paused: until woken).
    Sleep resume_paused();

    // The events a link is watched for: arrivals among them unless consumers spin.
    std::uint32_t link_events() const;
    // Watch the links for arrivals again, or no more, as spin_ says now (under mutex_).
    void follow_consumers();
    // Write what the links a consumer served hold (TcpLink::hold_answers()), under mutex_.
    void release_held_answers();
    // The same for the other TcpProgress objects in which the calling thread's polls left
    // answers held (each under its mutex, taken only if free: see above).
    void release_answers_held_elsewhere();

    Options options_;
    bool arrivals_unwatched_ = false; // the links watched without EPOLLIN, under mutex_
    std::vector<std::uint64_t> held_links_; // served holding their answers, under mutex_
    // poll_from_consumer's list of the open links and their pollfds, under mutex_, as
    // entries_ stood at entries_changed_ == polled_links_made_ (made again when a link comes,
    // goes or ends).
    std::vector<std::uint64_t> polled_links_;
    std::vector<pollfd> polled_fds_;
    std::uint64_t polled_links_made_ = kNeverMade;
};

} // namespace ndk::soft::tcp
