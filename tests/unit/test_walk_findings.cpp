// Regressions for what the random walker (ndk walk, docs/walk.md) found in the validation
// layer and the soft provider; each test is the walker's shrunk trace, written out by hand.
#include "connection_support.hpp"

#include "ndk/objects.hpp"

#include <thread>

using namespace ndktest;

namespace {

std::vector<std::string> errors(const RawAdapter &adapter)
{
    std::vector<std::string> out;
    for (const auto &v : adapter.session()->violations())
        if (v.severity == ndk::validate::Severity::Error)
            out.push_back(v.rule + " " + v.object + " " + v.call + ": " + v.message);
    return out;
}

std::vector<std::string> errors(const ndk::Adapter &adapter)
{
    std::vector<std::string> out;
    for (const auto &v : adapter.validation()->violations())
        if (v.severity == ndk::validate::Severity::Error)
            out.push_back(v.rule + " " + v.object + " " + v.call + ": " + v.message);
    return out;
}

template <class T>
std::shared_ptr<T> made(const ndk::Call &call)
{
    EXPECT_TRUE(call.wait(std::chrono::seconds(5)));
    EXPECT_STATUS(STATUS_SUCCESS, call.result());
    return std::static_pointer_cast<T>(call.object());
}

} // namespace

// A deregistration that fails leaves the MR registered, so its local token is still the
// consumer's to use: the layer forgot it at the call and reported the next SGE as SGE-TOKEN.
TEST(WalkFindings, AFailedDeregistrationKeepsTheLocalTokenValid)
{
    auto adapter = ndk::Adapter::open(
        "soft", "fail=NdkDeregisterMr STATUS_INSUFFICIENT_RESOURCES inline 1", {2, 0}, true);
    auto pd = made<ndk::Pd>(adapter->create_pd());
    auto cq = made<ndk::Cq>(adapter->create_cq(8));
    auto qp = made<ndk::Qp>(pd->create_qp(cq, cq, nullptr, 4, 4, 1, 1, 0));
    auto mr = made<ndk::Mr>(pd->create_mr(false));
    std::vector<uint8_t> buffer(4096);
    auto reg = mr->register_buffer(buffer.data(), buffer.size(), NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
                                   nullptr);
    ASSERT_TRUE(reg.wait(std::chrono::seconds(5)));
    ASSERT_STATUS(STATUS_SUCCESS, reg.result());
    UINT32 token = mr->get_local_token();
    auto dereg = mr->deregister();
    ASSERT_TRUE(dereg.wait(std::chrono::seconds(5)));
    ASSERT_STATUS(STATUS_INSUFFICIENT_RESOURCES, dereg.result());
    NDK_SGE sge{};
    sge.VirtualAddress = buffer.data();
    sge.Length = 64;
    sge.MemoryRegionToken = token;
    EXPECT_STATUS(STATUS_SUCCESS, qp->receive(nullptr, std::span(&sge, 1)));
    EXPECT_EQ(errors(*adapter), std::vector<std::string>{});
    adapter->close();
}

// An arm made while the provider's notification for the previous arm is queued but not yet
// delivered is a second arm: two notifications then follow two arms, not "a second
// notification for one arm" (CQ-NOTIFY-TWICE, a false report of the layer).
TEST(WalkFindings, ARearmBeforeTheQueuedNotificationArrivesIsItsOwnArm)
{
    auto adapter = ndk::Adapter::open("soft", "progress=manual", {2, 0}, true);
    auto pd = made<ndk::Pd>(adapter->create_pd());
    auto cq = made<ndk::Cq>(adapter->create_cq(8));
    auto qp = made<ndk::Qp>(pd->create_qp(cq, cq, nullptr, 4, 4, 1, 1, 0));
    auto mr = made<ndk::Mr>(pd->create_mr(false));
    std::vector<uint8_t> buffer(4096);
    auto reg = mr->register_buffer(buffer.data(), buffer.size(), NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
                                   nullptr);
    std::string reply;
    while (!reg.done())
        adapter->set_knob("step", "64", reply);
    NDK_SGE sge{};
    sge.VirtualAddress = buffer.data();
    sge.Length = 64;
    sge.MemoryRegionToken = mr->get_local_token();
    cq->arm(NDK_CQ_NOTIFY_SOLICITED);
    ASSERT_STATUS(STATUS_SUCCESS, qp->receive(nullptr, std::span(&sge, 1)));
    sge.VirtualAddress = buffer.data() + 64;
    ASSERT_STATUS(STATUS_SUCCESS, qp->receive(nullptr, std::span(&sge, 1)));
    qp->flush(); // two error completions: the first satisfies the arm, its callback is queued
    cq->arm(NDK_CQ_NOTIFY_ANY); // the second completion arrived since: satisfied at once
    for (int i = 0; i < 8; ++i)
        adapter->set_knob("step", "64", reply);
    int notifications = 0;
    while (cq->events().notifications.pop(std::chrono::milliseconds(100)))
        ++notifications;
    EXPECT_EQ(notifications, 2);
    EXPECT_EQ(errors(*adapter), std::vector<std::string>{});
    adapter->close();
}

