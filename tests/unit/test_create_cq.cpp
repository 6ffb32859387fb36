// The raw C ABI's create contract (digest 1.0) for every create function, then the adapter
// and CQ functions (digest 1.1, 1.3): QueryAdapterInfo sizing, CreateCq limits, interrupt
// moderation, resize, arming, and the knobs that shape creation (injected failures, caps,
// completion modes with a seed).
#include "support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace {

using ndktest::kWait;
using ndktest::RawAdapter;
using ndktest::Record;

template <class T>
T *sentinel()
{
    return reinterpret_cast<T *>(uintptr_t{0xDEAD0000});
}

NTSTATUS setup_failed()
{
    ADD_FAILURE() << "could not create the objects this create needs";
    return ndktest::kNoStatus;
}

// Calls one create function of the raw ABI with `r` as its completion.  The objects it needs
// first (a PD, a CQ, ...) come from the adapter's helpers.  `*out` must hold the sentinel.
NTSTATUS create_one(RawAdapter &a, const std::string &kind, Record &r, void **out)
{
    auto cb = Record::create;
    if (kind == "Cq")
        return a.d().NdkCreateCq(a.get(), 16, ndktest::ignore_cq_notification, nullptr, nullptr, cb,
                                 &r, reinterpret_cast<NDK_CQ **>(out));
    if (kind == "Pd")
        return a.d().NdkCreatePd(a.get(), cb, &r, reinterpret_cast<NDK_PD **>(out));
    if (kind == "Connector")
        return a.d().NdkCreateConnector(a.get(), cb, &r, reinterpret_cast<NDK_CONNECTOR **>(out));
    if (kind == "Listener")
        return a.d().NdkCreateListener(a.get(), ndktest::ignore_connect_event, nullptr, cb, &r,
                                       reinterpret_cast<NDK_LISTENER **>(out));
    if (kind == "SharedEndpoint") {
        sockaddr_in6 any{};
        any.sin6_family = AF_INET6;
        return a.d().NdkCreateSharedEndpoint(a.get(), reinterpret_cast<SOCKADDR *>(&any),
                                             sizeof any, cb, &r,
                                             reinterpret_cast<NDK_SHARED_ENDPOINT **>(out));
    }
    NDK_PD *pd = a.pd();
    if (pd == nullptr)
        return setup_failed();
    if (kind == "Mr" || kind == "FastMr")
        return pd->Dispatch->NdkCreateMr(pd, kind == "FastMr", cb, &r,
                                         reinterpret_cast<NDK_MR **>(out));
    if (kind == "Mw")
        return pd->Dispatch->NdkCreateMw(pd, cb, &r, reinterpret_cast<NDK_MW **>(out));
    if (kind == "Srq")
        return pd->Dispatch->NdkCreateSrq(pd, 16, 2, 0, ndktest::ignore_srq_notification, nullptr,
                                          nullptr, cb, &r, reinterpret_cast<NDK_SRQ **>(out));
    NDK_CQ *cq = a.cq();
    if (cq == nullptr)
        return setup_failed();
    if (kind == "Qp")
        return pd->Dispatch->NdkCreateQp(pd, cq, cq, nullptr, 16, 16, 2, 2, 0, cb, &r,
                                         reinterpret_cast<NDK_QP **>(out));
    if (kind == "QpWithSrq") {
        NDK_SRQ *srq = a.srq(pd);
        if (srq == nullptr)
            return setup_failed();
        return pd->Dispatch->NdkCreateQpWithSrq(pd, cq, cq, srq, nullptr, 16, 2, 0, cb, &r,
                                                reinterpret_cast<NDK_QP **>(out));
    }
    ADD_FAILURE() << "unknown kind " << kind;
    return ndktest::kNoStatus;
}

const std::map<std::string, NDK_OBJECT_TYPE> kTypes = {
    {"Cq", NdkObjectTypeCq},
    {"Pd", NdkObjectTypePd},
    {"Mr", NdkObjectTypeMr},
    {"FastMr", NdkObjectTypeMr},
    {"Mw", NdkObjectTypeMw},
    {"Srq", NdkObjectTypeSrq},
    {"Qp", NdkObjectTypeQp},
    {"QpWithSrq", NdkObjectTypeQp},
    {"Connector", NdkObjectTypeConnector},
    {"Listener", NdkObjectTypeListener},
    {"SharedEndpoint", NdkObjectTypeSharedEndpoint},
};

