// The established TCP link (core/src/providers/soft/tcp/tcp_link.*) over loopback: every
// RDMAP operation at the sizes around the MULPDU and at 1 MiB, segmented and rebuilt
// byte-exact by a sink that places segments as a provider would; a write larger than the
// socket buffers queued and flushed without blocking; a peer's garbage ending the link with
// the Terminate that names it; a peer closing mid-message, cleanly, or with a reset; a
// consumer's read made ahead (read_ahead()) delivered by the next receive() as its own read.
#include "tcp_link_support.hpp"

#include <gtest/gtest.h>

#include <sys/ioctl.h>

#include <random>

namespace {

using namespace ndk::soft::tcp;
using namespace ndk::soft::tcp::test_support;
namespace iwarp = ndk::soft::iwarp;
using iwarp::RdmapOpcode;
using iwarp::TerminateReason;

constexpr std::size_t kMulpdu = 1024; // a small MULPDU, so that segmentation is cheap to reach

struct OpCase {
    const char *name;
    RdmapOpcode opcode;
};

class TcpLinkSizes : public ::testing::TestWithParam<OpCase> {};

INSTANTIATE_TEST_SUITE_P(
    EachOp, TcpLinkSizes,
    ::testing::Values(OpCase{"Send", RdmapOpcode::send},
                      OpCase{"SendInvalidate", RdmapOpcode::send_invalidate},
                      OpCase{"SendSolicited", RdmapOpcode::send_solicited},
                      OpCase{"SendSolicitedInvalidate", RdmapOpcode::send_solicited_invalidate},
                      OpCase{"RdmaWrite", RdmapOpcode::rdma_write},
                      OpCase{"ReadResponse", RdmapOpcode::read_response}),
    [](const auto &info) { return std::string(info.param.name); });

LinkSendStatus send_op(TcpLink &link, RdmapOpcode op, std::span<const std::byte> payload,
                       std::uint32_t seed)
{
    switch (op) {
    case RdmapOpcode::rdma_write:
        return link.write(0x1000 + seed, 0x10000 * seed, payload);
    case RdmapOpcode::read_response:
        return link.read_response(0x2000 + seed, 0x20000 * seed, payload);
    default:
        return link.send(op, payload, 0x3000 + seed);
    }
}

// 0 B, 1 B, a segment's payload capacity - 1 / exactly / + 1, MULPDU - 1 and + 1 bytes of
// payload, and 1 MiB; each arrives whole, in order, in as many segments as the MULPDU makes.
TEST_P(TcpLinkSizes, EverySizeArrivesByteExactInTheSegmentsTheMulpduMakes)
{
    PairSettings settings;
    settings.options.send_mulpdu = kMulpdu;
    LinkPair pair = establish_pair("127.0.0.1", settings);
    ASSERT_EQ(pair.active->send_mulpdu(), kMulpdu);

    const RdmapOpcode op = GetParam().opcode;
    const std::size_t capacity = kMulpdu - iwarp::header_size(op);
    const std::vector<std::size_t> sizes{0, 1, capacity - 1, capacity, capacity + 1,
                                         kMulpdu - 1, kMulpdu + 1, 1 << 20};
    for (std::size_t i = 0; i < sizes.size(); ++i)
        ASSERT_NE(send_op(*pair.active, op, pattern(sizes[i], static_cast<unsigned>(i)),
                          static_cast<std::uint32_t>(i)),
                  LinkSendStatus::closed);

    MessageSink sink;
    const TcpLinkState state = receive_until(
        *pair.passive, sink, [&] { return sink.messages.size() == sizes.size(); }, pair.active.get());
    ASSERT_EQ(state, TcpLinkState::open);
    ASSERT_EQ(sink.messages.size(), sizes.size());
    EXPECT_FALSE(sink.misplaced);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        const auto &m = sink.messages[i];
        SCOPED_TRACE("size " + std::to_string(sizes[i]));
        EXPECT_EQ(m.opcode, op);
        EXPECT_EQ(m.bytes, pattern(sizes[i], static_cast<unsigned>(i)));
        EXPECT_EQ(m.segments, std::max<std::size_t>(1, (sizes[i] + capacity - 1) / capacity));
        if (iwarp::is_tagged(op)) {
            EXPECT_EQ(m.stag, (op == RdmapOpcode::rdma_write ? 0x1000u : 0x2000u) + i);
            EXPECT_EQ(m.offset, (op == RdmapOpcode::rdma_write ? 0x10000u : 0x20000u) * i);
        } else {
            EXPECT_EQ(m.msn, i + 1);
            EXPECT_EQ(m.invalidate_stag, iwarp::carries_invalidate(op) ? 0x3000u + i : 0u);
        }
    }
}

