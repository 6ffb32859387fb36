// Establishing an iWARP connection over TCP: the kernel's connect/accept, then MPA's request
// and reply (RFC 5044 section 7.1) at revision 2 with RFC 6581's enhanced establishment (IRD,
// ORD, the RTR), through the codec's negotiation (mpa.hpp):
//
//   active (OutgoingTcpConnection)                    passive (TcpAcceptor, Incoming...)
//   connect (non-blocking)                      --->  accept
//   MPA request {CRC wanted, IRD, ORD, RTR types,
//                private data}                  --->  poll() = request (a request we refuse,
//                                                     markers or no RFC 6581 data, is answered
//                                                     with a reject frame here: failed)
//   poll() = replied, or rejected               <---  accept(): MPA reply {CRC, IRD, ORD, RTR}
//            (its private data either way)            or reject(): reply with R set
//   complete(): the RTR (a zero-length RDMA Write,
//   Read or Send), the link is established      --->  poll() = established (the RTR checked)
//   refuse(): close instead                     --->  poll() = refused (FIN before the RTR)
//
// The RTR (RFC 6581 3.3) is why either side may send first: the passive side sends nothing
// before it has the RTR, so the active side's first FPDU is always the first on the stream.
// With peer_to_peer off (no RTR negotiated) the passive side is established at its reply.
//
// As shm_link.hpp: every step is a non-blocking call that reports `waiting` until the peer's
// bytes are there; fd() is what to watch (both readable and writable: a connect completes
// as writable), from the progress thread (tcp_progress.hpp) or the caller's loop.  Timeouts
// are the caller's: abandon().  One thread at a time per object.
#pragma once

#include "providers/soft/iwarp/mpa.hpp"
#include "providers/soft/iwarp/mpa_fpdu.hpp"
#include "providers/soft/tcp/tcp_address.hpp"
#include "providers/soft/tcp/tcp_link.hpp"
#include "providers/soft/tcp/tcp_stream.hpp"

#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace ndk::soft::tcp {

enum class TcpEstablish {
    waiting,     // nothing new: wait for fd() and call again
    request,     // passive: the MPA request is there, accept() or reject()
    replied,     // active: the MPA reply is there, complete() or refuse()
    rejected,    // active: the reply rejected (its private data in reply())
    established, // take_link() (passive) / complete() returned it (active)
    refused,     // passive: the active side closed before its RTR (turned the reply down)
    failed,      // failure() says why
};

enum class TcpEstablishFailure {
    none,
    connect,   // the TCP connect failed (error(): ECONNREFUSED, ...)
    reset,     // the connection broke (error())
    closed,    // the peer closed before its frame was whole
    not_mpa,   // the peer's frame did not parse (parse_error())
    refusal,   // MPA's negotiation refused (refusal(): ours, sent as a reject or Terminate)
    bad_rtr,   // the first FPDU was not the RTR negotiated (a Terminate was sent)
    abandoned, // abandon() was called
};

struct TcpEstablishOptions {
    // 0: the MULPDU of the connection's MSS (RFC 5044 4.3, mulpdu_for_emss); else this, so
    // that tests and a peer with a smaller path choose it.
    std::size_t send_mulpdu = 0;
    std::size_t receive_max_ulpdu = iwarp::kMpaMaxUlpdu;
    // Bind addresses the host takes as local through a route rather than an interface
    // address (an AnyIP route, `ip route add local 198.18.0.0/15 dev lo`): IPv6 binds those
    // only with IP_FREEBIND.  The caller checks the address is local (tcp_address.hpp).
    bool free_bind = false;
};

// What both kinds of establishment object share: the stream, what was read, and why it failed.
class TcpHandshake {
public:
    int fd() const { return stream_ ? stream_->fd() : -1; }
    TcpEstablishFailure failure() const { return failure_; }
    int error() const { return error_; }
    iwarp::MpaParseError parse_error() const { return parse_error_; }
    iwarp::MpaRefusal refusal() const { return refusal_; }
    const iwarp::MpaNegotiated &negotiated() const { return negotiated_; }

protected:
    TcpHandshake(TcpStream stream, TcpEstablishOptions options)
        : stream_(std::move(stream)), options_(options)
    {
    }
    // Read what is there and flush what is queued; false when the stream ended (failed set).
    bool pump();
    // The MPA frame of `kind` at the start of what was read: its parse, or nothing while it is
    // incomplete; failed set for a frame that does not parse.
    std::optional<iwarp::ParsedMpaFrame> take_frame(iwarp::MpaFrameKind kind);
    TcpEstablish fail(TcpEstablishFailure failure);
    // Write `bytes`; false when the stream broke (failed set).
    bool send(std::span<const std::byte> bytes);
    std::unique_ptr<TcpLink> make_link(TcpLinkStart start);

