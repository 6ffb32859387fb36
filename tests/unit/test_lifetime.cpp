// Object lifetime (digest 3.1) through the raw C ABI: closing antecedents and parents before
// their successors and children, the order of close completions, requests in flight, the
// blocking adapter close, and "no callback after a close that returned STATUS_SUCCESS".
#include "support.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace {

using ndktest::EventLog;
using ndktest::kTestVa;
using ndktest::MdlChain;
using ndktest::RawAdapter;
using ndktest::Record;

// Entry `a` was logged before entry `b` (both present).
::testing::AssertionResult before(const EventLog &log, const std::string &a, const std::string &b)
{
    long ia = log.index_of(a), ib = log.index_of(b);
    std::string all;
    for (const auto &e : log.entries())
        all += e + " ";
    if (ia < 0 || ib < 0)
        return ::testing::AssertionFailure() << "missing '" << (ia < 0 ? a : b) << "' in: " << all;
    if (ia > ib)
        return ::testing::AssertionFailure() << "'" << a << "' after '" << b << "' in: " << all;
    return ::testing::AssertionSuccess();
}

TEST(Lifetime, ClosingACqWithAQpPendsUntilTheQpIsClosed)
{
    RawAdapter a;
    NDK_CQ *cq = a.cq();
    NDK_PD *pd = a.pd();
    ASSERT_TRUE(cq && pd);
    NDK_QP *qp = a.qp(pd, cq, cq);
    ASSERT_NE(qp, nullptr);
    Record &cq_close = a.record();
    Record &qp_close = a.record();
    ASSERT_STATUS(STATUS_PENDING, ndktest::close_with(cq, cq_close));
    a.barrier();
    a.barrier();
    EXPECT_EQ(cq_close.count(), 0) << "the CQ's close completed while its QP is open";
    // A second close of an object whose close is pending is a consumer error the provider
    // detects (docs/semantics.md DOUBLE-CLOSE); it changes nothing.
    Record &again = a.record();
    EXPECT_STATUS(STATUS_INVALID_DEVICE_STATE, ndktest::close_with(cq, again));
    // The QP's close may finish inline or pend (digest 3.1): in front of the fault layer it
    // pends when the CQ close's completion, which it released, is still being delivered.
    NTSTATUS qp_status = ndktest::close_with(qp, qp_close);
    ASSERT_TRUE(qp_status == STATUS_SUCCESS || qp_status == STATUS_PENDING) << qp_status;
    ASSERT_TRUE(cq_close.wait());
    if (qp_status == STATUS_PENDING) {
        ASSERT_TRUE(qp_close.wait());
    }
    a.close();
    EXPECT_EQ(cq_close.count(), 1);
    EXPECT_EQ(qp_close.count(), qp_status == STATUS_PENDING ? 1 : 0)
        << "a close that returned SUCCESS has no callback; one that pended has exactly one";
    EXPECT_EQ(again.count(), 0);
}

// A close that has to pend but has no completion to call is a dereference: the object goes
// with its last successor (docs/semantics.md CLOSE-NO-COMPLETION).
TEST(Lifetime, ACloseWithoutACompletionIsADereference)
{
    RawAdapter a("max_cq_count=1");
    NDK_CQ *cq = a.cq();
    NDK_PD *pd = a.pd();
    ASSERT_TRUE(cq && pd);
    NDK_QP *qp = a.qp(pd, cq, cq);
    ASSERT_NE(qp, nullptr);
    EXPECT_STATUS(STATUS_PENDING, cq->Dispatch->NdkCloseCq(&cq->Header, nullptr, nullptr));
    a.barrier();
    Record &r = a.record();
    NDK_CQ *second = nullptr;
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES,
                  a.d().NdkCreateCq(a.get(), 16, ndktest::ignore_cq_notification, nullptr, nullptr,
                                    Record::create, &r, &second))
        << "the CQ is still held by its QP";
    a.close_now(qp);
    a.barrier();
    EXPECT_NE(a.cq(), nullptr) << "the CQ went with its last successor";
}

TEST(Lifetime, ClosingAPdPendsUntilEveryChildIsClosed)
{
    RawAdapter a;
    NDK_PD *pd = a.pd();
    ASSERT_NE(pd, nullptr);
    NDK_MR *mr = a.mr(pd, false);
    NDK_MW *mw = a.mw(pd);
    ASSERT_TRUE(mr && mw);
    Record &pd_close = a.record();
    ASSERT_STATUS(STATUS_PENDING, ndktest::close_with(pd, pd_close));
    a.close_now(mr);
    a.barrier();
    a.barrier();
    EXPECT_EQ(pd_close.count(), 0) << "the PD's close completed while its MW is open";
    a.close_now(mw);
    ASSERT_TRUE(pd_close.wait());
    a.close();
    EXPECT_EQ(pd_close.count(), 1);
}

