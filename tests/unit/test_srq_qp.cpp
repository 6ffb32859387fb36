// SRQ and QP through the raw C ABI (digest 1.2, 1.6, 1.7): creation limits against
// NDK_ADAPTER_INFO, the receive queues, SRQ arming, flush, and initiator requests on a QP that
// has no connection.
#include "support.hpp"

#include <gtest/gtest.h>

namespace {

using ndktest::RawAdapter;
using ndktest::Record;

// Small limits so "one more than the limit" is easy to say.
const std::string kLimits =
    "max_receive_queue_depth=32;max_initiator_queue_depth=64;max_receive_request_sge=4;"
    "max_initiator_request_sge=6;max_inline_data_size=128;max_srq_depth=100";

struct Base {
    explicit Base(RawAdapter &a)
    {
        cq = a.cq();
        pd = a.pd();
    }
    NDK_CQ *cq = nullptr;
    NDK_PD *pd = nullptr;
};

NTSTATUS create_qp(RawAdapter &a, const Base &b, ULONG rdepth, ULONG idepth, ULONG rsge, ULONG isge,
                   ULONG inline_size)
{
    Record &r = a.record();
    NDK_QP *qp = nullptr;
    return b.pd->Dispatch->NdkCreateQp(b.pd, b.cq, b.cq, nullptr, rdepth, idepth, rsge, isge,
                                       inline_size, Record::create, &r, &qp);
}

NTSTATUS create_srq(RawAdapter &a, NDK_PD *pd, ULONG depth, ULONG sge, ULONG threshold,
                    bool callback = true)
{
    Record &r = a.record();
    NDK_SRQ *srq = nullptr;
    return pd->Dispatch->NdkCreateSrq(pd, depth, sge, threshold,
                                      callback ? ndktest::ignore_srq_notification : nullptr,
                                      nullptr, nullptr, Record::create, &r, &srq);
}

TEST(CreateQp, EachOfTheFiveSizesIsCheckedAgainstItsLimit)
{
    RawAdapter a(kLimits);
    Base b(a);
    ASSERT_TRUE(b.cq && b.pd);
    EXPECT_STATUS(STATUS_SUCCESS, create_qp(a, b, 32, 64, 4, 6, 128)) << "all at the limit";
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create_qp(a, b, 33, 64, 4, 6, 128));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create_qp(a, b, 32, 65, 4, 6, 128));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create_qp(a, b, 32, 64, 5, 6, 128));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create_qp(a, b, 32, 64, 4, 7, 128));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create_qp(a, b, 32, 64, 4, 6, 129));
}

TEST(CreateQp, CqsMustBeLiveCqsOfTheAdapter)
{
    RawAdapter a;
    RawAdapter other;
    Base b(a);
    NDK_CQ *foreign = other.cq();
    NDK_CQ *closed = a.cq();
    ASSERT_TRUE(b.cq && b.pd && foreign && closed);
    a.close_now(closed);
    for (auto [rcq, icq] : {std::pair<NDK_CQ *, NDK_CQ *>{foreign, b.cq},
                            {b.cq, foreign},
                            {closed, b.cq},
                            {nullptr, b.cq},
                            {b.cq, nullptr}}) {
        Record &r = a.record();
        NDK_QP *qp = nullptr;
        EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                      b.pd->Dispatch->NdkCreateQp(b.pd, rcq, icq, nullptr, 4, 4, 1, 1, 0,
                                                  Record::create, &r, &qp));
        EXPECT_EQ(qp, nullptr);
    }
}

