// The validation layer over the raw ABI: silent on a conforming run, and what it reports when
// a consumer breaks the contract (the provider-side rules are proven with the soft provider's
// misbehave knob in scenarios/test_validation_provider.py).
#include "connection_support.hpp"

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

bool reported(const RawAdapter &adapter, const std::string &rule)
{
    for (const auto &v : adapter.session()->violations())
        if (v.rule == rule)
            return true;
    return false;
}

} // namespace

TEST(Validation, EveryRuleHasAnIdASectionAndASummary)
{
    auto rules = ndk::validate::rules();
    ASSERT_GT(rules.size(), 20u);
    for (const auto &rule : rules) {
        EXPECT_NE(std::string(rule.section), "") << rule.id;
        EXPECT_NE(std::string(rule.summary), "") << rule.id;
        EXPECT_EQ(ndk::validate::find_rule(rule.id), &rule);
    }
    EXPECT_EQ(ndk::validate::find_rule("NO-SUCH-RULE"), nullptr);
}

TEST(Validation, ObjectsCreatedAndClosedInlineAndPendingAreSilent)
{
    for (const char *mode : {"create_mode=inline", "create_mode=pending"}) {
        RawAdapter adapter(mode, {2, 0}, "soft", true);
        ASSERT_NE(adapter.session(), nullptr);
        NDK_CQ *cq = adapter.cq(16);
        NDK_PD *pd = adapter.pd();
        NDK_MR *mr = adapter.mr(pd, false);
        NDK_QP *qp = adapter.qp(pd, cq, cq);
        adapter.close_now(qp);
        adapter.close_now(mr);
        adapter.close_now(pd);
        adapter.close_now(cq);
        adapter.close();
        EXPECT_EQ(errors(adapter), std::vector<std::string>{}) << mode;
    }
}

TEST(Validation, DataPathOverTheLayerIsSilentAndContextsComeBackUnchanged)
{
    Pair pair("", "", true);
    ASSERT_TRUE(pair.connect());
    Region sink(pair.server(), pair.b().pd, 256, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    Region source(pair.client(), pair.a().pd, 256, 0);
    NDK_SGE rsge = sink.sge(0, 256);
    ASSERT_STATUS(STATUS_SUCCESS, pair.b().qp->Dispatch->NdkReceive(
                                      pair.b().qp, reinterpret_cast<PVOID>(7), &rsge, 1));
    NDK_SGE ssge = source.sge(0, 100);
    ASSERT_STATUS(STATUS_SUCCESS, pair.a().qp->Dispatch->NdkSend(
                                      pair.a().qp, reinterpret_cast<PVOID>(9), &ssge, 1, 0));
    auto received = pair.poll(pair.b(), 1);
    ASSERT_EQ(received.size(), 1u);
    EXPECT_STATUS(STATUS_SUCCESS, received[0].Status);
    EXPECT_EQ(received[0].RequestContext, reinterpret_cast<PVOID>(7));
    auto sent = pair.poll(pair.a(), 1);
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0].RequestContext, reinterpret_cast<PVOID>(9));
    EXPECT_EQ(errors(pair.client()), std::vector<std::string>{});
    EXPECT_EQ(errors(pair.server()), std::vector<std::string>{});
}

TEST(Validation, ACallOnAClosedCqIsReportedAndNotForwarded)
{
    RawAdapter adapter("", {2, 0}, "soft", true);
    NDK_CQ *cq = adapter.cq(16);
    adapter.close_now(cq);
    // The face stays valid memory (the layer keeps it): the call is caught, not forwarded.
    cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
    NDK_RESULT results[4];
    EXPECT_EQ(cq->Dispatch->NdkGetCqResults(cq, results, 4), 0u);
    EXPECT_TRUE(reported(adapter, "OBJECT-CLOSED-CALL"));
}

// Found by tests/binding/test_state_machine.py: a CQ closed, a new CQ created (the soft
// provider may put it where the closed one was), then the closed CQ passed to NdkCreateQp.  The
// layer forwarded the closed CQ's real pointer, and the provider built the QP on the new CQ.
TEST(Validation, AClosedObjectPassedAsAnArgumentIsReportedAndNotForwarded)
{
    RawAdapter adapter("", {2, 0}, "soft", true);
    NDK_PD *pd = adapter.pd();
    NDK_CQ *closed = adapter.cq(16);
    adapter.close_now(closed);
    NDK_CQ *fresh = adapter.cq(16);
    NDK_QP *qp = nullptr;
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  pd->Dispatch->NdkCreateQp(pd, closed, fresh, nullptr, 16, 16, 4, 4, 0,
                                            Record::create, &adapter.record(), &qp));
    EXPECT_EQ(qp, nullptr);
    EXPECT_TRUE(reported(adapter, "OBJECT-CLOSED-CALL"));
    NDK_SRQ *srq = adapter.srq(pd);
    adapter.close_now(srq);
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  pd->Dispatch->NdkCreateQpWithSrq(pd, fresh, fresh, srq, nullptr, 16, 4, 0,
                                                   Record::create, &adapter.record(), &qp));
    EXPECT_EQ(qp, nullptr);
    size_t closed_calls = 0;
    for (const auto &v : adapter.session()->violations())
        closed_calls += v.rule == "OBJECT-CLOSED-CALL";
    EXPECT_EQ(closed_calls, 2u);
    // The open arguments still work.
    NDK_QP *open_qp = adapter.qp(pd, fresh, fresh);
    ASSERT_NE(open_qp, nullptr);
    adapter.close_now(open_qp);
}