const char *const kKinds[] = {
    "Cq",        "Pd",        "Mr",       "FastMr",        "Mw", "Srq", "Qp",
    "QpWithSrq", "Connector", "Listener", "SharedEndpoint"};

// Any return but PENDING is inline: the object comes back through the out-parameter and the
// completion is never called (digest 1.0).
TEST(CreateContract, InlineSuccessWritesTheOutParameterAndNeverCallsTheCompletion)
{
    for (const std::string kind : kKinds) {
        SCOPED_TRACE(kind);
        RawAdapter a;
        Record &r = a.record();
        void *out = sentinel<void>();
        ASSERT_STATUS(STATUS_SUCCESS, create_one(a, kind, r, &out));
        ASSERT_NE(out, sentinel<void>());
        ASSERT_NE(out, nullptr);
        EXPECT_EQ(static_cast<NDK_OBJECT_HEADER *>(out)->ObjectType, kTypes.at(kind));
        a.close(); // blocking: every callback that was ever coming has come
        EXPECT_EQ(r.count(), 0);
    }
}

// PENDING: the out-parameter is untouched and the completion comes exactly once, from a
// thread other than the caller's, with the object.
TEST(CreateContract, PendingLeavesTheOutParameterAndCompletesOnceOnAnotherThread)
{
    for (const std::string kind : kKinds) {
        SCOPED_TRACE(kind);
        RawAdapter a("create_mode=pending");
        Record &r = a.record();
        void *out = sentinel<void>();
        ASSERT_STATUS(STATUS_PENDING, create_one(a, kind, r, &out));
        ASSERT_TRUE(r.wait());
        EXPECT_EQ(out, sentinel<void>());
        EXPECT_STATUS(STATUS_SUCCESS, r.status());
        ASSERT_NE(r.object(), nullptr);
        EXPECT_EQ(r.object()->ObjectType, kTypes.at(kind));
        EXPECT_NE(r.thread(), std::this_thread::get_id());
        a.close();
        EXPECT_EQ(r.count(), 1);
        EXPECT_EQ(out, sentinel<void>());
    }
}

// An injected asynchronous failure: PENDING, then one completion with the status and no
// object; the out-parameter stays untouched.
TEST(CreateContract, AsyncFailureCompletesOnceWithoutAnObject)
{
    for (const std::string kind : kKinds) {
        SCOPED_TRACE(kind);
        RawAdapter a;
        const std::string function = kind == "FastMr" ? "NdkCreateMr" : "NdkCreate" + kind;
        ASSERT_STATUS(STATUS_SUCCESS,
                      a.set("fail", function + " STATUS_INSUFFICIENT_RESOURCES async 1"));
        Record &r = a.record();
        void *out = sentinel<void>();
        ASSERT_STATUS(STATUS_PENDING, create_one(a, kind, r, &out));
        ASSERT_TRUE(r.wait());
        EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, r.status());
        EXPECT_EQ(r.object(), nullptr);
        a.close();
        EXPECT_EQ(r.count(), 1);
        EXPECT_EQ(out, sentinel<void>());
    }
}

TEST(CreateKnobs, InjectedInlineFailureHonoursItsCount)
{
    RawAdapter a("fail=NdkCreateCq STATUS_INSUFFICIENT_RESOURCES inline 2");
    for (int i = 0; i < 2; ++i) {
        Record &r = a.record();
        NDK_CQ *out = sentinel<NDK_CQ>();
        EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES,
                      a.d().NdkCreateCq(a.get(), 16, ndktest::ignore_cq_notification, nullptr,
                                        nullptr, Record::create, &r, &out));
        EXPECT_EQ(out, sentinel<NDK_CQ>()) << "a failed create wrote the out-parameter";
    }
    EXPECT_NE(a.cq(), nullptr) << "the third create must succeed";
    EXPECT_EQ(a.knob("fail"), "");
}

