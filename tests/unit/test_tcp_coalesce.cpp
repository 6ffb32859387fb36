// How many system calls the TCP link makes for what goes out and comes in at one moment
// (core/src/providers/soft/tcp/tcp_link.*, tcp_stream.*; docs/performance.md, soft:tcp): a
// Send and the Read Request that fences it written together and arriving in order; what a sink
// sends while the link takes in one read held until the read's segments are all delivered,
// then gone at once, small answers together and a large message at once behind them; and a
// receive for an arrival without hang-up stopping after the read that emptied the socket.
#include "tcp_link_support.hpp"

#include <gtest/gtest.h>

#include <sys/ioctl.h>

namespace {

using namespace ndk::soft::tcp;
using namespace ndk::soft::tcp::test_support;
namespace iwarp = ndk::soft::iwarp;
using iwarp::RdmapOpcode;

// A Send and its fence are one write: both in the socket when the call returns, and the peer
// takes the Send, then the Read Request, each with its queue's first MSN (RFC 5041 5.1).
TEST(TcpLinkCoalesce, ASendAndItsFenceGoTogetherAndArriveInOrder)
{
    LinkPair pair = establish_pair("127.0.0.1");
    const auto body = pattern(64, 3);
    const std::span<const std::byte> piece(body);
    const iwarp::ReadRequest fence{0x51, 0, 0, 0, 0};
    const std::uint64_t before = pair.active->tally().written;
    ASSERT_EQ(pair.active->send_pieces(RdmapOpcode::send, std::span(&piece, 1), 0, &fence),
              LinkSendStatus::sent);
    EXPECT_EQ(pair.active->queued(), 0u);
    EXPECT_GT(pair.active->tally().written, before);

    MessageSink sink;
    receive_until(*pair.passive, sink, [&] { return sink.messages.size() == 2; });
    ASSERT_EQ(sink.messages.size(), 2u);
    EXPECT_EQ(sink.messages[0].opcode, RdmapOpcode::send);
    EXPECT_EQ(sink.messages[0].bytes, body);
    EXPECT_EQ(sink.messages[0].msn, 1u);
    EXPECT_EQ(sink.messages[1].opcode, RdmapOpcode::read_request);
    EXPECT_EQ(sink.messages[1].read_request, fence);
    EXPECT_EQ(sink.messages[1].msn, 1u);
}

// The same for a Write: the Write's bytes, then the fence (queue 1's first MSN).
TEST(TcpLinkCoalesce, AWriteAndItsFenceArriveInOrder)
{
    LinkPair pair = establish_pair("::1");
    const auto body = pattern(5000, 4);
    const std::span<const std::byte> piece(body);
    const iwarp::ReadRequest fence{0x52, 0, 0, 0, 0};
    ASSERT_EQ(pair.active->write_pieces(0x77, 0x100, std::span(&piece, 1), &fence),
              LinkSendStatus::sent);
    MessageSink sink;
    receive_until(*pair.passive, sink, [&] { return sink.messages.size() == 2; });
    ASSERT_EQ(sink.messages.size(), 2u);
    EXPECT_EQ(sink.messages[0].opcode, RdmapOpcode::rdma_write);
    EXPECT_EQ(sink.messages[0].bytes, body);
    EXPECT_EQ(sink.messages[0].stag, 0x77u);
    EXPECT_EQ(sink.messages[1].read_request, fence);
    EXPECT_EQ(sink.messages[1].msn, 1u);
}

// A sink that answers each Read Request with a Read Response of `answer_size` bytes, and
// notes what the link had queued and written just after each answer.
// Wait until everything the active side wrote is in the passive side's socket, unread.
void all_written_in_the_socket(LinkPair &pair, const char *what)
{
    const auto deadline = Clock::now() + kStepLimit;
    for (;;) {
        int unread = 0;
        ASSERT_EQ(::ioctl(pair.passive->fd(), FIONREAD, &unread), 0);
        if (static_cast<std::uint64_t>(unread) ==
            pair.active->tally().written - pair.passive->tally().read)
            return;
        wait_for({pair.passive->fd()}, POLLIN, deadline, what);
    }
}

class AnsweringSink final : public SegmentSink {
public:
    AnsweringSink(TcpLink &link, std::size_t answer_size) : link_(link), answer_(pattern(answer_size, 9)) {}

