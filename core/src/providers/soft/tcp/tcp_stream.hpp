// One non-blocking TCP socket with the two things every user of it needs: an outbound queue
// (bytes the socket did not take yet, copied, flushed when it is writable again) so that no
// caller ever blocks, and a read that drains what the kernel holds.  The establishment
// objects and the established link (tcp_establish.hpp, tcp_link.hpp) each own one, in turn.
//
// One sendmsg carries everything that goes at one moment: what waits in the queue and the
// new pieces behind it, and, while the stream is corked (cork()), small writes are held in
// the queue to go with what follows when it is uncorked: the link corks while it takes in
// what one read brought, so that the answers it sends (Read Responses) and anything the
// consumer posts meanwhile leave in one system call (docs/performance.md, soft:tcp).
//
// Writes go through sendmsg(MSG_NOSIGNAL): a peer that reset the connection gives EPIPE or
// ECONNRESET, never SIGPIPE in a process that hosts a provider.
#pragma once

#include "providers/soft/os/unique_fd.hpp"

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ndk::soft::tcp {

// What has crossed a stream's socket so far, each way: the bytes the kernel took from our
// writes and whether our FIN was asked for; the bytes our reads returned and whether one found
// the peer's end.  One end's writes and the other end's reads say whether anything is still
// on its way between two sockets of this process (the knob `quiescent`, soft_quiet.hpp).
struct StreamTally {
    std::uint64_t written = 0;
    bool shut_down = false;
    std::uint64_t read = 0;
    bool eof = false;
};

enum class StreamStatus {
    ok,     // everything was written, or the read drained the socket
    queued, // the socket took part: the rest waits in the queue for flush()
    drained, // a read found nothing more for now (the socket would block)
    eof,    // the peer closed its direction (read returned 0)
    broken, // the connection is gone: reset, or another socket error (error() says which)
};

class TcpStream {
public:
    explicit TcpStream(os::UniqueFd fd) : fd_(std::move(fd)) {}

    int fd() const { return fd_.get(); }
    // The errno of a `broken` write, and of a `broken` read (the send and receive sides may
    // run on two threads, so each keeps its own).
    int write_error() const { return write_error_; }
    int read_error() const { return read_error_; }

    // The pieces in order, after whatever is queued: what the socket takes now is written
    // from the pieces in place, the rest copied into the queue.
    StreamStatus write(std::span<const iovec> pieces);
    StreamStatus write(std::span<const std::byte> bytes);
    // Write what is queued; `ok` when the queue is empty.
    StreamStatus flush();
    // Until uncork(), a write that leaves at most kCorkLimit bytes queued is held there
    // (`queued`); a larger one goes at once, with what is held before it.
    void cork() { corked_ = true; }
    // Write what was held (flush()).
    StreamStatus uncork()
    {
        corked_ = false;
        return flush();
    }
    // No more holding, without writing: what is held goes with the next write, in its
    // sendmsg.
    void uncork_with_next_write() { corked_ = false; }
    static constexpr std::size_t kCorkLimit = 16 * 1024;
    std::size_t queued() const { return queue_.size() - head_; }

    // One read into `buffer`: `ok` with `got` > 0, `drained`, `eof` or `broken`.  A read that
    // returns less than `buffer` holds took everything the socket had.
    StreamStatus read_some(std::span<std::byte> buffer, std::size_t &got);
    // Append what is readable to `into` until the socket would block (`drained`) or `into`
    // holds `limit` bytes (`ok`: more may wait), or `eof` / `broken` (what was read before
    // still counts).
    StreamStatus read_available(std::vector<std::byte> &into, std::size_t limit);

    // No more writes from us (a FIN after what is queued has gone: call once queued() is 0).
    void shutdown_write();

    // The send side's half is written by writes, the receive side's by reads: read it with
    // both sides still.
    const StreamTally &tally() const { return tally_; }

private:
    // Writes from `pieces`, advancing over what went: `queued` when the socket would block.
    StreamStatus write_now(std::vector<iovec> &pieces, std::size_t &first);
    void enqueue(std::span<const iovec> pieces, std::size_t first);
    // What is queued, then `pieces`, in one sendmsg (IOV_MAX pieces at a time); what the
    // socket does not take stays queued.
    StreamStatus write_out(std::span<const iovec> pieces);

    os::UniqueFd fd_;
    std::vector<std::byte> queue_;
    std::size_t head_ = 0; // first byte of queue_ not yet written
    bool corked_ = false;
    int write_error_ = 0;
    int read_error_ = 0;
    StreamTally tally_;
};

} // namespace ndk::soft::tcp