TEST(CreateKnobs, ObjectCapIsInsufficientResourcesUntilOneCloses)
{
    RawAdapter a("max_cq_count=2;max_pd_count=1");
    NDK_CQ *first = a.cq();
    NDK_CQ *second = a.cq();
    ASSERT_TRUE(first && second);
    Record &r = a.record();
    NDK_CQ *third = sentinel<NDK_CQ>();
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES,
                  a.d().NdkCreateCq(a.get(), 16, ndktest::ignore_cq_notification, nullptr, nullptr,
                                    Record::create, &r, &third));
    EXPECT_EQ(third, sentinel<NDK_CQ>());
    ASSERT_NE(a.pd(), nullptr);
    Record &pr = a.record();
    NDK_PD *pd = nullptr;
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES,
                  a.d().NdkCreatePd(a.get(), Record::create, &pr, &pd));
    a.close_now(first);
    EXPECT_NE(a.cq(), nullptr);
}

std::vector<bool> pending_sequence(const std::string &options, int n)
{
    RawAdapter a(options);
    std::vector<bool> pended;
    for (int i = 0; i < n; ++i) {
        Record &r = a.record();
        NDK_PD *pd = nullptr;
        NTSTATUS s = a.d().NdkCreatePd(a.get(), Record::create, &r, &pd);
        EXPECT_TRUE(s == STATUS_SUCCESS || s == STATUS_PENDING) << ndk::describe_status(s);
        pended.push_back(s == STATUS_PENDING);
        if (s == STATUS_PENDING) {
            EXPECT_TRUE(r.wait());
            pd = reinterpret_cast<NDK_PD *>(r.object());
        }
        if (pd)
            a.close_now(pd);
    }
    return pended;
}

TEST(CreateKnobs, RandomModeIsReproducibleAndModesChangeAtRunTime)
{
    auto first = pending_sequence("create_mode=random;seed=7", 48);
    auto again = pending_sequence("seed=7;create_mode=random", 48);
    auto other = pending_sequence("create_mode=random;seed=8", 48);
    EXPECT_EQ(first, again);
    EXPECT_NE(first, other);
    EXPECT_GT(std::count(first.begin(), first.end(), true), 0);
    EXPECT_GT(std::count(first.begin(), first.end(), false), 0);

    // The mode can change at run time through the provider's control entry.
    RawAdapter a;
    Record &r1 = a.record();
    NDK_PD *pd = nullptr;
    EXPECT_STATUS(STATUS_SUCCESS, a.d().NdkCreatePd(a.get(), Record::create, &r1, &pd));
    ASSERT_STATUS(STATUS_SUCCESS, a.set("create_mode", "pending"));
    Record &r2 = a.record();
    EXPECT_STATUS(STATUS_PENDING, a.d().NdkCreatePd(a.get(), Record::create, &r2, &pd));
    EXPECT_TRUE(r2.wait());
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, a.set("create_mode", "later"));
    EXPECT_EQ(a.knob("create_mode"), "pending");
}

TEST(QueryAdapterInfo, BufferTooSmallReportsTheRequiredSize)
{
    RawAdapter a;
    NDK_ADAPTER_INFO info{};
    ULONG size = 0;
    EXPECT_STATUS(STATUS_BUFFER_TOO_SMALL, a.d().NdkQueryAdapterInfo(a.get(), nullptr, &size));
    EXPECT_EQ(size, sizeof(NDK_ADAPTER_INFO));
    size = sizeof(NDK_ADAPTER_INFO) - 1;
    EXPECT_STATUS(STATUS_BUFFER_TOO_SMALL, a.d().NdkQueryAdapterInfo(a.get(), &info, &size));
    EXPECT_EQ(size, sizeof(NDK_ADAPTER_INFO));
    EXPECT_EQ(info.Version.Major, 0) << "nothing is written into a buffer that is too small";
    size = sizeof(NDK_ADAPTER_INFO) + 64;
    EXPECT_STATUS(STATUS_SUCCESS, a.d().NdkQueryAdapterInfo(a.get(), &info, &size));
    EXPECT_EQ(size, sizeof(NDK_ADAPTER_INFO));
    EXPECT_EQ(info.Version.Major, 2);
    EXPECT_EQ(info.Version.Minor, 1);
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, a.d().NdkQueryAdapterInfo(a.get(), &info, nullptr));
}

