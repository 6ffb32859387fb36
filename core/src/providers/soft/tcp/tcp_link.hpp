// One established iWARP connection over TCP: RDMAP messages out as DDP segments in MPA FPDUs
// (RFC 5040, 5041, 5044), and the peer's FPDUs in as checked segments.  Made by the
// establishment (tcp_establish.hpp) once MPA's exchange and RFC 6581's RTR are done, so both
// sides may send at once.
//
// Sending: each message is cut to the negotiated MULPDU (ddp_segmenter.hpp), framed with the
// CRC when negotiated, and written in place with one sendmsg per IOV_MAX pieces; what the
// socket does not take is copied into the stream's queue and goes when the socket is writable
// again (flush(), which the progress thread calls).  No call blocks.  The send side is
// thread-safe (a mutex over the stream's writes and the MSN counters).  A Send or Write and
// the Read Request that fences it go in one sendmsg (the `fence` argument), and while
// receive() takes in what one read brought the stream is corked (tcp_stream.hpp): the Read
// Responses it answers with, and whatever else is sent meanwhile, leave together after it.
//
// Receiving: receive() reads until the socket would block, reassembles FPDUs, parses each
// DDP segment, checks the order of every queue and tagged message (DdpSequenceCheck), and
// hands each segment to the caller's sink with what it needs to place it: a tagged one at
// (STag, tagged offset), an untagged one by (queue, MSN, MO).  Segments, not whole messages:
// the provider places them into the consumer's memory as they come, as siw does
// (siw_qp_rx.c), instead of holding a 1 MiB message here.  What a receiver can only check
// with its memory registrations (STag, bounds, posted receives) is the sink's: it calls
// terminate() with the reason.  One thread receives at a time (the progress thread).
//
// The end of a link is its state(): a malformed frame, a CRC error or an order violation
// sends the Terminate that names it and ends the link (terminate_sent); a Terminate from the
// peer is delivered, then ends it (terminate_received); the peer's FIN ends it as closed, or
// closed_mid_message when it came inside a message or an FPDU; a reset as reset.  Only
// receive() sees a reset end the link: a write that finds the stream reset sends nothing more,
// but what the peer sent before its reset (a Terminate) is still read first.
#pragma once

#include "providers/soft/iwarp/ddp_rdmap.hpp"
#include "providers/soft/iwarp/ddp_segmenter.hpp"
#include "providers/soft/iwarp/mpa.hpp"
#include "providers/soft/iwarp/mpa_fpdu.hpp"
#include "providers/soft/iwarp/terminate_reasons.hpp"
#include "providers/soft/tcp/tcp_address.hpp"
#include "providers/soft/tcp/tcp_stream.hpp"

#include <array>
#include <atomic>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

namespace ndk::soft::tcp {

enum class TcpLinkSide { active, passive };

enum class TcpLinkState {
    open,
    closed,             // the peer's FIN, between messages
    closed_mid_message, // the peer's FIN inside an FPDU or a segmented message
    reset,              // the connection was reset (or another socket error: error())
    terminate_sent,     // we found an error, or terminate() was called: our Terminate ends it
    terminate_received, // the peer's Terminate (delivered to the sink) ends it
    aborted,            // abort(): we reset it
};

// One segment as received, views into the link's buffer valid during the sink's call.
struct InboundSegment {
    iwarp::SegmentHeader header;          // opcode, L; STag + TO, or QN + MSN + MO
    std::span<const std::byte> payload;   // Send, RDMA Write, Read Response data
    std::optional<iwarp::ReadRequest> read_request;
    std::optional<iwarp::TerminateMessage> terminate;
    bool message_complete = false;        // this segment ends its message (L set)
    std::span<const std::byte> ulpdu;     // the whole segment: for a Terminate that names it
};

class SegmentSink {
public:
    virtual ~SegmentSink() = default;
    virtual void segment(const InboundSegment &segment) = 0;
};

enum class LinkSendStatus {
    sent,   // all of it is in the socket
    queued, // part of it waits in the link's queue (flush() when writable)
    closed, // the link has ended: nothing was sent
};

// What the establishment hands the link: the negotiation's outcome and where the stream is.
struct TcpLinkStart {
    TcpLinkSide side = TcpLinkSide::active;
    iwarp::MpaNegotiated negotiated;
    std::size_t send_mulpdu = 0;                       // ULPDU bytes per FPDU we send
    std::size_t receive_max_ulpdu = iwarp::kMpaMaxUlpdu; // the largest FPDU we take
    std::vector<std::byte> received;                   // bytes read past the handshake
    iwarp::DdpSequenceCheck sequence;                  // with the peer's RTR accepted
    std::array<std::uint32_t, iwarp::kQueueCount> next_msn{1, 1, 1}; // ours, after our RTR
    std::optional<iwarp::ReadRequest> owed_read_response; // the peer's Read RTR (passive)
    bool expect_rtr_read_response = false;             // our Read RTR's answer (active)
};

// A message body as the pieces it lies in (a request's SGL in registered memory), in order:
// the link frames and sends it from there, with no gathering copy.
using BodyPieces = std::span<const std::span<const std::byte>>;

class TcpLink {
public:
    TcpLink(TcpStream stream, TcpLinkStart start);
    TcpLink(TcpLink &&) = delete; // the progress thread holds its address