// The MULPDU of the connection's MSS (RFC 5044 4.3) when none is fixed: 1 MiB each way.
TEST(TcpLink, TheMssMulpduCarriesAMebibyteEachWay)
{
    LinkPair pair = establish_pair("::1");
    EXPECT_GT(pair.active->send_mulpdu(), 1000u);
    EXPECT_LE(pair.active->send_mulpdu(), iwarp::kMpaMaxUlpdu);
    const auto big = pattern(1 << 20, 9);
    pair.active->write(7, 0, big);
    pair.passive->send(RdmapOpcode::send_solicited, big);
    MessageSink at_passive, at_active;
    receive_until(*pair.passive, at_passive, [&] { return !at_passive.messages.empty(); },
                  pair.active.get());
    receive_until(*pair.active, at_active, [&] { return !at_active.messages.empty(); },
                  pair.passive.get());
    ASSERT_EQ(at_passive.messages.size(), 1u);
    ASSERT_EQ(at_active.messages.size(), 1u);
    EXPECT_EQ(at_passive.messages[0].bytes, big);
    EXPECT_EQ(at_active.messages[0].bytes, big);
    EXPECT_EQ(at_active.messages[0].opcode, RdmapOpcode::send_solicited);
}

// A body in pieces (an SGL in registered memory) goes from where it lies: pieces of 0, 1 and
// odd sizes, cut by segments inside and across them, arrive as the gathered bytes, for a
// Write and a Send, with and without CRC.
TEST(TcpLink, ABodyInPiecesArrivesAsItsGatheredBytes)
{
    for (const bool crc : {true, false}) {
        SCOPED_TRACE(crc ? "with CRC" : "without CRC");
        PairSettings settings;
        settings.options.send_mulpdu = kMulpdu;
        settings.active.crc = crc;
        settings.passive.crc = crc;
        LinkPair pair = establish_pair("127.0.0.1", settings);
        ASSERT_EQ(pair.active->negotiated().crc, crc);
        const auto whole = pattern(3 * kMulpdu + 77, 5);
        const std::vector<std::size_t> cuts{0, 1, 1, 500, 2 * kMulpdu, 2 * kMulpdu + 3,
                                            whole.size()};
        std::vector<std::span<const std::byte>> pieces;
        for (std::size_t i = 0; i + 1 < cuts.size(); ++i)
            pieces.push_back(std::span(whole).subspan(cuts[i], cuts[i + 1] - cuts[i]));
        ASSERT_NE(pair.active->write_pieces(0x77, 0x1000, pieces), LinkSendStatus::closed);
        ASSERT_NE(pair.active->send_pieces(RdmapOpcode::send, pieces), LinkSendStatus::closed);
        MessageSink sink;
        receive_until(*pair.passive, sink, [&] { return sink.messages.size() == 2; },
                      pair.active.get());
        ASSERT_EQ(sink.messages.size(), 2u);
        EXPECT_FALSE(sink.misplaced);
        EXPECT_EQ(sink.messages[0].bytes, whole);
        EXPECT_EQ(sink.messages[0].offset, 0x1000u);
        EXPECT_EQ(sink.messages[1].bytes, whole);
    }
}