TEST(QueryAdapterInfo, ReflectsKnobsAndInjectedFailures)
{
    RawAdapter a("max_cq_depth=1000;vendor_id=0x1234;adapter_flags=0x104");
    NDK_ADAPTER_INFO info = a.info();
    EXPECT_EQ(info.MaxCqDepth, 1000u);
    EXPECT_EQ(info.VendorId, 0x1234u);
    EXPECT_EQ(info.AdapterFlags, 0x104u);
    ASSERT_STATUS(STATUS_SUCCESS,
                  a.set("fail", "NdkQueryAdapterInfo STATUS_INSUFFICIENT_RESOURCES"));
    ULONG size = sizeof info;
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, a.d().NdkQueryAdapterInfo(a.get(), &info, &size));
    EXPECT_STATUS(STATUS_SUCCESS, a.d().NdkQueryAdapterInfo(a.get(), &info, &size));
}

TEST(CreateCq, DepthBeyondMaxCqDepthIsInvalidParameter)
{
    RawAdapter a("max_cq_depth=64;create_mode=pending");
    for (ULONG depth : {ULONG{0}, ULONG{65}, MAXULONG}) {
        Record &r = a.record();
        NDK_CQ *out = sentinel<NDK_CQ>();
        EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                      a.d().NdkCreateCq(a.get(), depth, ndktest::ignore_cq_notification, nullptr,
                                        nullptr, Record::create, &r, &out))
            << depth;
        EXPECT_EQ(out, sentinel<NDK_CQ>());
    }
    EXPECT_NE(a.cq(64), nullptr) << "MaxCqDepth itself is allowed";
    a.close();
}

TEST(CreateCq, AffinityMustNameAPresentProcessorInGroupZero)
{
    RawAdapter a;
    auto create = [&](GROUP_AFFINITY affinity) {
        Record &r = a.record();
        NDK_CQ *out = nullptr;
        return a.d().NdkCreateCq(a.get(), 16, ndktest::ignore_cq_notification, nullptr, &affinity,
                                 Record::create, &r, &out);
    };
    EXPECT_STATUS(STATUS_SUCCESS, create(GROUP_AFFINITY{1, 0, {}}));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create(GROUP_AFFINITY{0, 0, {}}));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create(GROUP_AFFINITY{1, 1, {}}));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, create(GROUP_AFFINITY{uint64_t{1} << 63, 0, {}}));
}

TEST(CqModeration, RulesWithTheFlag)
{
    RawAdapter a("request_mode=pending"); // must not make it pend
    NDK_CQ *cq = a.cq(32);
    ASSERT_NE(cq, nullptr);
    auto moderate = [&](ULONG interval, ULONG count) {
        return cq->Dispatch->NdkControlCqInterruptModeration(cq, interval, count);
    };
    EXPECT_STATUS(STATUS_SUCCESS, moderate(0, 0)); // no moderation
    EXPECT_STATUS(STATUS_SUCCESS, moderate(100, 8));
    EXPECT_STATUS(STATUS_SUCCESS, moderate(100, MAXULONG)); // the interval controls
    EXPECT_STATUS(STATUS_SUCCESS, moderate(MAXULONG, 32));  // the count controls
    EXPECT_STATUS(STATUS_SUCCESS, moderate(100, 33));       // count > depth: interval controls
    // Neither would control (digest 1.3).
    EXPECT_STATUS(STATUS_INVALID_PARAMETER_MIX, moderate(MAXULONG, MAXULONG));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER_MIX, moderate(MAXULONG, 33));
}

TEST(CqModeration, NotSupportedWithoutTheFlagAndNeverPending)
{
    RawAdapter a("adapter_flags=0;request_mode=pending");
    NDK_CQ *cq = a.cq(32);
    ASSERT_NE(cq, nullptr);
    for (auto [interval, count] : {std::pair<ULONG, ULONG>{0, 0}, {100, 8}, {MAXULONG, MAXULONG}})
        EXPECT_STATUS(STATUS_NOT_SUPPORTED,
                      cq->Dispatch->NdkControlCqInterruptModeration(cq, interval, count));
}

TEST(CqModeration, InjectedFailureIsInline)
{
    RawAdapter a("fail=NdkControlCqInterruptModeration STATUS_INSUFFICIENT_RESOURCES inline 1");
    NDK_CQ *cq = a.cq(32);
    ASSERT_NE(cq, nullptr);
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES,
                  cq->Dispatch->NdkControlCqInterruptModeration(cq, 10, 1));
    EXPECT_STATUS(STATUS_SUCCESS, cq->Dispatch->NdkControlCqInterruptModeration(cq, 10, 1));
}