TEST(Validation, PostingPastTheQueueDepthIsReported)
{
    Pair pair("", "", true);
    ASSERT_TRUE(pair.connect(64, 2));
    Region sink(pair.server(), pair.b().pd, 256, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    NDK_SGE rsge = sink.sge(0, 64);
    for (int i = 0; i < 2; ++i)
        ASSERT_STATUS(STATUS_SUCCESS,
                      pair.b().qp->Dispatch->NdkReceive(pair.b().qp, nullptr, &rsge, 1));
    EXPECT_FALSE(reported(pair.server(), "POST-QUEUE-DEPTH"));
    pair.b().qp->Dispatch->NdkReceive(pair.b().qp, nullptr, &rsge, 1);
    EXPECT_TRUE(reported(pair.server(), "POST-QUEUE-DEPTH"));
}

TEST(Validation, AnSgeWithAnotherPdsTokenIsReported)
{
    Pair pair("", "", true);
    ASSERT_TRUE(pair.connect());
    NDK_PD *other = pair.server().pd();
    Region foreign(pair.server(), other, 256, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    NDK_SGE sge = foreign.sge(0, 64);
    pair.b().qp->Dispatch->NdkReceive(pair.b().qp, nullptr, &sge, 1);
    EXPECT_TRUE(reported(pair.server(), "SGE-TOKEN"));
}

TEST(Validation, RearmingFromInsideTheNotificationIsNotAViolation)
{
    Pair pair("", "", true);
    ASSERT_TRUE(pair.connect());
    Region sink(pair.server(), pair.b().pd, 256, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    Region source(pair.client(), pair.a().pd, 256, 0);
    NDK_CQ *cq = pair.b().cq;
    std::atomic<int> rearmed{0};
    pair.b().notify->during = [cq, &rearmed] {
        cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
        ++rearmed;
    };
    cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
    NDK_SGE rsge = sink.sge(0, 64);
    NDK_SGE ssge = source.sge(0, 64);
    for (int i = 0; i < 2; ++i) {
        ASSERT_STATUS(STATUS_SUCCESS,
                      pair.b().qp->Dispatch->NdkReceive(pair.b().qp, nullptr, &rsge, 1));
        ASSERT_STATUS(STATUS_SUCCESS,
                      pair.a().qp->Dispatch->NdkSend(pair.a().qp, nullptr, &ssge, 1, 0));
        // Poll only once the callback's re-arm returned: polling while it arms would be the
        // consumer's own CQ-CONCURRENT-CALL (digest 3.2).
        ASSERT_TRUE(pair.b().notify->wait(i + 1));
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (rearmed.load() < i + 1 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::yield();
        ASSERT_EQ(rearmed.load(), i + 1);
        ASSERT_EQ(pair.poll(pair.b(), 1).size(), 1u);
    }
    EXPECT_EQ(errors(pair.server()), std::vector<std::string>{});
}

// NDK_FN_CREATE_COMPLETION (digest 1.0): a create that returns a status other than PENDING has
// put the object in its out-parameter, and its completion is never called.  The fault layer's
// misbehave out_param_missing_inline returns SUCCESS with the out-parameter left NULL.
TEST(Validation, AnInlineSuccessWithoutTheObjectIsReported)
{
    RawAdapter adapter("create_mode=inline;misbehave=out_param_missing_inline", {2, 0}, "soft",
                       true);
    static std::atomic<int> completions{0};
    NDK_CQ *cq = nullptr;
    NTSTATUS status = adapter.d().NdkCreateCq(
        adapter.get(), 8, ignore_cq_notification, nullptr, nullptr,
        [](PVOID, NTSTATUS, NDK_OBJECT_HEADER *) { ++completions; }, nullptr, &cq);
    EXPECT_STATUS(STATUS_SUCCESS, status);
    EXPECT_EQ(cq, nullptr);
    EXPECT_TRUE(reported(adapter, "CREATE-OUT-PARAM-INLINE"));
    EXPECT_EQ(completions.load(), 0);
}

// NDK_RESULT_EX, and with it NdkGetCqResultsEx, begins at NDKPI 1.2 (digest 2.3, 2.7): a
// consumer that calls it on an adapter opened at 1.1 is told; NdkGetCqResults (1.0) is not.
TEST(Validation, ResultsExOnAnAdapterOpenedAt11IsReported)
{
    RawAdapter adapter("provider_version=1.1", {1, 0}, "soft", true);
    NDK_CQ *cq = adapter.cq(8);
    NDK_RESULT plain[1];
    EXPECT_EQ(cq->Dispatch->NdkGetCqResults(cq, plain, 1), 0u);
    EXPECT_FALSE(reported(adapter, "CQ-RESULTS-EX-VERSION"));
    NDK_RESULT_EX ex[1];
    EXPECT_EQ(cq->Dispatch->NdkGetCqResultsEx(cq, ex, 1), 0u);
    EXPECT_TRUE(reported(adapter, "CQ-RESULTS-EX-VERSION"));
    adapter.close_now(cq);
}