// With several antecedents waiting on one QP (its PD, both CQs, its SRQ) and the PD also
// waiting on the SRQ: every successor's close completion returns before an antecedent's close
// completion starts.
TEST(Lifetime, SuccessorCloseCompletionReturnsBeforeTheAntecedentsStarts)
{
    EventLog log; // declared first: it outlives every callback
    RawAdapter a("close_mode=pending");
    NDK_CQ *rcq = a.cq();
    NDK_CQ *icq = a.cq();
    NDK_PD *pd = a.pd();
    ASSERT_TRUE(rcq && icq && pd);
    NDK_SRQ *srq = a.srq(pd);
    ASSERT_NE(srq, nullptr);
    NDK_QP *qp = a.qp_srq(pd, rcq, icq, srq);
    ASSERT_NE(qp, nullptr);
    Record &pd_close = a.record(&log, "pd");
    Record &rcq_close = a.record(&log, "rcq");
    Record &icq_close = a.record(&log, "icq");
    Record &srq_close = a.record(&log, "srq");
    Record &qp_close = a.record(&log, "qp");
    // A slow successor completion gives an antecedent's completion every chance to overlap.
    qp_close.during = [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); };
    srq_close.during = [] { std::this_thread::sleep_for(std::chrono::milliseconds(5)); };
    ASSERT_STATUS(STATUS_PENDING, ndktest::close_with(pd, pd_close));
    ASSERT_STATUS(STATUS_PENDING, ndktest::close_with(rcq, rcq_close));
    ASSERT_STATUS(STATUS_PENDING, ndktest::close_with(icq, icq_close));
    ASSERT_STATUS(STATUS_PENDING, ndktest::close_with(srq, srq_close));
    ASSERT_STATUS(STATUS_PENDING, ndktest::close_with(qp, qp_close));
    ASSERT_TRUE(pd_close.wait());
    ASSERT_TRUE(rcq_close.wait());
    ASSERT_TRUE(icq_close.wait());
    for (const char *antecedent : {"pd", "rcq", "icq", "srq"})
        EXPECT_TRUE(before(log, "qp:end", antecedent)) << antecedent;
    EXPECT_TRUE(before(log, "srq:end", "pd"));
    a.close();
    for (Record *r : {&pd_close, &rcq_close, &icq_close, &srq_close, &qp_close})
        EXPECT_EQ(r->count(), 1);
}

TEST(Lifetime, CloseModeDecidesInlineOrPendingForAnObjectWithoutSuccessors)
{
    RawAdapter inline_adapter;
    NDK_PD *pd = inline_adapter.pd();
    ASSERT_NE(pd, nullptr);
    Record &r1 = inline_adapter.record();
    EXPECT_STATUS(STATUS_SUCCESS, ndktest::close_with(pd, r1));
    inline_adapter.close();
    EXPECT_EQ(r1.count(), 0);

    RawAdapter pending("close_mode=pending");
    pd = pending.pd();
    ASSERT_NE(pd, nullptr);
    Record &r2 = pending.record();
    EXPECT_STATUS(STATUS_PENDING, ndktest::close_with(pd, r2));
    ASSERT_TRUE(r2.wait());
    EXPECT_NE(r2.thread(), std::this_thread::get_id());
    pending.close();
    EXPECT_EQ(r2.count(), 1);
}