TEST(TcpLink, ReadRequestFieldsArriveAndEachTakesTheNextMsn)
{
    LinkPair pair = establish_pair("127.0.0.1");
    const iwarp::ReadRequest first{0x11, 0x1111'0000'0000, 4096, 0x22, 0x2222};
    const iwarp::ReadRequest second{0x33, 0, 0, 0x44, 8};
    pair.active->read_request(first);
    pair.active->read_request(second);
    MessageSink sink;
    receive_until(*pair.passive, sink, [&] { return sink.messages.size() == 2; });
    ASSERT_EQ(sink.messages.size(), 2u);
    EXPECT_EQ(sink.messages[0].read_request, first);
    EXPECT_EQ(sink.messages[1].read_request, second);
    EXPECT_EQ(sink.messages[0].msn, 1u);
    EXPECT_EQ(sink.messages[1].msn, 2u);
}

TEST(TcpLink, ATerminateEndsBothSides)
{
    LinkPair pair = establish_pair("127.0.0.1");
    pair.active->send(RdmapOpcode::send, pattern(10, 1));
    pair.active->terminate(TerminateReason::rdmap_access_rights);
    EXPECT_EQ(pair.active->state(), TcpLinkState::terminate_sent);
    EXPECT_EQ(pair.active->terminate_reason(), TerminateReason::rdmap_access_rights);
    EXPECT_EQ(pair.active->send(RdmapOpcode::send, pattern(10, 2)), LinkSendStatus::closed);

    MessageSink sink;
    EXPECT_EQ(receive_until(*pair.passive, sink, [] { return false; }),
              TcpLinkState::terminate_received);
    ASSERT_EQ(sink.messages.size(), 2u); // the Send before it, then the Terminate
    EXPECT_EQ(sink.messages[1].opcode, RdmapOpcode::terminate);
    EXPECT_EQ(sink.messages[1].terminate_layer, 0);
    EXPECT_EQ(sink.messages[1].terminate_etype, 1);
    EXPECT_EQ(sink.messages[1].terminate_code, 2);
}

// The knob `quiescent` compares one end's writes with the other end's reads (tcp_stream.hpp,
// StreamTally): counted from the handshake on, they meet once the receiver has read what was
// sent, the FIN included, and not before.
TEST(TcpLink, EachSidesWritesMeetThePeersReadsOnceItHasReadThem)
{
    LinkPair pair = establish_pair("127.0.0.1");
    const std::uint64_t before = pair.active->tally().written;
    ASSERT_EQ(pair.active->send(RdmapOpcode::send, pattern(1000, 1)), LinkSendStatus::sent);
    EXPECT_GT(pair.active->tally().written, before);
    EXPECT_LT(pair.passive->tally().read, pair.active->tally().written); // not read yet
    MessageSink sink;
    receive_until(*pair.passive, sink, [&] { return sink.messages.size() == 1; });
    EXPECT_EQ(pair.passive->tally().read, pair.active->tally().written);
    EXPECT_FALSE(pair.passive->tally().eof);

    pair.active->close(); // the FIN, after what is queued (nothing)
    EXPECT_TRUE(pair.active->tally().shut_down);
    EXPECT_EQ(receive_until(*pair.passive, sink, [] { return false; }), TcpLinkState::closed);
    EXPECT_TRUE(pair.passive->tally().eof);
    EXPECT_EQ(pair.passive->tally().read, pair.active->tally().written);
}

// What a provider does when placement fails (an STag it does not know): terminate() from the
// sink with the segment; the peer's Terminate names it by its DDP header (RFC 5040 4.8).
TEST(TcpLink, ASinkTerminatesNamingTheSegmentInError)
{
    LinkPair pair = establish_pair("127.0.0.1");
    pair.active->write(0xdead, 64, pattern(200, 1));

    class RefusingSink : public SegmentSink {
    public:
        TcpLink *link = nullptr;
        std::vector<std::byte> header; // the refused segment's DDP header
        void segment(const InboundSegment &segment) override
        {
            header.assign(segment.ulpdu.begin(), segment.ulpdu.begin() + iwarp::kTaggedHeaderSize);
            link->terminate(TerminateReason::ddp_tagged_invalid_stag, segment.ulpdu);
        }
    } refusing;
    refusing.link = pair.passive.get();
    EXPECT_EQ(receive_until(*pair.passive, refusing, [] { return false; }),
              TcpLinkState::terminate_sent);

    class TerminateSink : public SegmentSink {
    public:
        std::optional<iwarp::TerminateMessage> terminate;
        std::vector<std::byte> named_header;
        std::optional<std::uint16_t> named_length;
        void segment(const InboundSegment &segment) override
        {
            if (!segment.terminate)
                return;
            terminate = segment.terminate;
            named_header.assign(segment.terminate->ddp_header.begin(),
                                segment.terminate->ddp_header.end());
            named_length = segment.terminate->ddp_segment_length;
        }
    } at_active;
    EXPECT_EQ(receive_until(*pair.active, at_active, [] { return false; }),
              TcpLinkState::terminate_received);
    ASSERT_TRUE(at_active.terminate);
    EXPECT_EQ(at_active.terminate->layer, 1);
    EXPECT_EQ(at_active.terminate->etype, 1);
    EXPECT_EQ(at_active.terminate->code, 0);
    EXPECT_EQ(at_active.named_header, refusing.header);
    EXPECT_EQ(at_active.named_length, iwarp::kTaggedHeaderSize + 200);
}