TEST(CreateQpWithSrq, ThreeSizesAndALiveSrqOfThePd)
{
    RawAdapter a(kLimits);
    Base b(a);
    ASSERT_TRUE(b.cq && b.pd);
    NDK_SRQ *srq = a.srq(b.pd, 16, 2);
    NDK_PD *other_pd = a.pd();
    ASSERT_TRUE(srq && other_pd);
    NDK_SRQ *other_srq = a.srq(other_pd, 16, 2);
    ASSERT_NE(other_srq, nullptr);
    auto create = [&](NDK_SRQ *s, ULONG idepth, ULONG isge, ULONG inline_size) {
        Record &r = a.record();
        NDK_QP *qp = nullptr;
        return b.pd->Dispatch->NdkCreateQpWithSrq(b.pd, b.cq, b.cq, s, nullptr, idepth, isge,
                                                  inline_size, Record::create, &r, &qp);
    };
    EXPECT_STATUS(STATUS_SUCCESS, create(srq, 64, 6, 128));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create(srq, 65, 6, 128));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create(srq, 64, 7, 128));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create(srq, 64, 6, 129));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create(nullptr, 4, 1, 0));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create(other_srq, 4, 1, 0)) << "SRQ of another PD";
}

TEST(CreateSrq, LimitsAndThreshold)
{
    RawAdapter a(kLimits);
    NDK_PD *pd = a.pd();
    ASSERT_NE(pd, nullptr);
    EXPECT_STATUS(STATUS_SUCCESS, create_srq(a, pd, 100, 4, 100));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create_srq(a, pd, 101, 4, 0)) << "depth > MaxSrqDepth";
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create_srq(a, pd, 100, 5, 0)) << "SGE > max";
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create_srq(a, pd, 0, 4, 0));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create_srq(a, pd, 10, 4, 11)) << "threshold > depth";
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create_srq(a, pd, 10, 4, 1, false))
        << "a threshold needs a notification callback";
    // MaxSrqDepth 0 means no SRQ support (digest 2.1).
    RawAdapter none("max_srq_depth=0");
    NDK_PD *pd_none = none.pd();
    ASSERT_NE(pd_none, nullptr);
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create_srq(none, pd_none, 1, 1, 0));
}

TEST(Srq, ReceiveLimitsAndModify)
{
    RawAdapter a(kLimits);
    NDK_PD *pd = a.pd();
    ASSERT_NE(pd, nullptr);
    NDK_SRQ *srq = a.srq(pd, 4, 2);
    ASSERT_NE(srq, nullptr);
    NDK_SGE sge[3] = {};
    EXPECT_STATUS(STATUS_DATA_OVERRUN, srq->Dispatch->NdkSrqReceive(srq, nullptr, sge, 3));
    for (int i = 0; i < 4; ++i)
        EXPECT_STATUS(STATUS_SUCCESS, srq->Dispatch->NdkSrqReceive(srq, nullptr, sge, 2));
    EXPECT_STATUS(STATUS_NO_MORE_ENTRIES, srq->Dispatch->NdkSrqReceive(srq, nullptr, sge, 1));

    Record &r = a.record();
    auto modify = [&](ULONG depth, ULONG threshold) {
        return srq->Dispatch->NdkModifySrq(srq, depth, threshold, Record::request, &r);
    };
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, modify(101, 0)) << "depth > MaxSrqDepth";
    EXPECT_STATUS(STATUS_BUFFER_OVERFLOW, modify(3, 0)) << "below the receives outstanding";
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, modify(0, 5)) << "threshold above the depth";
    EXPECT_STATUS(STATUS_SUCCESS, modify(8, 0));
    EXPECT_STATUS(STATUS_SUCCESS, srq->Dispatch->NdkSrqReceive(srq, nullptr, sge, 1));
    a.close();
    EXPECT_EQ(r.count(), 0);
}