    TcpLinkSide side() const { return side_; }
    const iwarp::MpaNegotiated &negotiated() const { return negotiated_; }
    std::size_t send_mulpdu() const { return send_mulpdu_; }
    int fd() const { return stream_.fd(); }
    TcpAddress local_address() const { return TcpAddress::local_of(fd()); }
    TcpAddress peer_address() const { return TcpAddress::peer_of(fd()); }

    TcpLinkState state() const { return state_.load(std::memory_order_acquire); }
    // When terminate_sent: why (ours).
    iwarp::TerminateReason terminate_reason() const;
    // When reset: the socket's errno.
    int error() const;

    // ---- sending (any thread) ----
    // A Send: `kind` one of send, send_invalidate, send_solicited, send_solicited_invalidate.
    LinkSendStatus send(iwarp::RdmapOpcode kind, std::span<const std::byte> payload,
                        std::uint32_t invalidate_stag = 0);
    LinkSendStatus write(std::uint32_t stag, std::uint64_t offset,
                         std::span<const std::byte> payload);
    // The same from a body in pieces, followed on the stream by the Read Request `fence` when
    // given, both in one sendmsg.
    LinkSendStatus send_pieces(iwarp::RdmapOpcode kind, BodyPieces payload,
                               std::uint32_t invalidate_stag = 0,
                               const iwarp::ReadRequest *fence = nullptr);
    LinkSendStatus write_pieces(std::uint32_t stag, std::uint64_t offset, BodyPieces payload,
                                const iwarp::ReadRequest *fence = nullptr);
    LinkSendStatus read_request(const iwarp::ReadRequest &request);
    LinkSendStatus read_response(std::uint32_t sink_stag, std::uint64_t sink_offset,
                                 std::span<const std::byte> payload);
    // Send a Terminate for `reason` (naming the segment in error when given) and end the link;
    // the TCP stream's FIN follows it once it has gone.  Nothing when the link has ended.
    void terminate(iwarp::TerminateReason reason, std::span<const std::byte> ulpdu_in_error = {});
    // No more messages from us: the FIN follows what is queued (NDK's graceful Disconnect).
    // The link stays open for what the peer still sends, until its FIN.
    void close();
    // Reset the connection now (a connector closed without disconnecting): what is queued is
    // dropped, the peer sees a reset, the link ends as `aborted`.
    void abort();
    // Write what is queued: `sent` when nothing is left.
    LinkSendStatus flush();
    std::size_t queued() const;
    // What has crossed the socket each way (tcp_stream.hpp): with no receive() running.
    StreamTally tally() const;