TEST(CqResize, LimitsFlagAndPending)
{
    RawAdapter a("max_cq_depth=128;request_mode=pending");
    NDK_CQ *cq = a.cq(32);
    ASSERT_NE(cq, nullptr);
    Record &bad = a.record();
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  cq->Dispatch->NdkResizeCq(cq, 129, Record::request, &bad));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  cq->Dispatch->NdkResizeCq(cq, 0, Record::request, &bad));
    Record &ok = a.record();
    ASSERT_STATUS(STATUS_PENDING, cq->Dispatch->NdkResizeCq(cq, 128, Record::request, &ok));
    ASSERT_TRUE(ok.wait());
    EXPECT_STATUS(STATUS_SUCCESS, ok.status());
    EXPECT_NE(ok.thread(), std::this_thread::get_id());
    // The new depth governs moderation's "Count > CqDepth".
    EXPECT_STATUS(STATUS_SUCCESS, cq->Dispatch->NdkControlCqInterruptModeration(cq, MAXULONG, 128));
    a.close();
    EXPECT_EQ(bad.count(), 0);
    EXPECT_EQ(ok.count(), 1);
}

TEST(CqResize, NotSupportedWithoutTheFlag)
{
    RawAdapter a("adapter_flags=0x4");
    NDK_CQ *cq = a.cq(32);
    ASSERT_NE(cq, nullptr);
    Record &r = a.record();
    EXPECT_STATUS(STATUS_NOT_SUPPORTED, cq->Dispatch->NdkResizeCq(cq, 64, Record::request, &r));
}

// Completions to poll and be notified about come from flushing posted receives (digest 1.7).
struct CqWithQp {
    explicit CqWithQp(RawAdapter &a, Record *notify = nullptr)
    {
        cq = a.cq(64, notify);
        pd = a.pd();
        if (cq && pd)
            qp = a.qp(pd, cq, cq, reinterpret_cast<PVOID>(uintptr_t{0x0C0}));
    }
    void flush_receives(int n)
    {
        for (int i = 0; i < n; ++i)
            EXPECT_STATUS(STATUS_SUCCESS,
                          qp->Dispatch->NdkReceive(qp, reinterpret_cast<PVOID>(uintptr_t(i + 1)),
                                                   nullptr, 0));
        qp->Dispatch->NdkFlush(qp);
    }
    NDK_CQ *cq = nullptr;
    NDK_PD *pd = nullptr;
    NDK_QP *qp = nullptr;
};

TEST(CqResize, SmallerThanTheQueuedCompletionsIsBufferOverflow)
{
    RawAdapter a;
    CqWithQp f(a);
    ASSERT_NE(f.qp, nullptr);
    f.flush_receives(3);
    Record &r = a.record();
    EXPECT_STATUS(STATUS_BUFFER_OVERFLOW,
                  f.cq->Dispatch->NdkResizeCq(f.cq, 2, Record::request, &r));
    EXPECT_STATUS(STATUS_SUCCESS, f.cq->Dispatch->NdkResizeCq(f.cq, 3, Record::request, &r));
}

TEST(CqResults, EmptyCqAndZeroLengthReturnZero)
{
    RawAdapter a;
    CqWithQp f(a);
    ASSERT_NE(f.qp, nullptr);
    NDK_RESULT results[4];
    NDK_RESULT_EX results_ex[4];
    EXPECT_EQ(f.cq->Dispatch->NdkGetCqResults(f.cq, results, 4), 0u);
    EXPECT_EQ(f.cq->Dispatch->NdkGetCqResultsEx(f.cq, results_ex, 4), 0u);
    f.flush_receives(2);
    EXPECT_EQ(f.cq->Dispatch->NdkGetCqResultsEx(f.cq, results_ex, 0), 0u);
    EXPECT_EQ(f.cq->Dispatch->NdkGetCqResults(f.cq, results, 1), 1u);
    EXPECT_EQ(results[0].RequestContext, reinterpret_cast<PVOID>(uintptr_t{1}));
    EXPECT_EQ(f.cq->Dispatch->NdkGetCqResultsEx(f.cq, results_ex, 4), 1u);
    EXPECT_EQ(results_ex[0].RequestContext, reinterpret_cast<PVOID>(uintptr_t{2}));
}

