#include "providers/soft/tcp/tcp_establish.hpp"

#include "providers/soft/tcp/tcp_terminate.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>

namespace ndk::soft::tcp {

using iwarp::MpaFrameKind;
using iwarp::MpaRtr;
using iwarp::RdmapOpcode;

namespace {

os::UniqueFd new_socket(int family, const TcpEstablishOptions &options)
{
    os::UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd)
        throw std::system_error(errno, std::generic_category(), "socket");
    // FPDUs are written whole; Nagle would hold a small one (an RTR, a Read Request) back
    // behind an unacknowledged segment for a round trip.
    const int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (options.free_bind)
        ::setsockopt(fd.get(), SOL_IP, IP_FREEBIND, &one, sizeof one); // both families
    return fd;
}

// RFC 5044 4.3: the MULPDU of the connection's MSS, unless the options fix one.
std::size_t send_mulpdu_of(int fd, const TcpEstablishOptions &options)
{
    if (options.send_mulpdu != 0)
        return std::min(options.send_mulpdu, iwarp::kMpaMaxUlpdu);
    int mss = 0;
    socklen_t size = sizeof mss;
    if (::getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &size) != 0 || mss <= 0)
        mss = 536; // RFC 879's default
    return std::clamp(iwarp::mulpdu_for_emss(static_cast<std::size_t>(mss)),
                      iwarp::kUntaggedHeaderSize + 1, iwarp::kMpaMaxUlpdu);
}

// Whether a parsed first FPDU is the RTR negotiated (RFC 6581 3.3): a zero-length message of
// that kind, in one segment.
bool is_rtr(const iwarp::ParsedSegment &segment, MpaRtr rtr)
{
    const iwarp::SegmentHeader &header = segment.header;
    if (!header.last)
        return false;
    switch (rtr) {
    case MpaRtr::write:
        return header.opcode == RdmapOpcode::rdma_write && segment.payload.empty();
    case MpaRtr::read:
        return header.opcode == RdmapOpcode::read_request && segment.read_request &&
               segment.read_request->size == 0;
    case MpaRtr::send:
        return header.opcode == RdmapOpcode::send && segment.payload.empty();
    case MpaRtr::none:
        break;
    }
    return false;
}

} // namespace

// ---- TcpHandshake

TcpEstablish TcpHandshake::fail(TcpEstablishFailure failure)
{
    if (outcome_ != TcpEstablish::failed) {
        outcome_ = TcpEstablish::failed;
        failure_ = failure;
    }
    return outcome_;
}

bool TcpHandshake::pump()
{
    if (stream_->flush() == StreamStatus::broken) {
        error_ = stream_->write_error();
        fail(TcpEstablishFailure::reset);
        return false;
    }
    switch (stream_->read_available(received_, read_limit_)) {
    case StreamStatus::eof:
        eof_ = true;
        return true; // what came before the FIN still counts; the caller decides
    case StreamStatus::broken:
        error_ = stream_->read_error();
        fail(TcpEstablishFailure::reset);
        return false;
    default:
        return true;
    }
}

bool TcpHandshake::send(std::span<const std::byte> bytes)
{
    if (stream_->write(bytes) != StreamStatus::broken)
        return true;
    error_ = stream_->write_error();
    fail(TcpEstablishFailure::reset);
    return false;
}

std::optional<iwarp::ParsedMpaFrame> TcpHandshake::take_frame(MpaFrameKind kind)
{
    auto parsed = iwarp::parse_mpa_frame(received_, kind);
    if (parsed) {
        received_.erase(received_.begin(),
                        received_.begin() + static_cast<std::ptrdiff_t>(parsed->size));
        return *parsed;
    }
    if (parsed.error() != iwarp::MpaParseError::incomplete) {
        parse_error_ = parsed.error();
        fail(TcpEstablishFailure::not_mpa);
    } else if (eof_) {
        fail(TcpEstablishFailure::closed);
    }
    return std::nullopt;
}