    std::optional<TcpStream> stream_;
    TcpEstablishOptions options_;
    std::vector<std::byte> received_;
    // What pump() reads at most: a whole MPA frame, then (passive) the RTR's FPDU.  A
    // conforming peer sends nothing more before our answer, and what follows the RTR is the
    // link's (its registration with the progress thread reports it), so a peer cannot make
    // the handshake hold more.
    std::size_t read_limit_ = iwarp::kMpaHeaderSize + iwarp::kMpaMaxPrivateData;
    bool eof_ = false;
    TcpEstablish outcome_ = TcpEstablish::waiting;
    TcpEstablishFailure failure_ = TcpEstablishFailure::none;
    int error_ = 0;
    iwarp::MpaParseError parse_error_ = iwarp::MpaParseError::none;
    iwarp::MpaRefusal refusal_ = iwarp::MpaRefusal::none;
    iwarp::MpaNegotiated negotiated_;
};

class IncomingTcpConnection : public TcpHandshake {
public:
    // `request` once (or failed), then after accept() `established`, `refused` or `failed`.
    TcpEstablish poll();
    // The request: its private data, and in `enhanced` the peer's IRD, ORD and RTR offer.
    const iwarp::MpaFrame &request() const { return request_; }

    // Answer with a reply: `local` holds our IRD/ORD (NDK's Accept) and CRC wish.  Returns
    // `established` at once without an RTR, else `waiting` (poll() for the RTR), or `failed`.
    TcpEstablish accept(const iwarp::MpaSettings &local, std::span<const std::byte> private_data);
    // Answer with a reject frame carrying `private_data`, then the FIN.  Done.
    void reject(std::span<const std::byte> private_data);
    void abandon();
    std::unique_ptr<TcpLink> take_link();

private:
    friend class TcpAcceptor;
    IncomingTcpConnection(TcpStream stream, TcpEstablishOptions options)
        : TcpHandshake(std::move(stream), options)
    {
    }
    TcpEstablish read_request();
    TcpEstablish read_rtr();

    iwarp::MpaFrame request_;
    bool answered_ = false;
    std::unique_ptr<TcpLink> link_;
};

// A listening socket on a real local address (port 0: the kernel picks; local_address()).
class TcpAcceptor {
public:
    // Throws std::system_error (EADDRINUSE, EADDRNOTAVAIL for an address not on this host).
    explicit TcpAcceptor(const TcpAddress &address, TcpEstablishOptions options = {});

    int fd() const { return listener_.get(); }
    TcpAddress local_address() const { return TcpAddress::local_of(fd()); }
    // The next waiting connection, or nothing.  Does not block.
    std::optional<IncomingTcpConnection> accept();
    // Whether the last accept() found a connection waiting but no descriptor (EMFILE, ENFILE)
    // or kernel memory to take it with: it waits in the kernel's queue until one frees, and
    // the socket stays readable meanwhile, so whoever watches it must stop for a while.
    bool starved() const { return starved_; }
    // Listen no more, now: connections waiting to be accepted are reset and the port may be
    // bound again at once, while the descriptor stays open for whoever still watches it.
    void stop();

private:
    os::UniqueFd listener_;
    TcpEstablishOptions options_;
    bool starved_ = false;
};

struct TcpConnectParameters {
    TcpAddress destination;
    std::optional<TcpAddress> source; // bind first (an adapter's own address; SO_REUSEADDR,
                                      // so that a shared endpoint's port serves many)
    iwarp::MpaSettings settings;      // our IRD/ORD (NDK's Connect), CRC wish, RTR offer
    std::span<const std::byte> private_data;
    TcpEstablishOptions options;
};

class OutgoingTcpConnection : public TcpHandshake {
public:
    // Starts the connect; throws std::system_error only for what is wrong locally (no socket,
    // a source address not ours).  A refused connect is poll()'s `failed` (connect).
    static OutgoingTcpConnection connect(const TcpConnectParameters &parameters);

    // `replied`, `rejected` or `failed` once the answer is there.
    TcpEstablish poll();
    const iwarp::MpaFrame &reply() const { return reply_; }

    // After `replied`: send the RTR; the link is established.  Nothing if the stream broke.
    std::unique_ptr<TcpLink> complete();
    // After `replied`: turn it down (NDK's Reject after the reply, a close, a timeout).
    void refuse();
    void abandon();

private:
    OutgoingTcpConnection(TcpStream stream, const TcpConnectParameters &parameters);
    TcpEstablish read_reply();

    bool connected_ = false;
    iwarp::MpaSettings settings_;
    iwarp::MpaFrame request_;
    iwarp::MpaFrame reply_;
};

} // namespace ndk::soft::tcp
