// Both ends of one in-process connection driven by their own threads, as ndk_perf send_lat
// --threads drives them: each side's CQ is pushed by its own thread (its Sends) and by the
// peer's (its Receives), with no lock of the CQ's own (one connection: soft_cq_producers.hpp),
// and polled by its thread with no lock (soft_cq_ring.hpp).  Every message arrives once, in
// order, with its bytes (run under TSan by the tsan tree's unit label).
#include "connection_support.hpp"

#include <cstring>
#include <thread>

namespace ndktest {
namespace {

constexpr uint64_t kRounds = 2000;

// One side of the ping-pong: its buffers, what it has seen of its CQ, and its checks.
struct Player {
    Side &side;
    Region out, in;
    uint64_t sends_done = 0, received = 0;

    Player(RawAdapter &adapter, Side &s)
        : side(s), out(adapter, s.pd, 8, 0), in(adapter, s.pd, 8, NDK_MR_FLAG_ALLOW_LOCAL_WRITE)
    {
    }

    NTSTATUS post_receive(uint64_t n)
    {
        NDK_SGE sge = in.sge(0, 8);
        return side.qp->Dispatch->NdkReceive(side.qp, reinterpret_cast<PVOID>(n), &sge, 1);
    }
    NTSTATUS send(uint64_t n)
    {
        std::memcpy(out.bytes.data(), &n, sizeof n);
        NDK_SGE sge = out.sge(0, 8);
        return side.qp->Dispatch->NdkSend(side.qp, reinterpret_cast<PVOID>(n), &sge, 1, 0);
    }
    // Poll until message `n` arrived; false on anything out of order or failed.
    bool await(uint64_t n)
    {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (received <= n) {
            NDK_RESULT_EX r[4];
            ULONG got = side.cq->Dispatch->NdkGetCqResultsEx(side.cq, r, 4);
            for (ULONG i = 0; i < got; ++i) {
                auto context = reinterpret_cast<uint64_t>(r[i].RequestContext);
                if (r[i].Status != STATUS_SUCCESS) {
                    ADD_FAILURE() << "completion " << context << " failed";
                    return false;
                }
                uint64_t &expected = r[i].Type == NdkOperationTypeSend ? sends_done : received;
                if (context != expected) {
                    ADD_FAILURE() << "completion " << context << " where " << expected
                                  << " was next";
                    return false;
                }
                if (r[i].Type == NdkOperationTypeReceive) {
                    uint64_t carried = 0;
                    std::memcpy(&carried, in.bytes.data(), sizeof carried);
                    if (carried != context) {
                        ADD_FAILURE() << "message " << context << " carried " << carried;
                        return false;
                    }
                }
                ++expected;
            }
            if (got == 0 && std::chrono::steady_clock::now() > deadline) {
                ADD_FAILURE() << "message " << n << " never arrived";
                return false;
            }
        }
        return true;
    }
};

TEST(TwoThreadPingPong, EveryMessageArrivesOnceInOrderOnBothSides)
{
    Pair pair;
    ASSERT_TRUE(pair.connect());
    Player ping(pair.client(), pair.a()), pong(pair.server(), pair.b());
    ASSERT_STATUS(STATUS_SUCCESS, ping.post_receive(0));
    ASSERT_STATUS(STATUS_SUCCESS, pong.post_receive(0));
    // A receive is always posted before the peer can send to it: each side posts the next
    // one before it answers the message it got.
    std::thread pong_thread([&] {
        for (uint64_t n = 0; n < kRounds; ++n) {
            if (!pong.await(n))
                return;
            EXPECT_STATUS(STATUS_SUCCESS, pong.post_receive(n + 1));
            EXPECT_STATUS(STATUS_SUCCESS, pong.send(n));
        }
    });
    for (uint64_t n = 0; n < kRounds; ++n) { // EXPECT, not ASSERT: the pong thread is joined
        NTSTATUS sent = ping.send(n);
        EXPECT_STATUS(STATUS_SUCCESS, sent);
        if (sent != STATUS_SUCCESS || !ping.await(n))
            break;
        EXPECT_STATUS(STATUS_SUCCESS, ping.post_receive(n + 1));
    }
    pong_thread.join();
    EXPECT_EQ(ping.received, kRounds);
    EXPECT_EQ(pong.received, kRounds);
}

} // namespace
} // namespace ndktest