// A close stays pending until the requests in flight on the object have completed, and their
// completions return before the close completion starts (digest 3.1): the fault layer's
// request_mode=pending owes the requests' completions, so a close the provider finished
// inline pends behind them.
TEST(Lifetime, ARequestInFlightMakesTheClosePend)
{
    EventLog log; // declared first: it outlives every callback
    RawAdapter a("request_mode=pending");
    NDK_PD *pd = a.pd();
    NDK_CQ *cq = a.cq();
    ASSERT_TRUE(pd && cq);
    NDK_MR *mr = a.mr(pd, false);
    ASSERT_NE(mr, nullptr);
    MdlChain chain({{kTestVa, NDK_PAGE_SIZE}});
    ndktest::Gate gate; // holds the register's completion, and the layer's queue behind it
    Record &reg = a.record(&log, "register");
    reg.during = [&gate] { gate.wait(); };
    Record &resize = a.record(&log, "resize");
    Record &mr_close = a.record(&log, "mr.close");
    Record &cq_close = a.record(&log, "cq.close");
    ASSERT_STATUS(STATUS_PENDING, mr->Dispatch->NdkRegisterMr(mr, chain.get(), NDK_PAGE_SIZE,
                                                              NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
                                                              Record::request, &reg));
    ASSERT_STATUS(STATUS_PENDING, cq->Dispatch->NdkResizeCq(cq, 128, Record::request, &resize));
    EXPECT_STATUS(STATUS_PENDING, ndktest::close_with(mr, mr_close));
    EXPECT_STATUS(STATUS_PENDING, ndktest::close_with(cq, cq_close));
    gate.open();
    ASSERT_TRUE(mr_close.wait());
    ASSERT_TRUE(cq_close.wait());
    EXPECT_TRUE(before(log, "register:end", "mr.close"));
    EXPECT_TRUE(before(log, "resize:end", "cq.close"));
    a.close();
    EXPECT_EQ(reg.count(), 1);
    EXPECT_EQ(resize.count(), 1);
    EXPECT_EQ(mr_close.count(), 1);
}

// A create completion that closes the MW it receives, then records the create.
struct CloseOnCreate {
    static void create(PVOID context, NTSTATUS status, NDK_OBJECT_HEADER *object)
    {
        auto *self = static_cast<CloseOnCreate *>(context);
        if (status == STATUS_SUCCESS && object != nullptr)
            self->close_status = reinterpret_cast<NDK_MW *>(object)->Dispatch->NdkCloseMw(
                object, Record::close, &self->closed);
        Record::create(&self->done, status, object);
    }
    NTSTATUS close_status = ndktest::kNoStatus; // read after done.wait()
    Record closed;
    Record done;
};

// The one exception to "never close an object while a call on it is outstanding": a consumer
// may close it from inside a completion callback the provider started (digest 3.1).
TEST(Lifetime, ClosingAnObjectFromInsideItsOwnCompletion)
{
    // Declared before the adapter: they outlive every callback.
    CloseOnCreate on_create;
    NTSTATUS close_status = ndktest::kNoStatus;
    EventLog log;
    RawAdapter a("request_mode=pending;create_mode=pending");
    NDK_PD *pd = a.pd();
    ASSERT_NE(pd, nullptr);
    NDK_MR *mr = a.mr(pd, false);
    ASSERT_NE(mr, nullptr);
    // A request completion that closes its MR.
    Record &reg = a.record(&log, "register");
    Record &mr_close = a.record(&log, "mr.close");
    reg.during = [&] { close_status = ndktest::close_with(mr, mr_close); };
    MdlChain chain({{kTestVa, NDK_PAGE_SIZE}});
    ASSERT_STATUS(STATUS_PENDING, mr->Dispatch->NdkRegisterMr(mr, chain.get(), NDK_PAGE_SIZE, 0,
                                                              Record::request, &reg));
    ASSERT_TRUE(reg.wait());
    if (close_status == STATUS_PENDING) {
        ASSERT_TRUE(mr_close.wait());
        EXPECT_TRUE(before(log, "register:end", "mr.close"));
    } else {
        EXPECT_STATUS(STATUS_SUCCESS, close_status);
    }
    // A create completion that closes the object it was given.
    NDK_MW *mw = nullptr;
    ASSERT_STATUS(STATUS_PENDING,
                  pd->Dispatch->NdkCreateMw(pd, CloseOnCreate::create, &on_create, &mw));
    ASSERT_TRUE(on_create.done.wait());
    ASSERT_STATUS(STATUS_SUCCESS, on_create.done.status());
    if (on_create.close_status == STATUS_PENDING)
        EXPECT_TRUE(on_create.closed.wait());
    else
        EXPECT_STATUS(STATUS_SUCCESS, on_create.close_status);
    a.close();
    EXPECT_EQ(reg.count(), 1);
    EXPECT_EQ(mr_close.count(), close_status == STATUS_PENDING ? 1 : 0);
    EXPECT_EQ(on_create.closed.count(), on_create.close_status == STATUS_PENDING ? 1 : 0);
}