    void segment(const InboundSegment &segment) override
    {
        if (!segment.read_request)
            return;
        ASSERT_NE(link_.read_response(segment.read_request->sink_stag, 0, answer_),
                  LinkSendStatus::closed);
        queued_after.push_back(link_.queued());
        written_after.push_back(link_.tally().written);
    }

    std::vector<std::size_t> queued_after;
    std::vector<std::uint64_t> written_after;

private:
    TcpLink &link_;
    std::vector<std::byte> answer_;
};

// A spinning consumer's receive (TcpLink::hold_answers(), tcp_progress.hpp): the answer to
// the peer's fence stays held after the delivery, and goes in one write with the next
// message the consumer sends (its pong), Read Response first; without a send,
// release_answers() writes it.
void fence_in_the_socket(LinkPair &pair, std::uint32_t stag)
{
    const iwarp::ReadRequest fence{stag, 0, 0, 0, 0};
    ASSERT_EQ(pair.active->read_request(fence), LinkSendStatus::sent);
    all_written_in_the_socket(pair, "the Read Request");
}

// The passive side receives a fence as a spinning consumer does: its answer held, unwritten.
void receive_holding_the_answer(LinkPair &pair, AnsweringSink &answering, std::uint32_t stag)
{
    fence_in_the_socket(pair, stag);
    const std::uint64_t before = pair.passive->tally().written;
    pair.passive->arrival_reported(false);
    pair.passive->hold_answers();
    ASSERT_EQ(pair.passive->receive(answering), TcpLinkState::open);
    ASSERT_EQ(answering.queued_after.size(), 1u);
    EXPECT_EQ(pair.passive->tally().written, before) << "the answer went at the delivery's end";
    EXPECT_GT(pair.passive->queued(), 0u);
}

TEST(TcpLinkCoalesce, AnAnswerHeldForAConsumerGoesWithItsNextSend)
{
    LinkPair pair = establish_pair("127.0.0.1");
    const std::uint64_t before = pair.passive->tally().written;
    AnsweringSink answering(*pair.passive, 0);
    receive_holding_the_answer(pair, answering, 7);
    const std::size_t held = pair.passive->queued();

    const auto pong = pattern(64, 5);
    ASSERT_EQ(pair.passive->send(RdmapOpcode::send, pong), LinkSendStatus::sent);
    EXPECT_EQ(pair.passive->queued(), 0u);
    EXPECT_GT(pair.passive->tally().written - before, held);

    MessageSink at_active;
    receive_until(*pair.active, at_active, [&] { return at_active.messages.size() == 2; });
    ASSERT_EQ(at_active.messages.size(), 2u);
    EXPECT_EQ(at_active.messages[0].opcode, RdmapOpcode::read_response);
    EXPECT_EQ(at_active.messages[0].stag, 7u);
    EXPECT_EQ(at_active.messages[1].opcode, RdmapOpcode::send);
    EXPECT_EQ(at_active.messages[1].bytes, pong);
}

TEST(TcpLinkCoalesce, AnAnswerHeldForAConsumerGoesAtItsRelease)
{
    LinkPair pair = establish_pair("127.0.0.1");
    AnsweringSink answering(*pair.passive, 0);
    receive_holding_the_answer(pair, answering, 8);
    pair.passive->release_answers();
    EXPECT_EQ(pair.passive->queued(), 0u);

    MessageSink at_active;
    receive_until(*pair.active, at_active, [&] { return at_active.messages.size() == 1; });
    ASSERT_EQ(at_active.messages.size(), 1u);
    EXPECT_EQ(at_active.messages[0].opcode, RdmapOpcode::read_response);
    EXPECT_EQ(at_active.messages[0].stag, 8u);
    // The next receive, not a consumer's, holds nothing.
    fence_in_the_socket(pair, 9);
    const std::uint64_t second = pair.passive->tally().written;
    ASSERT_EQ(pair.passive->receive(answering), TcpLinkState::open);
    EXPECT_EQ(pair.passive->queued(), 0u);
    EXPECT_GT(pair.passive->tally().written, second);
}

// Three fences in the socket at once: their small answers wait while the read's segments are
// delivered, each behind the last, and leave together once it has been: nothing written
// before, all of it after, in order.
TEST(TcpLinkCoalesce, SmallAnswersSentWhileAReadIsDeliveredLeaveTogetherAfterIt)
{
    LinkPair pair = establish_pair("127.0.0.1");
    for (std::uint32_t stag = 1; stag <= 3; ++stag) {
        const iwarp::ReadRequest fence{stag, 0, 0, 0, 0};
        ASSERT_EQ(pair.active->read_request(fence), LinkSendStatus::sent);
    }
    // All three in the passive side's socket before it reads: one read takes them.
    all_written_in_the_socket(pair, "the three Read Requests");
    const std::uint64_t before = pair.passive->tally().written;
    AnsweringSink answering(*pair.passive, 64);
    receive_until(*pair.passive, answering, [&] { return answering.queued_after.size() == 3; });
    ASSERT_EQ(answering.queued_after.size(), 3u);
    EXPECT_GT(answering.queued_after[0], 0u);
    EXPECT_GT(answering.queued_after[1], answering.queued_after[0]);
    EXPECT_GT(answering.queued_after[2], answering.queued_after[1]);
    for (const std::uint64_t written : answering.written_after)
        EXPECT_EQ(written, before);
    EXPECT_EQ(pair.passive->queued(), 0u);
    EXPECT_EQ(pair.passive->tally().written - before, answering.queued_after[2]);

    MessageSink at_active;
    receive_until(*pair.active, at_active, [&] { return at_active.messages.size() == 3; });
    ASSERT_EQ(at_active.messages.size(), 3u);
    for (std::uint32_t i = 0; i < 3; ++i) {
        EXPECT_EQ(at_active.messages[i].opcode, RdmapOpcode::read_response);
        EXPECT_EQ(at_active.messages[i].stag, i + 1);
        EXPECT_EQ(at_active.messages[i].bytes, pattern(64, 9));
    }
}

// An answer past the cork's limit does not wait: it goes at once, with whatever waited before
// it, so that a bulk transfer sent from the receive path is not copied to be held.
TEST(TcpLinkCoalesce, ALargeAnswerGoesAtOnce)
{
    LinkPair pair = establish_pair("127.0.0.1");
    const iwarp::ReadRequest read{0x9, 0, 256 << 10, 0, 0};
    ASSERT_EQ(pair.active->read_request(read), LinkSendStatus::sent);
    const std::uint64_t before = pair.passive->tally().written;
    AnsweringSink answering(*pair.passive, 256 << 10);
    receive_until(*pair.passive, answering, [&] { return answering.written_after.size() == 1; });
    ASSERT_EQ(answering.written_after.size(), 1u);
    EXPECT_GT(answering.written_after[0], before);

    MessageSink at_active;
    receive_until(*pair.active, at_active, [&] { return at_active.messages.size() == 1; },
                  pair.passive.get());
    ASSERT_EQ(at_active.messages.size(), 1u);
    EXPECT_EQ(at_active.messages[0].bytes, pattern(256 << 10, 9));
}

// The peer's message and its FIN both in the socket.  A receive for an arrival reported
// without hang-up takes them in one read, which leaves the socket empty but for the FIN, and
// stops there: the link stays open (the FIN's own event, a hang-up, follows).  A receive for
// a hang-up reads on to the end.
TEST(TcpLinkCoalesce, AnArrivalReadsOnceAndAHangUpReadsToTheEnd)
{
    LinkPair pair = establish_pair("127.0.0.1");
    ASSERT_EQ(pair.active->send(RdmapOpcode::send, pattern(100, 2)), LinkSendStatus::sent);
    pair.active->close();
    const auto deadline = Clock::now() + kStepLimit;
    for (;;) {
        pollfd p{pair.passive->fd(), POLLRDHUP, 0};
        if (::poll(&p, 1, 0) > 0 && (p.revents & POLLRDHUP) != 0)
            break;
        wait_for({pair.passive->fd()}, POLLRDHUP, deadline, "the peer's FIN");
    }
    MessageSink sink;
    pair.passive->arrival_reported(false);
    EXPECT_EQ(pair.passive->receive(sink), TcpLinkState::open);
    ASSERT_EQ(sink.messages.size(), 1u);
    EXPECT_EQ(sink.messages[0].bytes, pattern(100, 2));
    EXPECT_FALSE(pair.passive->tally().eof);

    pair.passive->arrival_reported(true);
    EXPECT_EQ(pair.passive->receive(sink), TcpLinkState::closed);
    EXPECT_TRUE(pair.passive->tally().eof);
    EXPECT_EQ(sink.messages.size(), 1u);
}

} // namespace