    // ---- receiving (one thread at a time) ----
    // Read until the socket would block, handing each segment to `sink` in order; the state
    // after it.  The sink may send, and may call terminate() (no more segments then).
    TcpLinkState receive(SegmentSink &sink);
    // The next receive() is for an edge-triggered epoll event that reported new bytes and, not
    // `hangup`, no end or error of the stream: it stops after a read that did not fill the
    // room it was given (that read took all the socket held, and bytes arriving later are a
    // new event), without the read that would find the socket empty.  With `hangup` it reads
    // until the end, which no later event would report again.
    void arrival_reported(bool hangup) { short_read_ends_ = !hangup; }
    // A consumer's poll asks the socket by reading it (tcp_progress.hpp): one read, as
    // receive() makes it, kept for the next receive() to deliver, which then reads on only if
    // this read filled its room.  An arrival so costs one recv, not a poll(2) and a recv.
    // True when there is something for receive() to deliver: bytes, the stream's end or
    // error, or bytes the establishment read; false when the socket was empty (nothing kept)
    // or the link has ended.
    bool read_ahead();
    // The next receive() is a spinning consumer's (tcp_progress.hpp): the answers its
    // delivery sends (the Read Responses to the peer's fences) stay held in the corked stream
    // after it, to go in one sendmsg with the next message sent (the consumer's own post)
    // or at release_answers(), whichever comes first.
    void hold_answers() { hold_answers_ = true; }
    // Write the answers held after a receive(), if any.  Any thread.
    void release_answers();

private:
    // One message for next_messages(): its first segment's header (untagged: the MSN is
    // assigned there) and its body.
    struct Outbound {
        iwarp::SegmentHeader header;
        BodyPieces body;
    };
    // The messages framed, in order, and written in one sendmsg (send_mutex_ held).
    LinkSendStatus send_locked(std::span<const Outbound> messages);
    // What a write or flush of the stream means for the link (send_mutex_ held).
    LinkSendStatus after_write(StreamStatus status);
    // A message, and the Read Request `fence` after it when given.
    LinkSendStatus next_messages(iwarp::SegmentHeader header, BodyPieces body,
                                 const iwarp::ReadRequest *fence = nullptr);
    LinkSendStatus tagged_message(iwarp::RdmapOpcode opcode, std::uint32_t stag,
                                  std::uint64_t offset, BodyPieces payload,
                                  const iwarp::ReadRequest *fence = nullptr);
    void end(TcpLinkState state);
    // The FPDUs reassembled so far, to the sink; false when the link ended on the way.
    bool deliver(SegmentSink &sink);
    // The same with the stream corked: what is sent meanwhile goes in one sendmsg after it.
    bool deliver_corked(SegmentSink &sink);
    bool inside_message() const;
    // The answers held, written (send_mutex_ held).
    void release_answers_locked();

    TcpLinkSide side_;
    iwarp::MpaNegotiated negotiated_;
    std::size_t send_mulpdu_;
    TcpStream stream_;
    std::atomic<TcpLinkState> state_{TcpLinkState::open};

    mutable std::mutex send_mutex_; // stream writes, next_msn_, fin_sent_, closing_,
                                    // send_broken_, reason_
    std::array<std::uint32_t, iwarp::kQueueCount> next_msn_;
    bool fin_sent_ = false;
    bool closing_ = false; // close(): the FIN goes once the queue is empty
    bool send_broken_ = false; // a write failed: nothing more goes (receive() ends the link)
    bool answers_held_ = false; // the stream stays corked after a delivery (hold_answers())
    iwarp::TerminateReason reason_ = iwarp::TerminateReason::unknown;
    std::atomic<int> read_error_{0};

    // receive side
    iwarp::FpduReassembler reassembler_;
    iwarp::DdpSequenceCheck sequence_;
    std::vector<std::byte> pending_; // bytes the establishment read past its frames
    bool short_read_ends_ = false;   // arrival_reported(false), for the next receive()
    struct ReadAhead {
        StreamStatus status = StreamStatus::drained;
        bool short_read = false; // it did not fill the room it was given
    };
    std::optional<ReadAhead> read_ahead_; // read_ahead()'s read, for the next receive()
    bool hold_answers_ = false;      // hold_answers(), for the next receive()
    // Messages begun and not ended: untagged queues 0-2, then RDMA Write, Read Response.
    std::array<bool, iwarp::kQueueCount + 2> open_{};
    bool expect_rtr_read_response_;
};

} // namespace ndk::soft::tcp