// CLOSE_NDK_ADAPTER_HANDLER with objects left open, a close pending on a successor and a
// request in flight: it blocks until every callback has returned, and none comes afterwards.
TEST(Lifetime, AdapterCloseWithObjectsLeftOpenLeavesNoCallbackBehind)
{
    RawAdapter a("request_mode=pending");
    Record &notify = a.record();
    NDK_CQ *cq = a.cq(64, &notify);
    NDK_CQ *left_cq = a.cq();
    NDK_PD *pd = a.pd();
    ASSERT_TRUE(cq && left_cq && pd);
    NDK_SRQ *srq = a.srq(pd);
    NDK_MR *mr = a.mr(pd, false);
    ASSERT_TRUE(srq && mr);
    NDK_QP *qp = a.qp_srq(pd, cq, left_cq, srq);
    ASSERT_NE(qp, nullptr);
    ASSERT_NE(a.listener(), nullptr);
    ASSERT_NE(a.connector(), nullptr);
    ASSERT_NE(a.mw(pd), nullptr);
    Record &cq_close = a.record();
    ASSERT_STATUS(STATUS_PENDING, ndktest::close_with(cq, cq_close)); // waits for the QP
    a.block(); // hold the engine: the request below is still queued when the close starts
    MdlChain chain({{kTestVa, NDK_PAGE_SIZE}});
    Record &reg = a.record();
    ASSERT_STATUS(STATUS_PENDING, mr->Dispatch->NdkRegisterMr(mr, chain.get(), NDK_PAGE_SIZE, 0,
                                                              Record::request, &reg));
    a.close(); // opens the gate, then CloseNDKAdapterHandler
    const int reg_calls = reg.count(), close_calls = cq_close.count(),
              notifications = notify.count();
    // A PENDING return means the completion comes exactly once (digest 1.0).
    EXPECT_EQ(reg_calls, 1);
    EXPECT_EQ(close_calls, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(reg.count(), reg_calls) << "a callback after the adapter close returned";
    EXPECT_EQ(cq_close.count(), close_calls);
    EXPECT_EQ(notify.count(), notifications);
}

// Digest 3.1: "A close stays pending until ... all event callbacks (CQ notification, ...) have
// returned" and "No callback may occur after ... a close that returned STATUS_SUCCESS".  A
// notification the provider has already queued is a started callback.
TEST(Lifetime, NoCqNotificationAfterTheCqCloseReturnedSuccess)
{
    EventLog log; // declared first: it outlives every callback
    RawAdapter a;
    Record &notify = a.record(&log, "notify");
    NDK_CQ *cq = a.cq(64, &notify);
    NDK_PD *pd = a.pd();
    ASSERT_TRUE(cq && pd);
    NDK_QP *qp = a.qp(pd, cq, cq);
    ASSERT_NE(qp, nullptr);
    ndktest::Gate &gate = a.block(); // the notification below stays queued behind this
    cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
    ASSERT_STATUS(STATUS_SUCCESS, qp->Dispatch->NdkReceive(qp, nullptr, nullptr, 0));
    qp->Dispatch->NdkFlush(qp); // a completion on an armed CQ: a notification is queued
    a.close_now(qp);
    Record &cq_close = a.record(&log, "cq.close");
    NTSTATUS status = ndktest::close_with(cq, cq_close);
    log.add(status == STATUS_SUCCESS ? "close returned SUCCESS" : "close returned PENDING");
    gate.open();
    a.barrier();
    a.barrier();
    if (status == STATUS_SUCCESS) {
        EXPECT_EQ(notify.count(), 0) << "the CQ notification ran after NdkCloseCq returned "
                                        "STATUS_SUCCESS";
    } else {
        ASSERT_STATUS(STATUS_PENDING, status);
        ASSERT_TRUE(cq_close.wait());
        if (notify.count() > 0) {
            EXPECT_TRUE(before(log, "notify:end", "cq.close"));
        }
    }
}

TEST(Lifetime, NoSrqNotificationAfterTheSrqCloseReturnedSuccess)
{
    RawAdapter a;
    Record &notify = a.record();
    NDK_PD *pd = a.pd();
    ASSERT_NE(pd, nullptr);
    NDK_SRQ *srq = a.srq(pd, 16, 1, 0, &notify);
    ASSERT_NE(srq, nullptr);
    ndktest::Gate &gate = a.block();
    Record &modify = a.record();
    // Arming above the (empty) queue's count fires the notification at once (digest 1.6).
    ASSERT_STATUS(STATUS_SUCCESS, srq->Dispatch->NdkModifySrq(srq, 0, 1, Record::request, &modify));
    Record &srq_close = a.record();
    NTSTATUS status = ndktest::close_with(srq, srq_close);
    gate.open();
    a.barrier();
    a.barrier();
    if (status == STATUS_SUCCESS) {
        EXPECT_EQ(notify.count(), 0) << "the SRQ notification ran after NdkCloseSrq returned "
                                        "STATUS_SUCCESS";
    } else {
        ASSERT_STATUS(STATUS_PENDING, status);
        EXPECT_TRUE(srq_close.wait());
    }
}

} // namespace