// A message far larger than both sockets' buffers while the peer reads nothing: the call
// returns at once with the rest queued, and the queue drains as the peer reads.
TEST(TcpLink, AWriteLargerThanTheSocketBuffersIsQueuedNotBlocked)
{
    LinkPair pair = establish_pair("127.0.0.1");
    const auto big = pattern(16 << 20, 5);
    // A call that returns `queued` with bytes left did not wait for the peer.  16 MiB is past
    // the default socket buffers; a host with larger ones takes a few more before it queues.
    std::size_t written = 0;
    LinkSendStatus status = LinkSendStatus::sent;
    while (status == LinkSendStatus::sent && written < 8) {
        status = pair.active->write(1, 0, big);
        ++written;
    }
    EXPECT_EQ(status, LinkSendStatus::queued);
    EXPECT_GT(pair.active->queued(), 0u);
    MessageSink sink;
    receive_until(*pair.passive, sink, [&] { return sink.messages.size() == written; },
                  pair.active.get(), std::chrono::milliseconds(60000));
    ASSERT_EQ(sink.messages.size(), written);
    for (const auto &message : sink.messages)
        EXPECT_EQ(message.bytes, big);
    EXPECT_EQ(pair.active->queued(), 0u);
}

// ---- a raw peer: the active side's handshake by hand, then anything

struct RawLink {
    std::unique_ptr<RawPeer> raw;
    std::unique_ptr<TcpLink> link; // the passive side's
};

RawLink raw_to_link(TcpAcceptor &acceptor, bool crc)
{
    RawLink out;
    out.raw = std::make_unique<RawPeer>(acceptor.local_address());
    iwarp::MpaSettings settings;
    settings.crc = crc;
    out.raw->send(iwarp::encode_mpa_frame(iwarp::make_mpa_request(settings, {})));
    const auto deadline = Clock::now() + kStepLimit;
    std::optional<IncomingTcpConnection> incoming;
    while (!(incoming = acceptor.accept()))
        wait_for({acceptor.fd()}, POLLIN, deadline, "the raw connection");
    TcpEstablish step;
    while ((step = incoming->poll()) == TcpEstablish::waiting)
        wait_for({incoming->fd()}, POLLIN, deadline, "the raw request");
    if (step != TcpEstablish::request)
        throw std::runtime_error("no request");
    iwarp::MpaSettings passive;
    passive.crc = crc;
    incoming->accept(passive, {});
    const auto reply_bytes = out.raw->read_until([](std::span<const std::byte> got) {
        return iwarp::parse_mpa_frame(got, iwarp::MpaFrameKind::reply).ok();
    });
    out.raw->consume(iwarp::parse_mpa_frame(reply_bytes, iwarp::MpaFrameKind::reply)->size);
    // The Write RTR: a zero-length RDMA Write.
    iwarp::SegmentHeader rtr;
    rtr.opcode = RdmapOpcode::rdma_write;
    out.raw->send(fpdu_of(rtr, {}, crc));
    while ((step = incoming->poll()) == TcpEstablish::waiting)
        wait_for({incoming->fd()}, POLLIN, deadline, "the raw RTR");
    if (step != TcpEstablish::established)
        throw std::runtime_error("not established");
    out.link = incoming->take_link();
    return out;
}

