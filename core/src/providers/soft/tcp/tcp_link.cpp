#include "providers/soft/tcp/tcp_link.hpp"

#include "providers/soft/tcp/tcp_terminate.hpp"

#include <sys/socket.h>

#include <stdexcept>
#include <utility>

namespace ndk::soft::tcp {

using iwarp::RdmapOpcode;
using iwarp::SegmentHeader;

namespace {

// The least room a read is given (the reassembler keeps several times that).
constexpr std::size_t kReadChunk = 64 * 1024;

// Where a message's "begun, not ended" flag lives (TcpLink::open_).
std::size_t open_slot(const SegmentHeader &header)
{
    if (header.opcode == RdmapOpcode::rdma_write)
        return iwarp::kQueueCount;
    if (header.opcode == RdmapOpcode::read_response)
        return iwarp::kQueueCount + 1;
    return header.queue; // checked below kQueueCount by the parser
}

} // namespace

TcpLink::TcpLink(TcpStream stream, TcpLinkStart start)
    : side_(start.side), negotiated_(start.negotiated), send_mulpdu_(start.send_mulpdu),
      stream_(std::move(stream)), next_msn_(start.next_msn),
      reassembler_(start.negotiated.crc, start.receive_max_ulpdu), sequence_(start.sequence),
      pending_(std::move(start.received)),
      expect_rtr_read_response_(start.expect_rtr_read_response)
{
    // The answer RFC 6581 3.3 asks of a Read RTR's responder: a zero-length Read Response.
    if (start.owed_read_response)
        read_response(start.owed_read_response->sink_stag, start.owed_read_response->sink_offset,
                      {});
}

iwarp::TerminateReason TcpLink::terminate_reason() const
{
    std::lock_guard lock(send_mutex_);
    return reason_;
}

int TcpLink::error() const
{
    std::lock_guard lock(send_mutex_);
    return stream_.write_error() != 0 ? stream_.write_error() : read_error_.load();
}

void TcpLink::end(TcpLinkState state)
{
    TcpLinkState expected = TcpLinkState::open;
    state_.compare_exchange_strong(expected, state, std::memory_order_acq_rel);
}

namespace {

std::size_t body_size(BodyPieces body)
{
    std::size_t size = 0;
    for (const auto &piece : body)
        size += piece.size();
    return size;
}

// Walks a body in pieces front to back, handing out its next bytes as sub-spans of the pieces
// (a segment's payload may span several SGEs; segments are cut in order, so one pass).
class BodyCursor {
public:
    explicit BodyCursor(BodyPieces body) : body_(body) {}