std::unique_ptr<TcpLink> TcpHandshake::make_link(TcpLinkStart start)
{
    start.negotiated = negotiated_;
    start.send_mulpdu = send_mulpdu_of(stream_->fd(), options_);
    start.receive_max_ulpdu = options_.receive_max_ulpdu;
    start.received = std::move(received_);
    auto link = std::make_unique<TcpLink>(std::move(*stream_), std::move(start));
    stream_.reset();
    return link;
}

// ---- passive side

TcpAcceptor::TcpAcceptor(const TcpAddress &address, TcpEstablishOptions options)
    : listener_(new_socket(address.family(), options)), options_(options)
{
    const int one = 1;
    ::setsockopt(listener_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (address.family() == AF_INET6)
        ::setsockopt(listener_.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (::bind(listener_.get(), address.data(), address.size()) != 0)
        throw std::system_error(errno, std::generic_category(), "bind " + address.text());
    if (::listen(listener_.get(), SOMAXCONN) != 0)
        throw std::system_error(errno, std::generic_category(), "listen");
}

std::optional<IncomingTcpConnection> TcpAcceptor::accept()
{
    for (;;) {
        os::UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        starved_ = !fd && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM);
        if (fd) {
            const int one = 1;
            ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            return IncomingTcpConnection(TcpStream(std::move(fd)), options_);
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue; // a connection reset while it waited: the next one
        return std::nullopt;
    }
}

void TcpAcceptor::stop()
{
    // On Linux, shutdown() takes a listening socket out of the LISTEN state (tcp_disconnect):
    // its queue is reset and another socket may listen on the address.
    ::shutdown(listener_.get(), SHUT_RDWR);
}

TcpEstablish IncomingTcpConnection::poll()
{
    if (outcome_ != TcpEstablish::waiting && outcome_ != TcpEstablish::request)
        return outcome_;
    if (outcome_ == TcpEstablish::request)
        return outcome_; // answered by accept() or reject(), not by the peer
    if (!pump())
        return outcome_;
    return answered_ ? read_rtr() : read_request();
}

TcpEstablish IncomingTcpConnection::read_request()
{
    const auto frame = take_frame(MpaFrameKind::request);
    if (!frame)
        return outcome_;
    request_ = frame->frame;
    // A request nobody here could accept (markers, no RFC 6581 data) is answered now, by the
    // codec's reject frame; what depends on our settings (the RTR types) waits for accept().
    iwarp::MpaSettings any;
    any.rtr = {true, true, true};
    const iwarp::MpaResponderAnswer answer = iwarp::answer_mpa_request(request_, any, {});
    if (answer.refusal != iwarp::MpaRefusal::none) {
        refusal_ = answer.refusal;
        if (send(iwarp::encode_mpa_frame(answer.reply)))
            stream_->shutdown_write();
        return fail(TcpEstablishFailure::refusal);
    }
    return outcome_ = TcpEstablish::request;
}

TcpEstablish IncomingTcpConnection::accept(const iwarp::MpaSettings &local,
                                           std::span<const std::byte> private_data)
{
    if (outcome_ != TcpEstablish::request)
        throw std::logic_error("IncomingTcpConnection::accept without a request");
    const iwarp::MpaResponderAnswer answer = iwarp::answer_mpa_request(request_, local, private_data);
    if (answer.refusal != iwarp::MpaRefusal::none) {
        // Our own settings refuse what the request offered (no RTR type in common).
        refusal_ = answer.refusal;
        if (send(iwarp::encode_mpa_frame(answer.reply)))
            stream_->shutdown_write();
        return fail(TcpEstablishFailure::refusal);
    }
    negotiated_ = answer.negotiated;
    answered_ = true;
    read_limit_ = iwarp::fpdu_size(options_.receive_max_ulpdu, negotiated_.crc);
    outcome_ = TcpEstablish::waiting;
    if (!send(iwarp::encode_mpa_frame(answer.reply)))
        return outcome_;
    if (negotiated_.rtr == MpaRtr::none) {
        TcpLinkStart start;
        start.side = TcpLinkSide::passive;
        link_ = make_link(std::move(start));
        return outcome_ = TcpEstablish::established;
    }
    // What came while the request waited for this answer (the RTR cannot, but a FIN or a reset
    // can) was signalled once, to a poll() that did not read it: read it now.
    if (!pump())
        return outcome_;
    return read_rtr();
}

TcpEstablish IncomingTcpConnection::read_rtr()
{
    const iwarp::FpduStep step =
        iwarp::parse_fpdu(received_, negotiated_.crc, options_.receive_max_ulpdu);
    if (step.status == iwarp::FpduStatus::need_more) {
        if (!eof_)
            return outcome_;
        // The FIN instead of the RTR: the active side turned the reply down (refuse()).
        return outcome_ = received_.empty() ? TcpEstablish::refused
                                            : fail(TcpEstablishFailure::closed);
    }
    auto reject_rtr = [this](iwarp::TerminateReason reason, std::span<const std::byte> ulpdu) {
        if (send(first_terminate_fpdu(reason, negotiated_.crc, ulpdu)))
            stream_->shutdown_write();
        return fail(TcpEstablishFailure::bad_rtr);
    };
    if (step.status != iwarp::FpduStatus::complete)
        return reject_rtr(terminate_reason_for(step.status), {});
    const auto segment = iwarp::parse_segment(step.ulpdu);
    if (!segment)
        return reject_rtr(terminate_reason_for(segment.error(), step.ulpdu), step.ulpdu);
    if (!is_rtr(*segment, negotiated_.rtr))
        return reject_rtr(iwarp::TerminateReason::mpa_no_matching_rtr, step.ulpdu);

    TcpLinkStart start;
    start.side = TcpLinkSide::passive;
    // The RTR took its queue's first MSN (a Send's, a Read Request's): the link goes on from it.
    if (start.sequence.accept(segment->header, 0).error != iwarp::DdpSequenceError::none)
        return reject_rtr(iwarp::TerminateReason::mpa_no_matching_rtr, step.ulpdu);
    if (negotiated_.rtr == MpaRtr::read)
        start.owed_read_response = segment->read_request;
    received_.erase(received_.begin(), received_.begin() + static_cast<std::ptrdiff_t>(step.size));
    link_ = make_link(std::move(start));
    return outcome_ = TcpEstablish::established;
}

void IncomingTcpConnection::reject(std::span<const std::byte> private_data)
{
    if (outcome_ != TcpEstablish::request)
        throw std::logic_error("IncomingTcpConnection::reject without a request");
    if (send(iwarp::encode_mpa_frame(iwarp::make_mpa_reject(request_, private_data))))
        stream_->shutdown_write();
    outcome_ = TcpEstablish::rejected;
}

void IncomingTcpConnection::abandon()
{
    if (stream_)
        stream_.reset();
    fail(TcpEstablishFailure::abandoned);
}

std::unique_ptr<TcpLink> IncomingTcpConnection::take_link()
{
    if (!link_)
        throw std::logic_error("IncomingTcpConnection::take_link before it is established");
    return std::move(link_);
}

// ---- active side

OutgoingTcpConnection::OutgoingTcpConnection(TcpStream stream,
                                             const TcpConnectParameters &parameters)
    : TcpHandshake(std::move(stream), parameters.options), settings_(parameters.settings),
      request_(iwarp::make_mpa_request(parameters.settings, parameters.private_data))
{
    // Encoded once now: a request the codec cannot write (private data above 512 bytes)
    // throws here, not at the first poll().
    iwarp::encode_mpa_frame(request_);
}

OutgoingTcpConnection OutgoingTcpConnection::connect(const TcpConnectParameters &parameters)
{
    os::UniqueFd fd = new_socket(parameters.destination.family(), parameters.options);
    const int one = 1;
    if (parameters.source)
        ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (parameters.source &&
        ::bind(fd.get(), parameters.source->data(), parameters.source->size()) != 0)
        throw std::system_error(errno, std::generic_category(),
                                "bind " + parameters.source->text());
    int error = 0;
    if (::connect(fd.get(), parameters.destination.data(), parameters.destination.size()) != 0 &&
        errno != EINPROGRESS)
        error = errno;
    OutgoingTcpConnection connection(TcpStream(std::move(fd)), parameters);
    if (error != 0) {
        connection.error_ = error;
        connection.fail(TcpEstablishFailure::connect);
        return connection;
    }
    return connection;
}

TcpEstablish OutgoingTcpConnection::poll()
{
    if (outcome_ != TcpEstablish::waiting)
        return outcome_;
    if (!connected_) {
        pollfd writable{fd(), POLLOUT, 0};
        if (::poll(&writable, 1, 0) <= 0)
            return outcome_; // still connecting
        int error = 0;
        socklen_t size = sizeof error;
        ::getsockopt(fd(), SOL_SOCKET, SO_ERROR, &error, &size);
        if (error != 0) {
            error_ = error;
            return fail(TcpEstablishFailure::connect);
        }
        connected_ = true;
        if (!send(iwarp::encode_mpa_frame(request_)))
            return outcome_;
    }
    if (!pump())
        return outcome_;
    return read_reply();
}

TcpEstablish OutgoingTcpConnection::read_reply()
{
    const auto frame = take_frame(MpaFrameKind::reply);
    if (!frame)
        return outcome_;
    reply_ = frame->frame;
    if (reply_.reject)
        return outcome_ = TcpEstablish::rejected;
    const iwarp::MpaInitiatorOutcome verdict = iwarp::accept_mpa_reply(request_, reply_, settings_);
    if (verdict.refusal != iwarp::MpaRefusal::none) {
        refusal_ = verdict.refusal;
        // RFC 6581 section 8's codes go to the responder in a Terminate; the others (markers,
        // no enhanced data) have nothing to say it with but the close.
        const bool crc = request_.crc || reply_.crc;
        if (refusal_ == iwarp::MpaRefusal::insufficient_ird)
            send(first_terminate_fpdu(iwarp::TerminateReason::mpa_insufficient_ird, crc));
        else if (refusal_ == iwarp::MpaRefusal::no_matching_rtr)
            send(first_terminate_fpdu(iwarp::TerminateReason::mpa_no_matching_rtr, crc));
        if (stream_)
            stream_->shutdown_write();
        return fail(TcpEstablishFailure::refusal);
    }
    negotiated_ = verdict.negotiated;
    return outcome_ = TcpEstablish::replied;
}

std::unique_ptr<TcpLink> OutgoingTcpConnection::complete()
{
    if (outcome_ != TcpEstablish::replied)
        throw std::logic_error("OutgoingTcpConnection::complete without a reply");
    TcpLinkStart start;
    start.side = TcpLinkSide::active;
    start.expect_rtr_read_response = negotiated_.rtr == MpaRtr::read;
    auto link = make_link(std::move(start));
    // The RTR is the first FPDU and takes its queue's MSN 1 (RFC 6581 3.3).
    LinkSendStatus status = LinkSendStatus::sent;
    switch (negotiated_.rtr) {
    case MpaRtr::write:
        status = link->write(0, 0, {});
        break;
    case MpaRtr::read:
        status = link->read_request({});
        break;
    case MpaRtr::send:
        status = link->send(RdmapOpcode::send, {});
        break;
    case MpaRtr::none:
        break;
    }
    if (status == LinkSendStatus::closed) {
        fail(TcpEstablishFailure::reset);
        return nullptr;
    }
    outcome_ = TcpEstablish::established;
    return link;
}

void OutgoingTcpConnection::refuse()
{
    if (stream_)
        stream_->shutdown_write();
    stream_.reset();
    fail(TcpEstablishFailure::abandoned);
}

void OutgoingTcpConnection::abandon()
{
    stream_.reset();
    fail(TcpEstablishFailure::abandoned);
}

} // namespace ndk::soft::tcp