// The Terminate the link sent, as the raw peer reads it, then its FIN.
iwarp::TerminateMessage read_terminate(RawPeer &raw, bool crc, std::vector<std::byte> &keep)
{
    bool eof = false;
    keep = raw.read_until([](std::span<const std::byte>) { return false; }, &eof);
    EXPECT_TRUE(eof) << "the link's FIN after its Terminate";
    const auto fpdu = iwarp::parse_fpdu(keep, crc, 65535);
    if (fpdu.status != iwarp::FpduStatus::complete)
        throw std::runtime_error("no Terminate FPDU");
    const auto segment = iwarp::parse_segment(fpdu.ulpdu);
    if (!segment || !segment->terminate)
        throw std::runtime_error("not a Terminate");
    EXPECT_EQ(segment->header.queue, iwarp::kQueueTerminate);
    EXPECT_EQ(segment->header.msn, 1u);
    return *segment->terminate;
}

struct GarbageCase {
    const char *name;
    std::function<std::vector<std::byte>()> bytes;
    TerminateReason expected;
};

std::vector<std::byte> with_bad_crc()
{
    iwarp::SegmentHeader send;
    auto fpdu = fpdu_of(send, pattern(40, 1), true);
    fpdu.back() ^= std::byte{0x01};
    return fpdu;
}

std::vector<std::byte> with_bad_ddp_version()
{
    iwarp::SegmentHeader send;
    auto ulpdu = iwarp::encode_segment({send, pattern(8, 2), {}, {}});
    ulpdu[0] = static_cast<std::byte>((std::to_integer<unsigned>(ulpdu[0]) & ~3u) | 2u);
    return iwarp::encode_fpdu(ulpdu, true);
}

std::vector<std::byte> with_msn_out_of_order()
{
    iwarp::SegmentHeader send;
    send.msn = 5;
    return fpdu_of(send, pattern(8, 3), true);
}

class TcpLinkGarbage : public ::testing::TestWithParam<GarbageCase> {};

INSTANTIATE_TEST_SUITE_P(
    Each, TcpLinkGarbage,
    ::testing::Values(
        GarbageCase{"LengthBelowAnySegment", [] { return std::vector<std::byte>(64, std::byte{0x00}); },
                    TerminateReason::mpa_stream_lost},
        GarbageCase{"CrcMismatch", with_bad_crc, TerminateReason::mpa_crc_error},
        GarbageCase{"DdpVersion", with_bad_ddp_version, TerminateReason::ddp_untagged_invalid_version},
        GarbageCase{"MsnOutOfOrder", with_msn_out_of_order, TerminateReason::ddp_untagged_msn_range}),
    [](const auto &info) { return std::string(info.param.name); });

TEST_P(TcpLinkGarbage, TheLinkSendsTheTerminateThatNamesItAndEnds)
{
    TcpAcceptor acceptor(loopback("127.0.0.1"));
    RawLink raw = raw_to_link(acceptor, true);
    raw.raw->send(GetParam().bytes());
    MessageSink sink;
    EXPECT_EQ(receive_until(*raw.link, sink, [] { return false; }), TcpLinkState::terminate_sent);
    EXPECT_TRUE(sink.messages.empty());
    EXPECT_EQ(raw.link->terminate_reason(), GetParam().expected);

    std::vector<std::byte> bytes;
    const iwarp::TerminateMessage term = read_terminate(*raw.raw, true, bytes);
    const auto *entry = iwarp::terminate_reason_entry(GetParam().expected);
    ASSERT_NE(entry, nullptr);
    EXPECT_EQ(term.layer, entry->layer);
    EXPECT_EQ(term.etype, entry->etype);
    EXPECT_EQ(term.code, static_cast<std::uint8_t>(std::max<std::int16_t>(entry->code, 0)));
}

