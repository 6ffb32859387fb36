// The TCP link's establishment (core/src/providers/soft/tcp/tcp_establish.*) over loopback,
// IPv4 and IPv6: MPA revision 2 with RFC 6581's IRD/ORD and private data both ways, the
// reject frame with private data, each RTR type (so that the passive side may send first),
// CRC as either side asks, a peer that wants markers or does not speak MPA, a refused
// connect, and a reply turned down.
#include "tcp_link_support.hpp"

#include <gtest/gtest.h>

namespace {

using namespace ndk::soft::tcp;
using namespace ndk::soft::tcp::test_support;
using ndk::soft::iwarp::MpaRtr;
using ndk::soft::iwarp::MpaSettings;
using ndk::soft::iwarp::RdmapOpcode;

class TcpEstablishTest : public ::testing::TestWithParam<std::string> {};

INSTANTIATE_TEST_SUITE_P(Loopback, TcpEstablishTest, ::testing::Values("127.0.0.1", "::1"),
                         [](const auto &info) { return info.param == "::1" ? "IPv6" : "IPv4"; });

TEST_P(TcpEstablishTest, PrivateDataAndReadLimitsBothWays)
{
    PairSettings settings;
    settings.active.ird = 7;
    settings.active.ord = 5;
    settings.passive.ird = 3;
    settings.passive.ord = 9;
    settings.request_data = bytes_of("from the active side");
    settings.reply_data = bytes_of("and back");
    const LinkPair pair = establish_pair(GetParam(), settings);

    EXPECT_EQ(text_of(pair.request.private_data), "from the active side");
    ASSERT_TRUE(pair.request.enhanced);
    EXPECT_EQ(pair.request.enhanced->ird, 7);
    EXPECT_EQ(pair.request.enhanced->ord, 5);
    EXPECT_EQ(text_of(pair.reply.private_data), "and back");
    ASSERT_TRUE(pair.reply.enhanced);

    // The responder's IRD within the initiator's ORD, its ORD within the initiator's IRD
    // (mpa.hpp); the initiator takes what the reply says.
    EXPECT_EQ(pair.passive->negotiated().ird, 3);
    EXPECT_EQ(pair.passive->negotiated().ord, 7);
    EXPECT_EQ(pair.active->negotiated().ird, 7);
    EXPECT_EQ(pair.active->negotiated().ord, 3);
    EXPECT_TRUE(pair.active->negotiated().crc);
    EXPECT_TRUE(pair.passive->negotiated().crc);
    EXPECT_EQ(pair.active->negotiated().rtr, MpaRtr::write);

    // The 4-tuple is the kernel's, the same seen from both ends.
    EXPECT_EQ(pair.active->local_address().text(), pair.passive->peer_address().text());
    EXPECT_EQ(pair.active->peer_address().text(), pair.passive->local_address().text());
    EXPECT_EQ(pair.active->local_address().family(), GetParam() == "::1" ? AF_INET6 : AF_INET);
}

// An adapter connects from its own address: the source is bound before the connect.
TEST_P(TcpEstablishTest, TheActiveSideConnectsFromTheSourceItBinds)
{
    PairSettings settings;
    settings.bind_source = true;
    const LinkPair pair = establish_pair(GetParam(), settings);
    const auto expected = loopback(GetParam(), pair.active->local_address().port());
    EXPECT_EQ(pair.active->local_address().text(), expected.text());
    EXPECT_EQ(pair.passive->peer_address().text(), expected.text());
}

TEST_P(TcpEstablishTest, RejectCarriesPrivateData)
{
    TcpAcceptor acceptor(loopback(GetParam()));
    TcpConnectParameters parameters;
    parameters.destination = acceptor.local_address();
    const auto request_data = bytes_of("may I");
    parameters.private_data = request_data;
    auto outgoing = OutgoingTcpConnection::connect(parameters);

    const auto deadline = Clock::now() + kStepLimit;
    std::optional<IncomingTcpConnection> incoming;
    while (!(incoming = acceptor.accept()))
        wait_for({acceptor.fd()}, POLLIN, deadline, "the connection");
    while (incoming->poll() != TcpEstablish::request) {
        outgoing.poll();
        wait_for({incoming->fd()}, POLLIN, deadline, "the request");
    }
    EXPECT_EQ(text_of(incoming->request().private_data), "may I");
    incoming->reject(bytes_of("not today"));

    TcpEstablish step;
    while ((step = outgoing.poll()) == TcpEstablish::waiting)
        wait_for({outgoing.fd()}, POLLIN, deadline, "the reject");
    EXPECT_EQ(step, TcpEstablish::rejected);
    EXPECT_TRUE(outgoing.reply().reject);
    EXPECT_EQ(text_of(outgoing.reply().private_data), "not today");
}

// Each RTR (RFC 6581 3.3): the passive side sends first, before the active side has sent
// anything but the RTR; the RTR's MSN is taken, so the active side's next message of that
// queue carries MSN 2 and is accepted in order.
struct RtrCase {
    const char *name;
    ndk::soft::iwarp::MpaRtrTypes offered;
    MpaRtr expected;
};

class TcpRtrTest : public ::testing::TestWithParam<RtrCase> {};

INSTANTIATE_TEST_SUITE_P(Each, TcpRtrTest,
                         ::testing::Values(RtrCase{"Write", {false, true, true}, MpaRtr::write},
                                           RtrCase{"Read", {false, false, true}, MpaRtr::read},
                                           RtrCase{"Send", {true, false, false}, MpaRtr::send}),
                         [](const auto &info) { return std::string(info.param.name); });

TEST_P(TcpRtrTest, PassiveSendsFirstThenTheQueueGoesOn)
{
    PairSettings settings;
    settings.active.rtr = GetParam().offered;
    settings.passive.rtr = {true, true, true};
    LinkPair pair = establish_pair("127.0.0.1", settings);
    ASSERT_EQ(pair.active->negotiated().rtr, GetParam().expected);
    ASSERT_EQ(pair.passive->negotiated().rtr, GetParam().expected);

    const auto first = pattern(100, 1);
    ASSERT_NE(pair.passive->send(RdmapOpcode::send, first), LinkSendStatus::closed);
    MessageSink at_active;
    receive_until(*pair.active, at_active, [&] { return !at_active.messages.empty(); });
    ASSERT_EQ(at_active.messages.size(), 1u); // a Read RTR's answer is not delivered
    EXPECT_EQ(at_active.messages[0].bytes, first);
    EXPECT_EQ(at_active.messages[0].msn, 1u);

    // The active side's next Send and Read Request, after the RTR took MSN 1 of one queue.
    pair.active->send(RdmapOpcode::send, pattern(10, 2));
    pair.active->read_request({1, 2, 3, 4, 5});
    MessageSink at_passive;
    receive_until(*pair.passive, at_passive, [&] { return at_passive.messages.size() == 2; });
    ASSERT_EQ(at_passive.messages.size(), 2u);
    EXPECT_EQ(at_passive.messages[0].msn, GetParam().expected == MpaRtr::send ? 2u : 1u);
    EXPECT_EQ(at_passive.messages[1].msn, GetParam().expected == MpaRtr::read ? 2u : 1u);
    EXPECT_EQ(pair.passive->state(), TcpLinkState::open);
    EXPECT_EQ(pair.active->state(), TcpLinkState::open);
}

TEST(TcpEstablish, CrcWhenEitherSideAsks)
{
    for (const auto &[active_crc, passive_crc] : {std::pair{false, false}, std::pair{true, false},
                                                 std::pair{false, true}}) {
        PairSettings settings;
        settings.active.crc = active_crc;
        settings.passive.crc = passive_crc;
        LinkPair pair = establish_pair("127.0.0.1", settings);
        EXPECT_EQ(pair.active->negotiated().crc, active_crc || passive_crc);
        EXPECT_EQ(pair.passive->negotiated().crc, active_crc || passive_crc);
        // And the FPDUs agree on it: a message goes through.
        pair.active->send(RdmapOpcode::send, pattern(3000, 3));
        MessageSink sink;
        receive_until(*pair.passive, sink, [&] { return !sink.messages.empty(); });
        ASSERT_EQ(sink.messages.size(), 1u);
        EXPECT_EQ(sink.messages[0].bytes, pattern(3000, 3));
    }
}

// Without peer_to_peer no RTR is negotiated: the passive side is established at its reply.
TEST(TcpEstablish, WithoutRtrThePassiveSideIsEstablishedAtItsReply)
{
    PairSettings settings;
    settings.active.peer_to_peer = false;
    LinkPair pair = establish_pair("::1", settings);
    EXPECT_EQ(pair.active->negotiated().rtr, MpaRtr::none);
    pair.active->write(9, 4096, pattern(50, 4));
    MessageSink sink;
    receive_until(*pair.passive, sink, [&] { return !sink.messages.empty(); });
    ASSERT_EQ(sink.messages.size(), 1u);
    EXPECT_EQ(sink.messages[0].opcode, RdmapOpcode::rdma_write);
    EXPECT_EQ(sink.messages[0].offset, 4096u);
}

// Reads a frame the passive side answers a raw peer with.
ndk::soft::iwarp::MpaFrame read_reply(RawPeer &raw)
{
    const auto bytes = raw.read_until([](std::span<const std::byte> got) {
        return ndk::soft::iwarp::parse_mpa_frame(got, ndk::soft::iwarp::MpaFrameKind::reply).ok();
    });
    const auto parsed = ndk::soft::iwarp::parse_mpa_frame(bytes, ndk::soft::iwarp::MpaFrameKind::reply);
    if (!parsed)
        throw std::runtime_error("no reply frame");
    return parsed->frame;
}

IncomingTcpConnection accept_one(TcpAcceptor &acceptor)
{
    const auto deadline = Clock::now() + kStepLimit;
    for (;;) {
        if (auto connection = acceptor.accept())
            return std::move(*connection);
        wait_for({acceptor.fd()}, POLLIN, deadline, "a connection");
    }
}

TcpEstablish step_of(IncomingTcpConnection &incoming)
{
    const auto deadline = Clock::now() + kStepLimit;
    TcpEstablish step;
    while ((step = incoming.poll()) == TcpEstablish::waiting)
        wait_for({incoming.fd()}, POLLIN, deadline, "the passive side's next step");
    return step;
}

TEST(TcpEstablish, MarkersAreRefusedWithARejectFrame)
{
    TcpAcceptor acceptor(loopback("127.0.0.1"));
    RawPeer raw(acceptor.local_address());
    auto request = ndk::soft::iwarp::make_mpa_request({}, {});
    request.markers = true;
    raw.send(ndk::soft::iwarp::encode_mpa_frame(request));
    IncomingTcpConnection incoming = accept_one(acceptor);
    EXPECT_EQ(step_of(incoming), TcpEstablish::failed);
    EXPECT_EQ(incoming.failure(), TcpEstablishFailure::refusal);
    EXPECT_EQ(incoming.refusal(), ndk::soft::iwarp::MpaRefusal::markers);
    const auto reply = read_reply(raw);
    EXPECT_TRUE(reply.reject);
    EXPECT_FALSE(reply.markers);
}

TEST(TcpEstablish, APeerNotSpeakingMpaFails)
{
    TcpAcceptor acceptor(loopback("::1"));
    RawPeer raw(acceptor.local_address());
    raw.send(bytes_of("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
    IncomingTcpConnection incoming = accept_one(acceptor);
    EXPECT_EQ(step_of(incoming), TcpEstablish::failed);
    EXPECT_EQ(incoming.failure(), TcpEstablishFailure::not_mpa);
    EXPECT_EQ(incoming.parse_error(), ndk::soft::iwarp::MpaParseError::bad_key);
}

TEST(TcpEstablish, APeerClosingBeforeItsRequestIsWholeFails)
{
    TcpAcceptor acceptor(loopback("127.0.0.1"));
    RawPeer raw(acceptor.local_address());
    const auto request = ndk::soft::iwarp::encode_mpa_frame(ndk::soft::iwarp::make_mpa_request({}, {}));
    raw.send(std::span(request).first(10));
    raw.shutdown_write();
    IncomingTcpConnection incoming = accept_one(acceptor);
    EXPECT_EQ(step_of(incoming), TcpEstablish::failed);
    EXPECT_EQ(incoming.failure(), TcpEstablishFailure::closed);
}

TEST(TcpEstablish, AConnectNobodyListensToFails)
{
    // A port just released by a listener of ours, so nobody else holds it.
    std::uint16_t port;
    {
        TcpAcceptor acceptor(loopback("127.0.0.1"));
        port = acceptor.local_address().port();
    }
    TcpConnectParameters parameters;
    parameters.destination = loopback("127.0.0.1", port);
    auto outgoing = OutgoingTcpConnection::connect(parameters);
    const auto deadline = Clock::now() + kStepLimit;
    TcpEstablish step;
    while ((step = outgoing.poll()) == TcpEstablish::waiting)
        wait_for({outgoing.fd()}, POLLOUT, deadline, "the refused connect");
    EXPECT_EQ(step, TcpEstablish::failed);
    EXPECT_EQ(outgoing.failure(), TcpEstablishFailure::connect);
    EXPECT_EQ(outgoing.error(), ECONNREFUSED);
}

TEST(TcpEstablish, ARefusedReplyReachesThePassiveSideAsRefused)
{
    TcpAcceptor acceptor(loopback("127.0.0.1"));
    TcpConnectParameters parameters;
    parameters.destination = acceptor.local_address();
    auto outgoing = OutgoingTcpConnection::connect(parameters);
    IncomingTcpConnection incoming = accept_one(acceptor);
    const auto deadline = Clock::now() + kStepLimit;
    TcpEstablish step;
    while ((step = incoming.poll()) == TcpEstablish::waiting) {
        outgoing.poll();
        wait_for({incoming.fd()}, POLLIN, deadline, "the request");
    }
    ASSERT_EQ(step, TcpEstablish::request);
    ASSERT_EQ(incoming.accept({}, {}), TcpEstablish::waiting);
    while ((step = outgoing.poll()) == TcpEstablish::waiting)
        wait_for({outgoing.fd()}, POLLIN, deadline, "the reply");
    ASSERT_EQ(step, TcpEstablish::replied);
    outgoing.refuse();
    EXPECT_EQ(step_of(incoming), TcpEstablish::refused);
}

// A FIN that came while the request waited for the consumer is seen by accept() itself: the
// progress thread was told of it once, before accept(), and will not be again.
TEST(TcpEstablish, AnActiveSideGoneBeforeTheAcceptIsSeenByTheAccept)
{
    TcpAcceptor acceptor(loopback("127.0.0.1"));
    RawPeer raw(acceptor.local_address());
    raw.send(ndk::soft::iwarp::encode_mpa_frame(ndk::soft::iwarp::make_mpa_request({}, {})));
    IncomingTcpConnection incoming = accept_one(acceptor);
    ASSERT_EQ(step_of(incoming), TcpEstablish::request);
    raw.shutdown_write();
    // The FIN is in the passive socket once it reads as readable with nothing but the EOF.
    wait_for({incoming.fd()}, POLLIN, Clock::now() + kStepLimit, "the FIN");
    EXPECT_EQ(incoming.accept({}, {}), TcpEstablish::refused);
}

// A peer that sends a stream of bytes behind its request instead of waiting for the reply:
// the request is still read as one (nothing past it is taken), and what follows is judged
// as the RTR it should have been: refused with a Terminate, not waited for.
TEST(TcpEstablish, BytesBehindTheRequestAreJudgedAsTheRtr)
{
    TcpAcceptor acceptor(loopback("127.0.0.1"));
    RawPeer raw(acceptor.local_address());
    raw.send(ndk::soft::iwarp::encode_mpa_frame(ndk::soft::iwarp::make_mpa_request({}, {})));
    raw.send(std::vector<std::byte>(200 * 1024, std::byte{0xff})); // a 65535-byte FPDU, bad CRC
    IncomingTcpConnection incoming = accept_one(acceptor);
    ASSERT_EQ(step_of(incoming), TcpEstablish::request);
    TcpEstablish step = incoming.accept({}, {});
    if (step == TcpEstablish::waiting)
        step = step_of(incoming);
    EXPECT_EQ(step, TcpEstablish::failed);
    EXPECT_EQ(incoming.failure(), TcpEstablishFailure::bad_rtr);
}

// The initiator refuses a responder ORD above its IRD with RFC 6581's Terminate (LLP code 6).
TEST(TcpEstablish, AResponderOrdAboveOurIrdIsRefusedWithATerminate)
{
    TcpAcceptor acceptor(loopback("127.0.0.1"));
    TcpConnectParameters parameters;
    parameters.destination = acceptor.local_address();
    parameters.settings.ird = 2;
    auto outgoing = OutgoingTcpConnection::connect(parameters);
    IncomingTcpConnection incoming = accept_one(acceptor);
    const auto deadline = Clock::now() + kStepLimit;
    while (incoming.poll() != TcpEstablish::request) {
        outgoing.poll();
        wait_for({incoming.fd()}, POLLIN, deadline, "the request");
    }
    // A responder that ignores the initiator's IRD (not ours: answer_mpa_request keeps to
    // it), written by hand: ORD 8 against the initiator's IRD 2.
    ndk::soft::iwarp::MpaFrame reply;
    reply.kind = ndk::soft::iwarp::MpaFrameKind::reply;
    reply.crc = true;
    reply.enhanced = ndk::soft::iwarp::MpaEnhancedData{2, 8, true, {false, true, false}};
    const auto bytes = ndk::soft::iwarp::encode_mpa_frame(reply);
    ASSERT_EQ(::send(incoming.fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
    TcpEstablish step;
    while ((step = outgoing.poll()) == TcpEstablish::waiting)
        wait_for({outgoing.fd()}, POLLIN, deadline, "the reply");
    EXPECT_EQ(step, TcpEstablish::failed);
    EXPECT_EQ(outgoing.refusal(), ndk::soft::iwarp::MpaRefusal::insufficient_ird);

    // What the passive side reads next is the Terminate, LLP (2) / MPA (0) / code 6.
    std::vector<std::byte> got;
    while (true) {
        std::byte chunk[256];
        wait_for({incoming.fd()}, POLLIN, deadline, "the Terminate");
        const ssize_t n = ::recv(incoming.fd(), chunk, sizeof chunk, 0);
        if (n <= 0)
            break;
        got.insert(got.end(), chunk, chunk + n);
    }
    const auto fpdu = ndk::soft::iwarp::parse_fpdu(got, true, 65535);
    ASSERT_EQ(fpdu.status, ndk::soft::iwarp::FpduStatus::complete);
    const auto segment = ndk::soft::iwarp::parse_segment(fpdu.ulpdu);
    ASSERT_TRUE(segment);
    ASSERT_TRUE(segment->terminate);
    EXPECT_EQ(segment->terminate->layer, 2);
    EXPECT_EQ(segment->terminate->code, 6);
}

} // namespace