    void take(std::size_t size, std::vector<std::span<const std::byte>> &into)
    {
        while (size > 0 && index_ < body_.size()) {
            const std::span<const std::byte> rest = body_[index_].subspan(within_);
            const std::size_t n = std::min(size, rest.size());
            if (n > 0)
                into.push_back(rest.first(n));
            size -= n;
            within_ += n;
            if (within_ == body_[index_].size()) {
                ++index_;
                within_ = 0;
            }
        }
    }

private:
    BodyPieces body_;
    std::size_t index_ = 0;  // the piece the next byte is in
    std::size_t within_ = 0; // and where in it
};

} // namespace

LinkSendStatus TcpLink::send_locked(std::span<const Outbound> messages)
{
    struct Frame {
        iwarp::HeaderBytes header;
        iwarp::FpduFraming framing;
        std::size_t payload_begin = 0, payload_end = 0; // its pieces in `payload`
    };
    std::vector<Frame> frames;
    std::vector<std::span<const std::byte>> payload; // every frame's payload pieces in turn
    std::vector<std::span<const std::byte>> ulpdu;   // one frame's header and payload, for its CRC
    for (const Outbound &message : messages) {
        BodyCursor cursor(message.body);
        for (iwarp::Segmenter segmenter(message.header, body_size(message.body), send_mulpdu_);
             !segmenter.done();) {
            const iwarp::SegmentPiece piece = segmenter.next();
            Frame frame;
            frame.header = iwarp::encode_segment_header(piece.header);
            frame.payload_begin = payload.size();
            cursor.take(piece.size, payload);
            frame.payload_end = payload.size();
            ulpdu.assign(1, frame.header.span());
            ulpdu.insert(ulpdu.end(),
                         payload.begin() + static_cast<std::ptrdiff_t>(frame.payload_begin),
                         payload.end());
            frame.framing = iwarp::frame_fpdu(std::span(ulpdu), negotiated_.crc);
            frames.push_back(frame);
        }
    }
    // Built after the frames stopped moving: the pieces point into them.  The payload goes
    // from where it lies; the stream copies only what the socket does not take now.
    std::vector<iovec> pieces;
    pieces.reserve(frames.size() * 3 + payload.size());
    auto add = [&pieces](std::span<const std::byte> bytes) {
        if (!bytes.empty())
            pieces.push_back({const_cast<std::byte *>(bytes.data()), bytes.size()});
    };
    for (const Frame &frame : frames) {
        add(frame.framing.length);
        add(frame.header.span());
        for (std::size_t i = frame.payload_begin; i < frame.payload_end; ++i)
            add(payload[i]);
        add(frame.framing.trailer_bytes());
    }
    return after_write(stream_.write(pieces));
}

LinkSendStatus TcpLink::after_write(StreamStatus status)
{
    switch (status) {
    case StreamStatus::ok:
        // Nothing follows a Terminate (RFC 5040 5.1.4) or a close: the FIN goes once the
        // queue has gone.
        if ((closing_ || state() == TcpLinkState::terminate_sent) && !fin_sent_) {
            stream_.shutdown_write();
            fin_sent_ = true;
        }
        return LinkSendStatus::sent;
    case StreamStatus::queued:
        return LinkSendStatus::queued;
    default:
        // The peer reset the stream (or it broke).  The link does not end here: what the peer
        // sent before its reset, a Terminate naming our request, is still in the socket (the
        // kernel keeps what it received), and receive() reads it, then the reset, and ends
        // the link as that says.  Ended here, receive() read nothing more, and a refused
        // request completed CANCELLED instead of with the peer's error (docs/semantics.md
        // TCP-TERMINATE; a 4 MiB Write the target refuses, whose socket the target closes
        // with the rest of the Write unread).
        send_broken_ = true;
        return LinkSendStatus::closed;
    }
}

LinkSendStatus TcpLink::next_messages(SegmentHeader header, BodyPieces body,
                                      const iwarp::ReadRequest *fence)
{
    std::lock_guard lock(send_mutex_);
    if (state() != TcpLinkState::open || closing_ || send_broken_)
        return LinkSendStatus::closed;
    if (std::exchange(answers_held_, false))
        stream_.uncork_with_next_write(); // the answers held go in this message's sendmsg
    // Each untagged message takes its queue's next MSN, which the peer counts whatever
    // happens to the stream.
    auto number = [this](SegmentHeader &h) {
        if (iwarp::is_tagged(h.opcode))
            return;
        h.queue = iwarp::queue_of(h.opcode);
        h.msn = next_msn_[h.queue]++;
        h.message_offset = 0;
    };
    std::array<Outbound, 2> messages{};
    messages[0] = {header, body};
    number(messages[0].header);
    std::array<std::byte, iwarp::kReadRequestSize> fence_body{};
    const std::span<const std::byte> fence_bytes(fence_body);
    if (fence != nullptr) {
        fence_body = iwarp::encode_read_request(*fence);
        messages[1].header.opcode = RdmapOpcode::read_request;
        messages[1].body = std::span(&fence_bytes, 1);
        number(messages[1].header);
    }
    return send_locked(std::span(messages).first(fence != nullptr ? 2 : 1));
}

LinkSendStatus TcpLink::send(RdmapOpcode kind, std::span<const std::byte> payload,
                             std::uint32_t invalidate_stag)
{
    return send_pieces(kind, std::span(&payload, 1), invalidate_stag);
}

LinkSendStatus TcpLink::send_pieces(RdmapOpcode kind, BodyPieces payload,
                                    std::uint32_t invalidate_stag, const iwarp::ReadRequest *fence)
{
    if (kind != RdmapOpcode::send && kind != RdmapOpcode::send_invalidate &&
        kind != RdmapOpcode::send_solicited && kind != RdmapOpcode::send_solicited_invalidate)
        throw std::invalid_argument("TcpLink::send takes one of the four Send opcodes");
    SegmentHeader header;
    header.opcode = kind;
    header.invalidate_stag = iwarp::carries_invalidate(kind) ? invalidate_stag : 0;
    return next_messages(header, payload, fence);
}

LinkSendStatus TcpLink::tagged_message(RdmapOpcode opcode, std::uint32_t stag,
                                       std::uint64_t offset, BodyPieces payload,
                                       const iwarp::ReadRequest *fence)
{
    SegmentHeader header;
    header.opcode = opcode;
    header.stag = stag;
    header.tagged_offset = offset;
    return next_messages(header, payload, fence);
}

LinkSendStatus TcpLink::write(std::uint32_t stag, std::uint64_t offset,
                              std::span<const std::byte> payload)
{
    return write_pieces(stag, offset, std::span(&payload, 1));
}

LinkSendStatus TcpLink::write_pieces(std::uint32_t stag, std::uint64_t offset, BodyPieces payload,
                                     const iwarp::ReadRequest *fence)
{
    return tagged_message(RdmapOpcode::rdma_write, stag, offset, payload, fence);
}

LinkSendStatus TcpLink::read_response(std::uint32_t sink_stag, std::uint64_t sink_offset,
                                      std::span<const std::byte> payload)
{
    return tagged_message(RdmapOpcode::read_response, sink_stag, sink_offset,
                          std::span(&payload, 1));
}

LinkSendStatus TcpLink::read_request(const iwarp::ReadRequest &request)
{
    SegmentHeader header;
    header.opcode = RdmapOpcode::read_request;
    const auto body = iwarp::encode_read_request(request);
    const std::span<const std::byte> bytes(body);
    return next_messages(header, std::span(&bytes, 1));
}

void TcpLink::terminate(iwarp::TerminateReason reason, std::span<const std::byte> ulpdu_in_error)
{
    std::lock_guard lock(send_mutex_);
    if (state() != TcpLinkState::open || closing_)
        return;
    if (std::exchange(answers_held_, false))
        stream_.uncork_with_next_write();
    SegmentHeader header;
    header.opcode = RdmapOpcode::terminate;
    header.queue = iwarp::kQueueTerminate;
    header.msn = next_msn_[iwarp::kQueueTerminate]++;
    const std::vector<std::byte> body = terminate_body(reason, ulpdu_in_error);
    const std::span<const std::byte> bytes(body);
    reason_ = reason;
    end(TcpLinkState::terminate_sent);
    const Outbound message{header, std::span(&bytes, 1)};
    send_locked(std::span(&message, 1));
}

void TcpLink::close()
{
    std::lock_guard lock(send_mutex_);
    if (state() != TcpLinkState::open || closing_)
        return;
    release_answers_locked();
    closing_ = true;
    if (stream_.queued() == 0)
        after_write(StreamStatus::ok);
}

void TcpLink::abort()
{
    std::lock_guard lock(send_mutex_);
    if (state() == TcpLinkState::aborted)
        return;
    state_.store(TcpLinkState::aborted, std::memory_order_release);
    // connect(AF_UNSPEC) disconnects a TCP socket with a reset (tcp_disconnect), while the
    // descriptor stays ours until the progress thread has let it go.
    sockaddr unspecified{};
    unspecified.sa_family = AF_UNSPEC;
    ::connect(stream_.fd(), &unspecified, sizeof unspecified);
    fin_sent_ = true;
}

LinkSendStatus TcpLink::flush()
{
    std::lock_guard lock(send_mutex_);
    return after_write(stream_.flush());
}

std::size_t TcpLink::queued() const
{
    std::lock_guard lock(send_mutex_);
    return stream_.queued();
}

StreamTally TcpLink::tally() const
{
    std::lock_guard lock(send_mutex_);
    return stream_.tally();
}

bool TcpLink::inside_message() const
{
    for (bool open : open_)
        if (open)
            return true;
    return reassembler_.pending() > 0;
}

bool TcpLink::deliver(SegmentSink &sink)
{
    for (;;) {
        const iwarp::FpduStep step = reassembler_.next();
        if (step.status == iwarp::FpduStatus::need_more)
            return true;
        if (step.status != iwarp::FpduStatus::complete) {
            terminate(terminate_reason_for(step.status), {});
            return false;
        }
        const auto parsed = iwarp::parse_segment(step.ulpdu);
        if (!parsed) {
            terminate(terminate_reason_for(parsed.error(), step.ulpdu), step.ulpdu);
            return false;
        }
        const iwarp::DdpSequenceStep order = sequence_.accept(parsed->header, parsed->payload.size());
        if (order.error != iwarp::DdpSequenceError::none) {
            terminate(terminate_reason_for(order.error), step.ulpdu);
            return false;
        }
        open_[open_slot(parsed->header)] = !order.message_complete;
        if (expect_rtr_read_response_ && parsed->header.opcode == RdmapOpcode::read_response) {
            // Our Read RTR's zero-length answer (RFC 6581 3.3): the handshake's, not a read's.
            expect_rtr_read_response_ = false;
            if (parsed->payload.empty() && order.message_complete)
                continue;
            terminate(iwarp::TerminateReason::mpa_no_matching_rtr, step.ulpdu);
            return false;
        }
        InboundSegment segment;
        segment.header = parsed->header;
        segment.payload = parsed->payload;
        segment.read_request = parsed->read_request;
        segment.terminate = parsed->terminate;
        segment.message_complete = order.message_complete;
        segment.ulpdu = step.ulpdu;
        if (segment.terminate) {
            // Ended before the sink sees it, so that what the sink does about it (an error
            // completion, which would terminate the link) sends no Terminate back: RFC 5040
            // 5.1.4, nothing follows a Terminate on the stream.
            end(TcpLinkState::terminate_received);
            sink.segment(segment);
            return false;
        }
        sink.segment(segment);
        if (state() != TcpLinkState::open)
            return false; // the sink terminated the link
    }
}

bool TcpLink::deliver_corked(SegmentSink &sink)
{
    {
        std::lock_guard lock(send_mutex_);
        answers_held_ = false; // corked as before, until this delivery's end
        stream_.cork();
    }
    const bool open = deliver(sink);
    std::lock_guard lock(send_mutex_);
    if (hold_answers_ && open && state() == TcpLinkState::open && !closing_ &&
        stream_.queued() > 0) {
        answers_held_ = true;
        return open;
    }
    after_write(stream_.uncork());
    return open;
}

void TcpLink::release_answers()
{
    std::lock_guard lock(send_mutex_);
    release_answers_locked();
}

void TcpLink::release_answers_locked()
{
    if (std::exchange(answers_held_, false))
        after_write(stream_.uncork());
}

bool TcpLink::read_ahead()
{
    if (!pending_.empty())
        return true; // the establishment's bytes: receive() delivers them before reading
    if (state() != TcpLinkState::open)
        return false;
    std::size_t got = 0;
    const std::span<std::byte> room = reassembler_.space(kReadChunk);
    const StreamStatus status = stream_.read_some(room, got);
    if (status == StreamStatus::drained)
        return false;
    if (status == StreamStatus::ok)
        reassembler_.filled(got);
    read_ahead_ = ReadAhead{status, got < room.size()};
    arrival_reported(false); // its short read ends the delivery, as an event without hang-up
    return true;
}

TcpLinkState TcpLink::receive(SegmentSink &sink)
{
    const bool short_read_ends = std::exchange(short_read_ends_, false);
    // A receive() that returns before its first read drops the read made ahead: it ended the
    // link, and what the read found (bytes or the stream's end) goes nowhere after that.
    std::optional<ReadAhead> ahead = std::exchange(read_ahead_, std::nullopt);
    struct HoldEnds { // a receive() that returns early holds nothing for the next one
        bool &hold;
        ~HoldEnds() { hold = false; }
    } hold_ends{hold_answers_};
    if (state() != TcpLinkState::open)
        return state();
    if (!pending_.empty()) {
        reassembler_.push(pending_);
        pending_ = {};
        if (!deliver_corked(sink))
            return state();
    }
    for (;;) {
        ReadAhead read = ahead.value_or(ReadAhead{});
        if (ahead) {
            ahead.reset(); // made by read_ahead(): its bytes are in the reassembler already
        } else {
            std::size_t got = 0;
            // Straight into the reassembler's buffer: no chunk copied into it.
            const std::span<std::byte> room = reassembler_.space(kReadChunk);
            read.status = stream_.read_some(room, got);
            if (read.status == StreamStatus::ok)
                reassembler_.filled(got);
            read.short_read = got < room.size();
        }
        if (read.status == StreamStatus::ok) {
            if (!deliver_corked(sink))
                return state();
            if (short_read_ends && read.short_read)
                return state(); // the socket is empty: its next bytes are a new event
            continue;
        }
        if (read.status == StreamStatus::drained)
            return state();
        if (read.status == StreamStatus::eof) {
            end(inside_message() ? TcpLinkState::closed_mid_message : TcpLinkState::closed);
        } else {
            read_error_.store(stream_.read_error());
            end(TcpLinkState::reset);
        }
        return state();
    }
}

} // namespace ndk::soft::tcp