// Random bytes (seeded) after a good message: the good one is delivered, then a Terminate
// (whatever the garbage breaks first), never a crash or a hang.
TEST(TcpLink, RandomBytesEndTheLinkWithATerminate)
{
    for (unsigned seed = 1; seed <= 20; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        TcpAcceptor acceptor(loopback("::1"));
        RawLink raw = raw_to_link(acceptor, true);
        iwarp::SegmentHeader send;
        raw.raw->send(fpdu_of(send, pattern(100, seed), true));
        std::mt19937 random(seed);
        std::vector<std::byte> garbage(70000);
        for (auto &b : garbage)
            b = static_cast<std::byte>(random());
        raw.raw->send(garbage);
        MessageSink sink;
        EXPECT_EQ(receive_until(*raw.link, sink, [] { return false; }), TcpLinkState::terminate_sent);
        ASSERT_EQ(sink.messages.size(), 1u);
        EXPECT_EQ(sink.messages[0].bytes, pattern(100, seed));
        std::vector<std::byte> bytes;
        read_terminate(*raw.raw, true, bytes);
    }
}

// The state a link ends in when its raw peer sends `bytes`, then its FIN; and the messages
// delivered before.
std::pair<TcpLinkState, std::size_t> closed_after(const std::vector<std::byte> &bytes, bool crc)
{
    TcpAcceptor acceptor(loopback("127.0.0.1"));
    RawLink raw = raw_to_link(acceptor, crc);
    raw.raw->send(bytes);
    raw.raw->shutdown_write();
    MessageSink sink;
    const TcpLinkState state = receive_until(*raw.link, sink, [] { return false; });
    return {state, sink.messages.size()};
}

TEST(TcpLink, APeerClosingBetweenMessagesIsClosed)
{
    iwarp::SegmentHeader send;
    const auto result = closed_after(fpdu_of(send, pattern(10, 1), false), false);
    EXPECT_EQ(result.first, TcpLinkState::closed);
    EXPECT_EQ(result.second, 1u);
}

TEST(TcpLink, APeerClosingInsideAnFpduIsClosedMidMessage)
{
    iwarp::SegmentHeader send;
    auto fpdu = fpdu_of(send, pattern(500, 1), true);
    fpdu.resize(fpdu.size() / 2);
    const auto result = closed_after(fpdu, true);
    EXPECT_EQ(result.first, TcpLinkState::closed_mid_message);
    EXPECT_EQ(result.second, 0u);
}

TEST(TcpLink, APeerClosingBetweenTheSegmentsOfAMessageIsClosedMidMessage)
{
    iwarp::SegmentHeader write;
    write.opcode = RdmapOpcode::rdma_write;
    write.last = false; // the first of several segments
    const auto result = closed_after(fpdu_of(write, pattern(100, 1), true), true);
    EXPECT_EQ(result.first, TcpLinkState::closed_mid_message);
    EXPECT_EQ(result.second, 0u);
}

TEST(TcpLink, APeerResetIsReset)
{
    TcpAcceptor acceptor(loopback("127.0.0.1"));
    RawLink raw = raw_to_link(acceptor, true);
    raw.raw->reset();
    MessageSink sink;
    EXPECT_EQ(receive_until(*raw.link, sink, [] { return false; }), TcpLinkState::reset);
    EXPECT_EQ(raw.link->error(), ECONNRESET);
    EXPECT_EQ(raw.link->send(RdmapOpcode::send, pattern(10, 1)), LinkSendStatus::closed);
}

// A link whose establishment's bytes are delivered, ready for read_ahead().
RawLink quiet_raw_link(TcpAcceptor &acceptor)
{
    RawLink raw = raw_to_link(acceptor, true);
    MessageSink sink;
    EXPECT_EQ(raw.link->receive(sink), TcpLinkState::open);
    EXPECT_TRUE(sink.messages.empty());
    return raw;
}

// The link's socket holds `bytes` bytes (loopback delivers a send before it returns; bounded).
void await_readable_bytes(const TcpLink &link, int bytes)
{
    const auto deadline = Clock::now() + kStepLimit;
    for (int held = 0; ::ioctl(link.fd(), FIONREAD, &held) == 0 && held < bytes;)
        wait_for({link.fd()}, POLLIN, deadline, "the raw peer's bytes");
}

TEST(TcpLink, AReadAheadOfAnEmptySocketKeepsNothing)
{
    TcpAcceptor acceptor(loopback("127.0.0.1"));
    RawLink raw = quiet_raw_link(acceptor);
    EXPECT_FALSE(raw.link->read_ahead());
    EXPECT_EQ(raw.link->state(), TcpLinkState::open);
}

