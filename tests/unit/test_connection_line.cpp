// The line an in-process connection's two ends write on every message
// (core/src/providers/soft/soft_connection_line.hpp): the connection's lock and both ends' queue
// counts in one cache line, the counts moved there from the queues (RequestQueue::place_counts)
// when the connection is established, with what was already posted.
#include "connection_support.hpp"

#include "providers/soft/soft_connection_line.hpp"
#include "providers/soft/soft_request_queue.hpp"

#include <cstdint>
#include <memory>

namespace ndktest {
namespace {

using ndk::soft::ConnectionLine;
using ndk::soft::RequestQueue;

struct Item {
    int value = -1;
    void clear() { value = -1; }
};

void push(RequestQueue<Item> &q, int value)
{
    q.next_slot().value = value;
    q.commit();
}

int pop(RequestQueue<Item> &q)
{
    int value = q.front().value;
    q.pop_front();
    return value;
}

TEST(ConnectionLine, TheLockAndBothEndsCountsAreOneCacheLine)
{
    auto line = std::make_shared<ConnectionLine>(); // as the inproc transport makes it
    auto first = reinterpret_cast<uintptr_t>(line.get());
    EXPECT_EQ(first % 64, 0u);
    for (const void *field : {static_cast<const void *>(&line->mu),
                              static_cast<const void *>(&line->ends[0].receive_head),
                              static_cast<const void *>(&line->ends[1].initiator_count)})
        EXPECT_EQ(reinterpret_cast<uintptr_t>(field) / 64, first / 64);
}

// A queue's head and count moved elsewhere keep their values, and the queue goes on counting
// there, across its growth and around its ring; moved back, it counts in itself again.
TEST(ConnectionLine, QueueCountsPlacedInTheLineCarryWhatWasPosted)
{
    ConnectionLine line;
    RequestQueue<Item> q;
    push(q, 1);
    push(q, 2);
    EXPECT_EQ(pop(q), 1); // the head is off the storage's start
    ConnectionLine::End &end = line.ends[1];
    q.place_counts(&end.receive_head, &end.receive_count);
    EXPECT_EQ(end.receive_head, 1u);
    EXPECT_EQ(end.receive_count, 1u);
    for (int v = 3; v <= 9; ++v) // grows past the first 4 slots
        push(q, v);
    EXPECT_EQ(end.receive_count, 8u);
    EXPECT_EQ(q.size(), 8u);
    for (int v = 2; v <= 5; ++v)
        EXPECT_EQ(pop(q), v);
    EXPECT_EQ(end.receive_count, 4u);
    EXPECT_EQ(line.ends[0].receive_count, 0u); // the other end's counts are untouched
    q.place_counts(nullptr, nullptr);
    push(q, 10);
    EXPECT_EQ(end.receive_count, 4u); // no longer written
    for (int v = 6; v <= 10; ++v)
        EXPECT_EQ(pop(q), v);
    EXPECT_TRUE(q.empty());
}

// Receives posted on both QPs before the connection is established are in their queues'
// counts when the connection moves those into its line, and the first Sends take them.
TEST(ConnectionLine, ReceivesPostedBeforeTheConnectionAreTakenAfterIt)
{
    Pair pair;
    std::unique_ptr<Region> in_a, in_b, out_a, out_b;
    ASSERT_TRUE(pair.connect(64, 16, [&] {
        in_a = std::make_unique<Region>(pair.client(), pair.a().pd, 16,
                                        NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
        in_b = std::make_unique<Region>(pair.server(), pair.b().pd, 16,
                                        NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
        for (ULONG i = 0; i < 2; ++i) {
            NDK_SGE a = in_a->sge(8 * i, 8), b = in_b->sge(8 * i, 8);
            auto context = reinterpret_cast<PVOID>(uintptr_t{i + 1});
            EXPECT_STATUS(STATUS_SUCCESS,
                          pair.a().qp->Dispatch->NdkReceive(pair.a().qp, context, &a, 1));
            EXPECT_STATUS(STATUS_SUCCESS,
                          pair.b().qp->Dispatch->NdkReceive(pair.b().qp, context, &b, 1));
        }
    }));
    out_a = std::make_unique<Region>(pair.client(), pair.a().pd, 8, 0);
    out_b = std::make_unique<Region>(pair.server(), pair.b().pd, 8, 0);
    for (unsigned char n = 1; n <= 2; ++n) {
        out_a->bytes[0] = n;
        out_b->bytes[0] = static_cast<unsigned char>(0x10 + n);
        NDK_SGE a = out_a->sge(0, 8), b = out_b->sge(0, 8);
        ASSERT_STATUS(STATUS_SUCCESS,
                      pair.a().qp->Dispatch->NdkSend(pair.a().qp, nullptr, &a, 1, 0));
        ASSERT_STATUS(STATUS_SUCCESS,
                      pair.b().qp->Dispatch->NdkSend(pair.b().qp, nullptr, &b, 1, 0));
    }
    for (Side *side : {&pair.a(), &pair.b()}) {
        std::vector<NDK_RESULT_EX> results = pair.poll(*side, 4); // two Sends, two Receives
        ASSERT_EQ(results.size(), 4u);
        uintptr_t next_receive = 1;
        for (const NDK_RESULT_EX &r : results) {
            EXPECT_STATUS(STATUS_SUCCESS, r.Status);
            if (r.Type == NdkOperationTypeReceive) {
                EXPECT_EQ(reinterpret_cast<uintptr_t>(r.RequestContext), next_receive++);
            }
        }
        EXPECT_EQ(next_receive, 3u);
    }
    EXPECT_EQ(in_b->bytes[0], 1);
    EXPECT_EQ(in_b->bytes[8], 2);
    EXPECT_EQ(in_a->bytes[0], 0x11);
    EXPECT_EQ(in_a->bytes[8], 0x12);
    // A third Send finds no receive: it waits, and is not lost, until one is posted.
    NDK_SGE a = out_a->sge(0, 8), r = in_b->sge(0, 8);
    out_a->bytes[0] = 3;
    ASSERT_STATUS(STATUS_SUCCESS, pair.a().qp->Dispatch->NdkSend(pair.a().qp, nullptr, &a, 1, 0));
    ASSERT_STATUS(STATUS_SUCCESS,
                  pair.b().qp->Dispatch->NdkReceive(pair.b().qp, nullptr, &r, 1));
    EXPECT_EQ(pair.poll(pair.a(), 1).size(), 1u);
    EXPECT_EQ(pair.poll(pair.b(), 1).size(), 1u);
    EXPECT_EQ(in_b->bytes[0], 3);
}

} // namespace
} // namespace ndktest