// Arming with a threshold the queue is already below notifies at once; one notification per
// arm (digest 1.6).
TEST(Srq, ModifyArmsTheLimitNotification)
{
    RawAdapter a("request_mode=pending");
    NDK_PD *pd = a.pd();
    ASSERT_NE(pd, nullptr);
    Record &notify = a.record();
    NDK_SRQ *srq = a.srq(pd, 16, 1, 0, &notify);
    ASSERT_NE(srq, nullptr);
    for (int i = 0; i < 2; ++i)
        ASSERT_STATUS(STATUS_SUCCESS, srq->Dispatch->NdkSrqReceive(srq, nullptr, nullptr, 0));
    Record &above = a.record();
    ASSERT_STATUS(STATUS_PENDING, srq->Dispatch->NdkModifySrq(srq, 0, 2, Record::request, &above));
    ASSERT_TRUE(above.wait());
    a.barrier();
    EXPECT_EQ(notify.count(), 0) << "2 receives are not below a threshold of 2";
    Record &below = a.record();
    ASSERT_STATUS(STATUS_PENDING, srq->Dispatch->NdkModifySrq(srq, 0, 3, Record::request, &below));
    ASSERT_TRUE(below.wait());
    ASSERT_TRUE(notify.wait());
    EXPECT_STATUS(STATUS_SUCCESS, notify.status());
    EXPECT_NE(notify.thread(), std::this_thread::get_id());
    // Disarmed after firing: a modify with threshold 0 keeps it disarmed.
    Record &keep = a.record();
    ASSERT_STATUS(STATUS_PENDING, srq->Dispatch->NdkModifySrq(srq, 0, 0, Record::request, &keep));
    ASSERT_TRUE(keep.wait());
    a.close();
    EXPECT_EQ(notify.count(), 1);
}

TEST(Qp, ReceiveQueueLimitsAndSrqQps)
{
    RawAdapter a;
    Base b(a);
    ASSERT_TRUE(b.cq && b.pd);
    NDK_QP *qp = a.qp(b.pd, b.cq, b.cq, nullptr, 2, 2, 2, 2);
    ASSERT_NE(qp, nullptr);
    NDK_SGE sge[3] = {};
    EXPECT_STATUS(STATUS_DATA_OVERRUN, qp->Dispatch->NdkReceive(qp, nullptr, sge, 3));
    EXPECT_STATUS(STATUS_SUCCESS, qp->Dispatch->NdkReceive(qp, nullptr, sge, 2));
    EXPECT_STATUS(STATUS_SUCCESS, qp->Dispatch->NdkReceive(qp, nullptr, sge, 1));
    EXPECT_STATUS(STATUS_NO_MORE_ENTRIES, qp->Dispatch->NdkReceive(qp, nullptr, sge, 1));
    // A receive queue of depth 0 is allowed (a send-only QP) and always full.
    NDK_QP *send_only = a.qp(b.pd, b.cq, b.cq, nullptr, 0, 2, 0, 2);
    ASSERT_NE(send_only, nullptr);
    EXPECT_STATUS(STATUS_NO_MORE_ENTRIES,
                  send_only->Dispatch->NdkReceive(send_only, nullptr, nullptr, 0));
    NDK_SRQ *srq = a.srq(b.pd);
    ASSERT_NE(srq, nullptr);
    NDK_QP *srq_qp = a.qp_srq(b.pd, b.cq, b.cq, srq);
    ASSERT_NE(srq_qp, nullptr);
    EXPECT_STATUS(STATUS_INVALID_DEVICE_REQUEST,
                  srq_qp->Dispatch->NdkReceive(srq_qp, nullptr, sge, 1))
        << "receives of a QP with an SRQ go to the SRQ";
}