// A CQ whose interval moderation timer fires while its last QP closes (the CQ's close
// completion queued just before the timer's notification) must not call back: the callback
// would follow the close completion (CALLBACK-AFTER-CLOSE) and release a dependent of a
// destroyed object.  A race by nature: the rounds sweep the QP's close across the timer.
// Raw ABI: the walker found it through the consumer API, which is being reworked.
TEST(WalkFindings, AModerationTimerRacingTheCloseCompletionDoesNotCallBack)
{
    RawAdapter adapter("", {2, 0}, "soft", true);
    NDK_PD *pd = adapter.pd();
    Region sink(adapter, pd, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    NDK_SGE sge = sink.sge(0, 64);
    for (int round = 0; round < 1500; ++round) {
        Record &notify = adapter.record();
        NDK_CQ *cq = adapter.cq(8, &notify);
        NDK_QP *qp = adapter.qp(pd, cq, cq);
        ASSERT_TRUE(cq && qp);
        ASSERT_STATUS(STATUS_SUCCESS,
                      cq->Dispatch->NdkControlCqInterruptModeration(cq, 200, 1000));
        cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
        ASSERT_STATUS(STATUS_SUCCESS, qp->Dispatch->NdkReceive(qp, nullptr, &sge, 1));
        qp->Dispatch->NdkFlush(qp); // a completion: moderation holds it, a 200 us timer runs
        Record &cq_closed = adapter.record();
        ASSERT_STATUS(STATUS_PENDING,
                      cq->Dispatch->NdkCloseCq(&cq->Header, Record::close, &cq_closed)); // the QP is open
        auto start = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - start <
               std::chrono::microseconds(150 + round % 100))
            ;
        Record &qp_closed = adapter.record();
        if (qp->Dispatch->NdkCloseQp(&qp->Header, Record::close, &qp_closed) == STATUS_PENDING) {
            ASSERT_TRUE(qp_closed.wait());
        }
        ASSERT_TRUE(cq_closed.wait()); // queued about when the timer fires
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(errors(adapter), std::vector<std::string>{});
}

// A CQ's moderation timer that fires after the CQ was closed and destroyed, while another
// object lives at its address: the soft provider took that object for the CQ and called
// through its memory (the walker's crash in NdkSrqNotificationCallback / a CQ callback with a
// garbage pointer).  The rounds free CQs with a timer pending and fill the memory with SRQs and
// CQs of their own; a crash or a violation fails the test.  A smoke test: the allocator does
// not reliably hand a freed CQ's memory to another type here; the walker hit it within 2M
// operations (ndk_walk run --seed 12, or 15, --seconds 10, before the fix).
TEST(WalkFindings, AModerationTimerOutlivingItsCqTouchesNoOtherObject)
{
    RawAdapter adapter("", {2, 0}, "soft", true);
    NDK_PD *pd = adapter.pd();
    Region sink(adapter, pd, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    NDK_SGE sge = sink.sge(0, 64);
    for (int round = 0; round < 300; ++round) {
        NDK_CQ *cq = adapter.cq(8, &adapter.record());
        NDK_QP *qp = adapter.qp(pd, cq, cq);
        ASSERT_TRUE(cq && qp);
        ASSERT_STATUS(STATUS_SUCCESS,
                      cq->Dispatch->NdkControlCqInterruptModeration(cq, 100 + round % 200, 1000));
        cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
        ASSERT_STATUS(STATUS_SUCCESS, qp->Dispatch->NdkReceive(qp, nullptr, &sge, 1));
        qp->Dispatch->NdkFlush(qp); // the timer runs
        // A close may pend while the CQ's notification callback runs (digest 3.1): waited for.
        adapter.close_now(qp);
        adapter.close_now(cq);
        // new objects, likely at the freed addresses, with callbacks of their own
        NDK_SRQ *srq = adapter.srq(pd, 8, 1, 0, &adapter.record());
        NDK_CQ *other = adapter.cq(8, &adapter.record());
        ASSERT_TRUE(srq && other);
        ASSERT_STATUS(STATUS_SUCCESS,
                      other->Dispatch->NdkControlCqInterruptModeration(other, 100000, 1000));
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        adapter.close_now(srq);
        adapter.close_now(other);
    }
    EXPECT_EQ(errors(adapter), std::vector<std::string>{});
}
