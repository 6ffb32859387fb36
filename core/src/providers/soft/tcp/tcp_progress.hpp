// The thread that makes the tcp transport's sockets progress while nobody posts: epoll on
// acceptors, established links and the descriptors of establishments in flight, calling the
// owner's handler for what happened (tcp_establish.hpp, tcp_link.hpp).  The loop is the one
// the shm transport's ShmProgress runs on (progress_loop.hpp); one per owner (the soft
// provider: per adapter), the handler called on this thread, one call at a time.
//
// Links and establishment descriptors are watched edge-triggered for reading and writing:
// a link's readable() must call receive(), which reads until the socket would block, and an
// establishment's ready() must call poll(), which does the same; a link that becomes writable
// is flushed here (its queued FPDUs go), without a handler call.  A link added with bytes
// already read past the handshake gets one readable() at once, since the socket may not
// become readable again for them.  The first time a link is seen ended (EOF, reset,
// Terminate either way) the handler's link_ended() is called, once; the link stays watched
// (its queue, a Terminate, may still need flushing) until remove().
//
// An acceptor that could not take a waiting connection for want of descriptors or memory
// (TcpAcceptor::starved(): EMFILE, ENFILE) is not watched for a while: its socket stays
// readable while the connection waits in the kernel's queue, so watching it would spin.  It
// is watched again after a pause that doubles, from 10 ms up to 1 s, while it stays starved,
// and starts again at 10 ms once it accepts; the connections wait in the kernel's backlog
// meanwhile, and are taken once a descriptor frees (a silent peer dropped, docs/semantics.md
// TCP-LISTENER).
//
// add() and remove() may be called from any thread, and from the handler.  After remove()
// returns the handler is not called for that object again, so the owner may destroy it;
// objects must not move while registered.  stop() (and the destructor) joins the thread.
#pragma once

#include "providers/soft/os/progress_loop.hpp"
#include "providers/soft/tcp/tcp_establish.hpp"
#include "providers/soft/tcp/tcp_link.hpp"

#include <chrono>
#include <cstdint>
#include <map>

namespace ndk::soft::tcp {

class TcpProgressHandler {
public:
    virtual ~TcpProgressHandler() = default;
    // A connection waits: acceptor.accept() until it returns nothing.
    virtual void incoming(TcpAcceptor &acceptor) = 0;
    // Bytes arrived (or the peer closed): link.receive(sink).
    virtual void readable(TcpLink &link) = 0;
    // The link has ended (link.state() says how).  Once per link.
    virtual void link_ended(TcpLink &link) = 0;
    // A descriptor given to add_fd() became readable or writable: the establishment's poll().
    virtual void ready(int fd) = 0;
};

class TcpProgress final : public os::ProgressLoop {
public:
    explicit TcpProgress(TcpProgressHandler &handler);
    ~TcpProgress();

    void add(TcpAcceptor &acceptor);
    void remove(TcpAcceptor &acceptor);
    void add(TcpLink &link);
    void remove(TcpLink &link);
    void add_fd(int fd);
    void remove_fd(int fd);

private:
    using Clock = std::chrono::steady_clock;
    enum class Kind { acceptor, link, fd };
    struct Entry {
        Kind kind;
        void *object = nullptr; // TcpAcceptor or TcpLink
        int fd = -1;
        bool kick = false;  // a link to serve before the next sleep
        bool ended = false; // link_ended() was called
        // An acceptor out of descriptors: not watched until resume_at (pause()).
        bool paused = false;
        std::chrono::milliseconds backoff{0};
        Clock::time_point resume_at{};
    };

    void insert(Entry entry, std::uint32_t events);
    void erase(Kind kind, const void *object, int fd);
    // The links added with bytes to serve (kick), served, and the paused acceptors whose
    // pause is over watched again; then sleep until an event or the next pause's end.
    Sleep before_sleep() override;
    void on_event(std::uint64_t id, std::uint32_t events) override;
    void serve_link(std::uint64_t id, bool readable, bool writable);
    void serve_acceptor(std::uint64_t id);
    void pause(Entry &acceptor);
    // Watch again the acceptors whose pause is over; how long to sleep until the next one's
    // is (none paused: until woken).
    Sleep resume_paused();

    TcpProgressHandler &handler_;
    // Under mutex_, which the handler runs under (so remove() on another thread waits for the
    // call in progress to end) and which lets it call add() or remove() itself.
    std::map<std::uint64_t, Entry> entries_;
    std::uint64_t next_id_ = 1; // 0 is the loop's wake eventfd's
};

} // namespace ndk::soft::tcp