// What the read ahead took is the next receive()'s, in order, before what it reads itself.
TEST(TcpLink, AReadAheadIsDeliveredByTheNextReceive)
{
    TcpAcceptor acceptor(loopback("127.0.0.1"));
    RawLink raw = quiet_raw_link(acceptor);
    iwarp::SegmentHeader send;
    const auto first = fpdu_of(send, pattern(64, 1), true);
    raw.raw->send(first);
    await_readable_bytes(*raw.link, static_cast<int>(first.size()));
    ASSERT_TRUE(raw.link->read_ahead());
    send.msn = 2;
    raw.raw->send(fpdu_of(send, pattern(64, 2), true));
    MessageSink sink;
    EXPECT_EQ(receive_until(*raw.link, sink, [&] { return sink.messages.size() == 2; }),
              TcpLinkState::open);
    ASSERT_EQ(sink.messages.size(), 2u);
    EXPECT_EQ(sink.messages[0].bytes, pattern(64, 1));
    EXPECT_EQ(sink.messages[1].bytes, pattern(64, 2));
    EXPECT_FALSE(raw.link->read_ahead());
}

// A read ahead that filled its room leaves more in the socket: the receive() reads on, in the
// one call, until a read comes back short.
TEST(TcpLink, AReceiveAfterAFullReadAheadReadsOnUntilAShortRead)
{
    TcpAcceptor acceptor(loopback("127.0.0.1"));
    RawLink raw = quiet_raw_link(acceptor);
    const int room = 1 << 20; // the socket holds all of them at once
    ASSERT_EQ(::setsockopt(raw.link->fd(), SOL_SOCKET, SO_RCVBUF, &room, sizeof room), 0);
    std::vector<std::byte> bytes;
    constexpr std::uint32_t kMessages = 100; // 100 KiB and more, past one 64 KiB read
    for (std::uint32_t i = 1; i <= kMessages; ++i) {
        iwarp::SegmentHeader send;
        send.msn = i;
        const auto fpdu = fpdu_of(send, pattern(1024, i), true);
        bytes.insert(bytes.end(), fpdu.begin(), fpdu.end());
    }
    raw.raw->send(bytes);
    await_readable_bytes(*raw.link, static_cast<int>(bytes.size()));
    ASSERT_TRUE(raw.link->read_ahead());
    MessageSink sink;
    EXPECT_EQ(raw.link->receive(sink), TcpLinkState::open);
    ASSERT_EQ(sink.messages.size(), kMessages);
    EXPECT_EQ(sink.messages.back().bytes, pattern(1024, kMessages));
}

// The stream's end found by a read ahead does not end the link there: the next receive()
// does, as its own read would have (closed between messages; a reset as reset, its errno
// kept although the read ahead took the socket's error).
TEST(TcpLink, AReadAheadThatFindsTheEndLeavesItToReceive)
{
    TcpAcceptor acceptor(loopback("127.0.0.1"));
    RawLink closed = quiet_raw_link(acceptor);
    closed.raw->shutdown_write();
    const auto deadline = Clock::now() + kStepLimit;
    wait_for({closed.link->fd()}, POLLIN, deadline, "the raw peer's FIN");
    ASSERT_TRUE(closed.link->read_ahead());
    EXPECT_EQ(closed.link->state(), TcpLinkState::open);
    MessageSink sink;
    EXPECT_EQ(closed.link->receive(sink), TcpLinkState::closed);

    RawLink reset = quiet_raw_link(acceptor);
    reset.raw->reset();
    wait_for({reset.link->fd()}, POLLIN, deadline, "the raw peer's reset");
    ASSERT_TRUE(reset.link->read_ahead());
    EXPECT_EQ(reset.link->state(), TcpLinkState::open);
    EXPECT_EQ(reset.link->receive(sink), TcpLinkState::reset);
    EXPECT_EQ(reset.link->error(), ECONNRESET);
    EXPECT_FALSE(reset.link->read_ahead()); // ended: nothing more to read
}

} // namespace