TEST(CqArm, AnyNotifiesOncePerArmOnTheProvidersThread)
{
    RawAdapter a;
    Record &notify = a.record();
    CqWithQp f(a, &notify);
    ASSERT_NE(f.qp, nullptr);
    f.cq->Dispatch->NdkArmCq(f.cq, NDK_CQ_NOTIFY_ANY);
    f.flush_receives(3);
    ASSERT_TRUE(notify.wait());
    a.barrier();
    EXPECT_EQ(notify.count(), 1) << "one notification per arm";
    EXPECT_STATUS(STATUS_SUCCESS, notify.status());
    EXPECT_NE(notify.thread(), std::this_thread::get_id());
    // Not armed any more: further completions notify nobody.
    f.flush_receives(1);
    a.barrier();
    EXPECT_EQ(notify.count(), 1);
    f.cq->Dispatch->NdkArmCq(f.cq, NDK_CQ_NOTIFY_ANY);
    f.flush_receives(1);
    ASSERT_TRUE(notify.wait(2));
}

TEST(CqArm, ErrorCompletionsMatchSolicitedButNotErrors)
{
    RawAdapter a;
    Record &notify = a.record();
    CqWithQp f(a, &notify);
    ASSERT_NE(f.qp, nullptr);
    // ERRORS is for CQ errors (overrun, catastrophic), not failed requests (digest 3.2).
    f.cq->Dispatch->NdkArmCq(f.cq, NDK_CQ_NOTIFY_ERRORS);
    f.flush_receives(1); // a STATUS_CANCELLED completion
    a.barrier();
    EXPECT_EQ(notify.count(), 0);
    // Re-arming with SOLICITED merges to SOLICITED; an error completion matches it.
    f.cq->Dispatch->NdkArmCq(f.cq, NDK_CQ_NOTIFY_SOLICITED);
    f.flush_receives(1);
    ASSERT_TRUE(notify.wait());
    a.barrier();
    EXPECT_EQ(notify.count(), 1);
}

// Digest 3.2: "At least one completion arrived since the last callback: the arm must be
// satisfied immediately."
TEST(CqArm, ArmingWithCompletionsAlreadyQueuedNotifiesAtOnce)
{
    RawAdapter a;
    Record &notify = a.record();
    CqWithQp f(a, &notify);
    ASSERT_NE(f.qp, nullptr);
    f.flush_receives(2); // queued while not armed
    a.barrier();
    ASSERT_EQ(notify.count(), 0);
    f.cq->Dispatch->NdkArmCq(f.cq, NDK_CQ_NOTIFY_ANY);
    a.barrier();
    EXPECT_EQ(notify.count(), 1) << "the arm was not satisfied by the completions already queued";
}

// Digest 1.3: an overrun is reported as STATUS_BUFFER_OVERFLOW through the notification
// callback; the CQ becomes unusable and reports no further completions.
TEST(CqArm, OverrunIsReportedOnceAsBufferOverflow)
{
    RawAdapter a;
    Record &notify = a.record();
    NDK_CQ *cq = a.cq(2, &notify);
    NDK_PD *pd = a.pd();
    ASSERT_TRUE(cq && pd);
    NDK_QP *qp = a.qp(pd, cq, cq);
    ASSERT_NE(qp, nullptr);
    cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ERRORS);
    for (int i = 0; i < 3; ++i) // one more completion than the CQ holds
        ASSERT_STATUS(STATUS_SUCCESS, qp->Dispatch->NdkReceive(qp, nullptr, nullptr, 0));
    qp->Dispatch->NdkFlush(qp);
    ASSERT_TRUE(notify.wait());
    EXPECT_STATUS(STATUS_BUFFER_OVERFLOW, notify.status());
    NDK_RESULT_EX results[4];
    EXPECT_EQ(cq->Dispatch->NdkGetCqResultsEx(cq, results, 4), 0u);
    cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
    // Its QPs are unusable too (docs/semantics.md, CQ-OVERRUN-QP): posts fail inline.
    EXPECT_STATUS(STATUS_INVALID_DEVICE_STATE, qp->Dispatch->NdkReceive(qp, nullptr, nullptr, 0));
    qp->Dispatch->NdkFlush(qp);
    a.barrier();
    EXPECT_EQ(notify.count(), 1) << "the overrun is reported once, and nothing after it";
    EXPECT_EQ(cq->Dispatch->NdkGetCqResultsEx(cq, results, 4), 0u);
}

} // namespace