TEST(Qp, FlushCompletesEveryReceiveWithCancelledInOrder)
{
    RawAdapter a;
    NDK_CQ *rcq = a.cq();
    NDK_CQ *icq = a.cq();
    NDK_PD *pd = a.pd();
    ASSERT_TRUE(rcq && icq && pd);
    PVOID qp_context = reinterpret_cast<PVOID>(uintptr_t{0xC0FFEE});
    NDK_QP *qp = a.qp(pd, rcq, icq, qp_context);
    ASSERT_NE(qp, nullptr);
    for (uintptr_t i = 1; i <= 3; ++i)
        ASSERT_STATUS(STATUS_SUCCESS,
                      qp->Dispatch->NdkReceive(qp, reinterpret_cast<PVOID>(i), nullptr, 0));
    qp->Dispatch->NdkFlush(qp);
    NDK_RESULT_EX results[8] = {};
    ASSERT_EQ(rcq->Dispatch->NdkGetCqResultsEx(rcq, results, 8), 3u);
    for (uintptr_t i = 0; i < 3; ++i) {
        EXPECT_STATUS(STATUS_CANCELLED, results[i].Status);
        EXPECT_EQ(results[i].QPContext, qp_context);
        EXPECT_EQ(results[i].RequestContext, reinterpret_cast<PVOID>(i + 1));
        EXPECT_EQ(results[i].Type, NdkOperationTypeReceive);
    }
    EXPECT_EQ(icq->Dispatch->NdkGetCqResultsEx(icq, results, 8), 0u)
        << "nothing on the initiator CQ";
    // Flushed receives are gone: a second flush completes nothing.
    qp->Dispatch->NdkFlush(qp);
    EXPECT_EQ(rcq->Dispatch->NdkGetCqResultsEx(rcq, results, 8), 0u);
    // The queue is usable again after a flush.
    EXPECT_STATUS(STATUS_SUCCESS, qp->Dispatch->NdkReceive(qp, nullptr, nullptr, 0));
}

TEST(Qp, InitiatorRequestsWithoutAConnectionAreConnectionInvalid)
{
    RawAdapter a;
    Base b(a);
    ASSERT_TRUE(b.cq && b.pd);
    NDK_QP *qp = a.qp(b.pd, b.cq, b.cq);
    NDK_MR *mr = a.mr(b.pd, true);
    NDK_MW *mw = a.mw(b.pd);
    ASSERT_TRUE(qp && mr && mw);
    const auto &d = *qp->Dispatch;
    NDK_SGE sge{};
    NDK_LOGICAL_ADDRESS page{};
    EXPECT_STATUS(STATUS_CONNECTION_INVALID, d.NdkSend(qp, nullptr, &sge, 1, 0));
    EXPECT_STATUS(STATUS_CONNECTION_INVALID, d.NdkSendAndInvalidate(qp, nullptr, &sge, 1, 0, 7));
    EXPECT_STATUS(STATUS_CONNECTION_INVALID, d.NdkRead(qp, nullptr, &sge, 1, 0x1000, 7, 0));
    EXPECT_STATUS(STATUS_CONNECTION_INVALID, d.NdkWrite(qp, nullptr, &sge, 1, 0x1000, 7, 0));
    EXPECT_STATUS(STATUS_CONNECTION_INVALID,
                  d.NdkBind(qp, nullptr, mr, mw, reinterpret_cast<PVOID>(0x1000), 16, 0));
    EXPECT_STATUS(STATUS_CONNECTION_INVALID, d.NdkFastRegister(qp, nullptr, mr, 1, &page, 0, 16,
                                                               reinterpret_cast<PVOID>(0x1000), 0));
    EXPECT_STATUS(STATUS_CONNECTION_INVALID, d.NdkInvalidate(qp, nullptr, &mr->Header, 0));
    // An inline failure produces no completion (digest 3.4).
    NDK_RESULT_EX results[4];
    EXPECT_EQ(b.cq->Dispatch->NdkGetCqResultsEx(b.cq, results, 4), 0u);
}

TEST(Qp, CapsCountQpsAndSrqs)
{
    RawAdapter a("max_qp_count=1;max_srq_count=1");
    Base b(a);
    ASSERT_TRUE(b.cq && b.pd);
    NDK_QP *qp = a.qp(b.pd, b.cq, b.cq);
    ASSERT_NE(qp, nullptr);
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, create_qp(a, b, 1, 1, 1, 1, 0));
    ASSERT_NE(a.srq(b.pd), nullptr);
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, create_srq(a, b.pd, 4, 1, 0));
    a.close_now(qp);
    EXPECT_STATUS(STATUS_SUCCESS, create_qp(a, b, 1, 1, 1, 1, 0));
}

} // namespace
