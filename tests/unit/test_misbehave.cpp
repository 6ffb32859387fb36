// The soft provider's test knobs for a validation layer (docs/knobs.md): `misbehave`, which
// breaks one NDK contract rule on purpose, and `hold` / `release` / `held`, which catch one
// provider call in flight.  Each misbehave test shows the provider doing exactly the
// documented wrong thing, through the raw ABI: a consumer library would be confused by it.
#include "connection_support.hpp"

#include <atomic>
#include <functional>
#include <set>

namespace ndktest {
namespace {

NTSTATUS control(RawAdapter &a, const char *key, const char *value, std::string &reply)
{
    char text[1024] = {};
    NTSTATUS status = a.entry().ControlMiniport(a.miniport(), key, value, text, sizeof text);
    reply = text;
    return status;
}

// Every call of a create completion, in order.
struct Creates {
    std::mutex mu;
    std::vector<std::pair<NTSTATUS, NDK_OBJECT_HEADER *>> calls;
    std::thread::id last_thread;

    static void completion(PVOID context, NTSTATUS status, NDK_OBJECT_HEADER *object)
    {
        auto *self = static_cast<Creates *>(context);
        std::lock_guard lock(self->mu);
        self->calls.emplace_back(status, object);
        self->last_thread = std::this_thread::get_id();
    }
    size_t count()
    {
        std::lock_guard lock(mu);
        return calls.size();
    }
};

// An MR registration of a made-up range (the provider never dereferences an MDL's address).
struct Registration {
    MdlChain mdl{{{kTestVa, 4096}}};
    NTSTATUS start(NDK_MR *mr, Record &r)
    {
        return mr->Dispatch->NdkRegisterMr(mr, mdl.get(), 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
                                           Record::request, &r);
    }
};

// One adapter, a CQ with `notify` as its callback, and an unconnected QP on it: a receive
// posted and flushed puts one (CANCELLED) completion on the CQ without any connection.
struct FlushRig {
    RawAdapter &a;
    NDK_CQ *cq;
    NDK_PD *pd;
    NDK_QP *qp;

    FlushRig(RawAdapter &adapter, NDK_FN_CQ_NOTIFICATION_CALLBACK notify, PVOID context)
        : a(adapter), cq(nullptr), pd(adapter.pd()), qp(nullptr)
    {
        Record &r = a.record();
        NTSTATUS s = a.d().NdkCreateCq(a.get(), 64, notify, context, nullptr, Record::create, &r,
                                       &cq);
        cq = a.finish(s, r, cq, "NdkCreateCq");
        if (cq != nullptr && pd != nullptr)
            qp = a.qp(pd, cq, cq);
    }
    bool ready() const { return cq != nullptr && qp != nullptr; }
    void one_completion()
    {
        EXPECT_STATUS(STATUS_SUCCESS, qp->Dispatch->NdkReceive(qp, nullptr, nullptr, 0));
        qp->Dispatch->NdkFlush(qp);
    }
    void arm(ULONG type = NDK_CQ_NOTIFY_ANY) { cq->Dispatch->NdkArmCq(cq, type); }
};

// Post `n` receives on the server and `n` signaled sends (contexts 1..n) on the client.
void send_n(Pair &pair, Region &sink, Region &source, int n, ULONG flags = 0)
{
    for (int i = 0; i < n; ++i) {
        NDK_SGE r = sink.sge(static_cast<size_t>(i) * 16, 16);
        ASSERT_STATUS(STATUS_SUCCESS,
                      pair.b().qp->Dispatch->NdkReceive(pair.b().qp, nullptr, &r, 1));
    }
    for (int i = 1; i <= n; ++i) {
        NDK_SGE s = source.sge(0, 16);
        ASSERT_STATUS(STATUS_SUCCESS, pair.a().qp->Dispatch->NdkSend(
                                          pair.a().qp, reinterpret_cast<PVOID>(uintptr_t(i)),
                                          &s, 1, flags));
    }
}

std::vector<uintptr_t> contexts(const std::vector<NDK_RESULT_EX> &results)
{
    std::vector<uintptr_t> out;
    for (const auto &r : results)
        out.push_back(reinterpret_cast<uintptr_t>(r.RequestContext));
    return out;
}

// What the CQ still holds.
std::vector<NDK_RESULT_EX> drain_cq(NDK_CQ *cq)
{
    std::vector<NDK_RESULT_EX> out;
    NDK_RESULT_EX r[16];
    while (ULONG n = cq->Dispatch->NdkGetCqResultsEx(cq, r, 16))
        out.insert(out.end(), r, r + n);
    return out;
}

// ---- The knob itself ------------------------------------------------------------------------

TEST(Misbehave, DefaultsToNoneAndTakesANameAtOpenOrAtRunTime)
{
    RawAdapter plain;
    EXPECT_EQ(plain.knob("misbehave"), "none");
    RawAdapter a("misbehave=complete_twice");
    EXPECT_EQ(a.knob("misbehave"), "complete_twice");
    EXPECT_STATUS(STATUS_SUCCESS, a.set("misbehave", "dispatch_null"));
    EXPECT_EQ(a.knob("misbehave"), "dispatch_null");
    EXPECT_STATUS(STATUS_SUCCESS, a.set("misbehave", "none"));
    EXPECT_EQ(a.knob("misbehave"), "none");
}

TEST(Misbehave, AnUnknownNameIsInvalidAndTheReplyListsTheValidOnes)
{
    RawAdapter a;
    std::string reply;
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, control(a, "misbehave", "be_nice", reply));
    for (const char *name : {"none", "complete_after_inline", "reorder_completions",
                             "moderation_not_supported"})
        EXPECT_NE(reply.find(name), std::string::npos) << name << " missing from: " << reply;
    EXPECT_EQ(a.knob("misbehave"), "none");
    EXPECT_THROW(RawAdapter("misbehave=be_nice"), ndk::Error);
}

// ---- Create completions -------------------------------------------------------------------

TEST(Misbehave, CompleteAfterInlineCallsTheCompletionOfAnInlineCreateBeforeItReturns)
{
    RawAdapter a("misbehave=complete_after_inline");
    Creates pd_created;
    NDK_PD *pd = nullptr;
    ASSERT_STATUS(STATUS_SUCCESS,
                  a.d().NdkCreatePd(a.get(), Creates::completion, &pd_created, &pd));
    ASSERT_EQ(pd_created.count(), 1u) << "no completion before the inline SUCCESS returned";
    EXPECT_STATUS(STATUS_SUCCESS, pd_created.calls[0].first);
    EXPECT_EQ(pd_created.calls[0].second, &pd->Header);
    EXPECT_EQ(pd_created.last_thread, std::this_thread::get_id()) << "not from inside the call";

    // Inline failures too, whichever path returns them: an argument check ...
    Creates bad_depth;
    NDK_CQ *cq = nullptr;
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  a.d().NdkCreateCq(a.get(), 0, ignore_cq_notification, nullptr, nullptr,
                                    Creates::completion, &bad_depth, &cq));
    ASSERT_EQ(bad_depth.count(), 1u);
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, bad_depth.calls[0].first);
    EXPECT_EQ(bad_depth.calls[0].second, nullptr);
    // ... or an injected failure.
    ASSERT_STATUS(STATUS_SUCCESS, a.set("fail", "NdkCreateMw STATUS_INSUFFICIENT_RESOURCES"));
    Creates injected;
    NDK_MW *mw = nullptr;
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES,
                  pd->Dispatch->NdkCreateMw(pd, Creates::completion, &injected, &mw));
    ASSERT_EQ(injected.count(), 1u);
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, injected.calls[0].first);
}

TEST(Misbehave, CompleteTwiceCallsAPendingCreatesCompletionTwice)
{
    RawAdapter a("create_mode=pending\nmisbehave=complete_twice");
    Creates created;
    NDK_PD *pd = nullptr;
    ASSERT_STATUS(STATUS_PENDING, a.d().NdkCreatePd(a.get(), Creates::completion, &created, &pd));
    a.barrier();
    ASSERT_EQ(created.count(), 2u);
    EXPECT_STATUS(STATUS_SUCCESS, created.calls[0].first);
    EXPECT_NE(created.calls[0].second, nullptr);
    EXPECT_EQ(created.calls[0], created.calls[1]) << "the same arguments both times";
    EXPECT_EQ(pd, nullptr) << "the out-parameter is left alone";
}

TEST(Misbehave, NeverCompleteKeepsAPendingCreatesObjectWithoutCallingTheCompletion)
{
    RawAdapter a("create_mode=pending\nmisbehave=never_complete\nmax_pd_count=1");
    Creates created;
    NDK_PD *pd = nullptr;
    ASSERT_STATUS(STATUS_PENDING, a.d().NdkCreatePd(a.get(), Creates::completion, &created, &pd));
    ASSERT_STATUS(STATUS_SUCCESS, a.set("misbehave", "none"));
    a.barrier(); // a completion queued by the create would have run by now (the engine is FIFO)
    EXPECT_EQ(created.count(), 0u);
    Creates second;
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES,
                  a.d().NdkCreatePd(a.get(), Creates::completion, &second, &pd))
        << "the adapter still holds the first PD (max_pd_count=1)";
    a.close(); // frees it; ASan reports a leak otherwise
    EXPECT_EQ(created.count(), 0u);
}

TEST(Misbehave, OutParamAfterPendingWritesTheObjectBeforeReturningPending)
{
    RawAdapter a("create_mode=pending\nmisbehave=out_param_after_pending");
    Creates created;
    NDK_PD *pd = nullptr;
    ASSERT_STATUS(STATUS_PENDING, a.d().NdkCreatePd(a.get(), Creates::completion, &created, &pd));
    ASSERT_NE(pd, nullptr) << "the out-parameter was not written";
    a.barrier();
    ASSERT_EQ(created.count(), 1u) << "it still completes, once";
    EXPECT_STATUS(STATUS_SUCCESS, created.calls[0].first);
    EXPECT_EQ(created.calls[0].second, &pd->Header);
}

// ---- Request completions ------------------------------------------------------------------

TEST(Misbehave, RequestCompleteAfterInlineCallsTheCompletionOfAnInlineRequest)
{
    RawAdapter a("misbehave=request_complete_after_inline");
    NDK_PD *pd = a.pd();
    ASSERT_NE(pd, nullptr);
    NDK_MR *mr = a.mr(pd, false);
    ASSERT_NE(mr, nullptr);
    Registration reg;
    Record &registered = a.record();
    ASSERT_STATUS(STATUS_SUCCESS, reg.start(mr, registered));
    EXPECT_EQ(registered.count(), 1) << "no completion before the inline SUCCESS returned";
    EXPECT_STATUS(STATUS_SUCCESS, registered.status());
    EXPECT_EQ(registered.thread(), std::this_thread::get_id());
    // An inline failure too: registering twice.
    Record &again = a.record();
    EXPECT_STATUS(STATUS_INVALID_DEVICE_STATE, reg.start(mr, again));
    EXPECT_EQ(again.count(), 1);
    EXPECT_STATUS(STATUS_INVALID_DEVICE_STATE, again.status());
}

TEST(Misbehave, RequestCompleteTwiceCallsAPendingRequestsCompletionTwice)
{
    RawAdapter a("request_mode=pending\nmisbehave=request_complete_twice");
    NDK_PD *pd = a.pd();
    NDK_MR *mr = pd ? a.mr(pd, false) : nullptr;
    ASSERT_NE(mr, nullptr);
    Registration reg;
    Record &registered = a.record();
    ASSERT_STATUS(STATUS_PENDING, reg.start(mr, registered));
    a.barrier();
    EXPECT_EQ(registered.count(), 2);
    EXPECT_STATUS(STATUS_SUCCESS, registered.status());
}

TEST(Misbehave, RequestNeverCompleteExecutesTheRequestAndNeverCallsItsCompletion)
{
    RawAdapter a("request_mode=pending\nmisbehave=request_never_complete");
    NDK_PD *pd = a.pd();
    NDK_MR *mr = pd ? a.mr(pd, false) : nullptr;
    ASSERT_NE(mr, nullptr);
    Registration reg;
    Record &registered = a.record();
    ASSERT_STATUS(STATUS_PENDING, reg.start(mr, registered));
    ASSERT_STATUS(STATUS_SUCCESS, a.set("misbehave", "none"));
    a.barrier();
    EXPECT_EQ(registered.count(), 0);
    // The registration was made (the fault layer reports a request's outcome, it does not
    // stop the request): the MR has its tokens.
    EXPECT_NE(mr->Dispatch->NdkGetLocalTokenFromMr(mr), 0u);
    // Nothing is left in flight: the MR's close and the adapter's close do not hang.  The MR's
    // close may still pend (digest 3.1): the barrier returns when its connector's completion
    // is called, and the layer's thread counts that job as running until the call returns.
    a.close_now(mr);
    a.close();
    EXPECT_EQ(registered.count(), 0);
}

// ---- Headers and dispatch tables ----------------------------------------------------------

TEST(Misbehave, HeaderVersionReportsTheNextMajorVersion)
{
    RawAdapter a("misbehave=header_version");
    NDK_PD *pd = a.pd();
    ASSERT_NE(pd, nullptr);
    EXPECT_EQ(pd->Header.Version.Major, a.get()->Header.Version.Major + 1);
    EXPECT_EQ(pd->Header.Version.Minor, a.get()->Header.Version.Minor);
    EXPECT_EQ(pd->Header.ObjectType, NdkObjectTypePd);
}

TEST(Misbehave, HeaderTypeReportsNdkObjectTypeMax)
{
    RawAdapter a("misbehave=header_type");
    NDK_CQ *cq = a.cq();
    ASSERT_NE(cq, nullptr);
    EXPECT_EQ(cq->Header.ObjectType, NdkObjectTypeMax);
    EXPECT_EQ(cq->Header.Version.Major, a.get()->Header.Version.Major);
}

TEST(Misbehave, HeaderReservedLeavesTheFirstReservedPointerSet)
{
    RawAdapter a("misbehave=header_reserved");
    NDK_PD *pd = a.pd();
    ASSERT_NE(pd, nullptr);
    EXPECT_EQ(pd->Header.NdkReserved.rf[0], reinterpret_cast<PVOID>(1));
    EXPECT_EQ(pd->Header.NdkReserved.rf[1], nullptr);
}

TEST(Misbehave, DispatchNullReturnsObjectsWithoutADispatchTableAndNeverReadsIt)
{
    RawAdapter a;
    NDK_CQ *model_cq = a.cq();
    NDK_PD *pd = a.pd();
    ASSERT_TRUE(model_cq && pd);
    NDK_QP *model_qp = a.qp(pd, model_cq, model_cq);
    ASSERT_NE(model_qp, nullptr);
    // Tables the consumer already has (the consumer, unlike the provider, may read them).
    const NDK_CQ_DISPATCH *cq_table = model_cq->Dispatch;
    const NDK_QP_DISPATCH *qp_table = model_qp->Dispatch;
    ASSERT_STATUS(STATUS_SUCCESS, a.set("misbehave", "dispatch_null"));
    NDK_CQ *cq = a.cq();
    ASSERT_NE(cq, nullptr);
    EXPECT_EQ(cq->Dispatch, nullptr);
    NDK_QP *qp = a.qp(pd, cq, cq);
    ASSERT_NE(qp, nullptr);
    EXPECT_EQ(qp->Dispatch, nullptr);
    // They work through those tables: nothing in the provider reads their own.
    EXPECT_STATUS(STATUS_SUCCESS, qp_table->NdkReceive(qp, nullptr, nullptr, 0));
    qp_table->NdkFlush(qp);
    NDK_RESULT results[4];
    EXPECT_EQ(cq_table->NdkGetCqResults(cq, results, 4), 1u);
    EXPECT_STATUS(STATUS_SUCCESS, qp_table->NdkCloseQp(&qp->Header, nullptr, nullptr));
    EXPECT_STATUS(STATUS_SUCCESS, cq_table->NdkCloseCq(&cq->Header, nullptr, nullptr));
}

// ---- Lifetime -----------------------------------------------------------------------------

TEST(Misbehave, CallbackAfterCloseCallsAClosedCqsNotificationOnceMore)
{
    EventLog log;
    // Manual progress: nothing reaches the consumer before the close returned and the test
    // steps the engine.
    RawAdapter a("misbehave=callback_after_close\nprogress=manual");
    Record &notify = a.record(&log, "notify");
    NDK_CQ *cq = a.cq(16, &notify);
    ASSERT_NE(cq, nullptr);
    ASSERT_STATUS(STATUS_SUCCESS, cq->Dispatch->NdkCloseCq(&cq->Header, nullptr, nullptr));
    EXPECT_EQ(notify.count(), 0);
    auto deadline = std::chrono::steady_clock::now() + kWait;
    while (notify.count() == 0 && std::chrono::steady_clock::now() < deadline) {
        a.set("step", "1");
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(notify.count(), 1) << "no callback after a close that returned SUCCESS";
    EXPECT_STATUS(STATUS_SUCCESS, notify.status());
    ASSERT_STATUS(STATUS_SUCCESS, a.set("progress", "auto"));

    // A pending close: the callback comes after the close completion returned.  The close
    // pends at the provider (its QP is open), so the provider orders the two itself; a close
    // the fault layer makes pend (close_mode=pending) would race the provider's own delay.
    Record &notify2 = a.record(&log, "notify2");
    Record &closed = a.record(&log, "closed");
    NDK_CQ *cq2 = a.cq(16, &notify2);
    NDK_PD *pd = a.pd();
    ASSERT_TRUE(cq2 != nullptr && pd != nullptr);
    NDK_QP *qp = a.qp(pd, cq2, cq2);
    ASSERT_NE(qp, nullptr);
    ASSERT_STATUS(STATUS_PENDING, close_with(cq2, closed));
    a.close_now(qp); // the CQ's last successor: its close completes, then the callback comes
    ASSERT_TRUE(notify2.wait(1));
    EXPECT_EQ(closed.count(), 1);
    EXPECT_LT(log.index_of("closed:end"), log.index_of("notify2"));
    a.barrier();
    EXPECT_EQ(notify2.count(), 1) << "once";
}

TEST(Misbehave, CloseAntecedentEarlyReturnsSuccessWhileSuccessorsAreOpen)
{
    RawAdapter a("misbehave=close_antecedent_early\nmax_cq_count=1");
    NDK_CQ *cq = a.cq();
    NDK_PD *pd = a.pd();
    ASSERT_TRUE(cq && pd);
    NDK_QP *qp = a.qp(pd, cq, cq);
    ASSERT_NE(qp, nullptr);
    Record &closed = a.record();
    EXPECT_STATUS(STATUS_SUCCESS, close_with(cq, closed)) << "the documented answer is PENDING";
    // The CQ lives on behind the QP: still counted against max_cq_count=1.
    Record &r = a.record();
    NDK_CQ *second = nullptr;
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES,
                  a.d().NdkCreateCq(a.get(), 16, ignore_cq_notification, nullptr, nullptr,
                                    Record::create, &r, &second));
    // The QP still works on it: a flushed receive lands in the (closed) CQ without harm.
    EXPECT_STATUS(STATUS_SUCCESS, qp->Dispatch->NdkReceive(qp, nullptr, nullptr, 0));
    qp->Dispatch->NdkFlush(qp);
    a.close_now(qp);
    a.barrier();
    EXPECT_NE(a.cq(), nullptr) << "the zombie went with its last successor";
    EXPECT_EQ(closed.count(), 0) << "no close completion, ever";
}

// ---- CQ notifications ---------------------------------------------------------------------

TEST(Misbehave, NotifyUnarmedCallsTheCallbackForEveryCompletionWithoutAnArm)
{
    RawAdapter a("misbehave=notify_unarmed");
    Record &notify = a.record();
    FlushRig rig(a, Record::notify, &notify);
    ASSERT_TRUE(rig.ready());
    rig.one_completion();
    rig.one_completion();
    a.barrier();
    EXPECT_EQ(notify.count(), 2) << "once per completion, no arm";
    EXPECT_STATUS(STATUS_SUCCESS, notify.status());
}

TEST(Misbehave, NotifyTwiceCallsTheCallbackTwicePerSatisfiedArm)
{
    EventLog log;
    RawAdapter a("misbehave=notify_twice");
    Record &notify = a.record(&log, "notify");
    FlushRig rig(a, Record::notify, &notify);
    ASSERT_TRUE(rig.ready());
    rig.arm();
    rig.one_completion();
    a.barrier();
    EXPECT_EQ(notify.count(), 2);
    auto entries = log.entries();
    EXPECT_EQ(entries, (std::vector<std::string>{"notify", "notify:end", "notify", "notify:end"}))
        << "the second after the first returned";
    rig.one_completion(); // no arm now: nothing
    a.barrier();
    EXPECT_EQ(notify.count(), 2);
}

// Counts calls and proves two of them overlapped: each of the first two callers waits (at most
// kWait) until another caller is inside too.
struct Overlap {
    std::atomic<int> calls{0};
    std::atomic<int> inside{0};
    std::atomic<int> most_inside{0};
    std::mutex mu;
    std::set<std::thread::id> threads;

    static void callback(PVOID context, NTSTATUS)
    {
        auto *self = static_cast<Overlap *>(context);
        int now = ++self->inside;
        for (int seen = self->most_inside.load(); now > seen;)
            self->most_inside.compare_exchange_weak(seen, now);
        if (self->calls.fetch_add(1) < 2) {
            auto deadline = std::chrono::steady_clock::now() + kWait;
            while (self->most_inside.load() < 2 && std::chrono::steady_clock::now() < deadline)
                std::this_thread::yield();
        }
        {
            std::lock_guard lock(self->mu);
            self->threads.insert(std::this_thread::get_id());
        }
        --self->inside;
    }
};

TEST(Misbehave, ConcurrentCqCallbacksDeliversEachNotificationFromTwoThreadsAtOnce)
{
    Overlap overlap; // outlives the adapter and so every callback
    RawAdapter a("misbehave=concurrent_cq_callbacks");
    FlushRig rig(a, Overlap::callback, &overlap);
    ASSERT_TRUE(rig.ready());
    rig.arm();
    rig.one_completion();
    a.barrier();
    EXPECT_EQ(overlap.calls.load(), 2 * 200) << "200 rounds from each of two threads";
    EXPECT_GE(overlap.most_inside.load(), 2) << "the calls never overlapped";
    EXPECT_EQ(overlap.threads.size(), 2u);
}

// ---- Results and initiator completions ----------------------------------------------------

TEST(Misbehave, ProviderErrorCodeMarksSuccessfulResults)
{
    Pair pair("misbehave=provider_error_code");
    ASSERT_TRUE(pair.connect());
    Region sink(pair.server(), pair.b().pd, 64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    Region source(pair.client(), pair.a().pd, 64, 0);
    send_n(pair, sink, source, 1);
    auto sent = pair.poll(pair.a(), 1);
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_STATUS(STATUS_SUCCESS, sent[0].Status);
    EXPECT_EQ(sent[0].ProviderErrorCode, 0x1234u) << "must be 0 with STATUS_SUCCESS";
    auto received = pair.poll(pair.b(), 1); // the other adapter behaves
    ASSERT_EQ(received.size(), 1u);
    EXPECT_EQ(received[0].ProviderErrorCode, 0u);
}

TEST(Misbehave, DropInvalidateTokenReportsTheComplementOfTheInvalidatedToken)
{
    Pair pair("", "misbehave=drop_invalidate_token");
    ASSERT_TRUE(pair.connect());
    Side &b = pair.b();
    Region sink(pair.server(), b.pd, 64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    Region window_mr(pair.server(), b.pd, 4096,
                     NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
    Region source(pair.client(), pair.a().pd, 64, 0);
    NDK_MW *mw = pair.server().mw(b.pd);
    ASSERT_NE(mw, nullptr);
    ASSERT_STATUS(STATUS_SUCCESS,
                  b.qp->Dispatch->NdkBind(b.qp, nullptr, window_mr.mr,
                                          mw, reinterpret_cast<PVOID>(window_mr.address()), 4096,
                                          NDK_OP_FLAG_ALLOW_REMOTE_WRITE));
    auto bound = pair.poll(b, 1);
    ASSERT_EQ(bound.size(), 1u);
    ASSERT_STATUS(STATUS_SUCCESS, bound[0].Status);
    UINT32 token = mw->Dispatch->NdkGetRemoteTokenFromMw(mw);
    NDK_SGE r = sink.sge(0, 64);
    ASSERT_STATUS(STATUS_SUCCESS, b.qp->Dispatch->NdkReceive(b.qp, nullptr, &r, 1));
    NDK_SGE s = source.sge(0, 16);
    ASSERT_STATUS(STATUS_SUCCESS, pair.a().qp->Dispatch->NdkSendAndInvalidate(
                                      pair.a().qp, nullptr, &s, 1, 0, token));
    auto received = pair.poll(b, 1);
    ASSERT_EQ(received.size(), 1u);
    ASSERT_STATUS(STATUS_SUCCESS, received[0].Status);
    EXPECT_EQ(received[0].Type, NdkOperationTypeReceiveAndInvalidate);
    EXPECT_EQ(received[0].TypeSpecificCompletionOutput, ULONG_PTR{static_cast<UINT32>(~token)});
    // The token was invalidated all the same: invalidating it again fails.
    ASSERT_STATUS(STATUS_SUCCESS, b.qp->Dispatch->NdkInvalidate(b.qp, reinterpret_cast<PVOID>(5),
                                                                &mw->Header, 0));
    auto invalidated = pair.poll(b, 1);
    ASSERT_EQ(invalidated.size(), 1u);
    EXPECT_STATUS(STATUS_INVALID_DEVICE_REQUEST, invalidated[0].Status);
}

TEST(Misbehave, CompleteSilentCompletesASilentSuccess)
{
    Pair pair("misbehave=complete_silent");
    ASSERT_TRUE(pair.connect());
    Region sink(pair.server(), pair.b().pd, 64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    Region source(pair.client(), pair.a().pd, 64, 0);
    send_n(pair, sink, source, 1, NDK_OP_FLAG_SILENT_SUCCESS);
    auto sent = pair.poll(pair.a(), 1);
    ASSERT_EQ(sent.size(), 1u) << "a silent success produced no completion";
    EXPECT_STATUS(STATUS_SUCCESS, sent[0].Status);
    EXPECT_EQ(sent[0].RequestContext, reinterpret_cast<PVOID>(1));
}

TEST(Misbehave, DropCompletionLosesEveryOddSuccessfulInitiatorCompletion)
{
    Pair pair("misbehave=drop_completion");
    ASSERT_TRUE(pair.connect(64, 2)); // queue depth 2: four sends need the slots back
    Region sink(pair.server(), pair.b().pd, 64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    Region source(pair.client(), pair.a().pd, 64, 0);
    send_n(pair, sink, source, 2);
    send_n(pair, sink, source, 2);
    auto sent = pair.poll(pair.a(), 2);
    pair.client().barrier();
    auto rest = drain_cq(pair.a().cq);
    sent.insert(sent.end(), rest.begin(), rest.end());
    EXPECT_EQ(contexts(sent), (std::vector<uintptr_t>{2, 2})) << "of sends 1, 2 then 1, 2";
    EXPECT_EQ(pair.poll(pair.b(), 4).size(), 4u) << "every send was executed";
}

TEST(Misbehave, ReorderCompletionsSwapsEachPairAndLetsTheOddOneThrough)
{
    Pair pair("misbehave=reorder_completions");
    ASSERT_TRUE(pair.connect());
    Region sink(pair.server(), pair.b().pd, 128, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    Region source(pair.client(), pair.a().pd, 64, 0);
    send_n(pair, sink, source, 5);
    pair.client().barrier(); // all five are in the CQ
    auto sent = pair.poll(pair.a(), 1);
    auto rest = drain_cq(pair.a().cq);
    sent.insert(sent.end(), rest.begin(), rest.end());
    // The layer takes all five at the first poll: two pairs swapped, the fifth, without a
    // partner, as it is; the rest of them wait in the layer for the next polls.
    EXPECT_EQ(contexts(sent), (std::vector<uintptr_t>{2, 1, 4, 3, 5}));
    pair.a().qp->Dispatch->NdkFlush(pair.a().qp);
    EXPECT_TRUE(drain_cq(pair.a().cq).empty()) << "nothing was held back";
}

// ---- Statuses -----------------------------------------------------------------------------

TEST(Misbehave, UndocumentedStatusFailsCreatePdWithInvalidParameterMix)
{
    RawAdapter a("misbehave=undocumented_status");
    Creates created;
    NDK_PD *pd = nullptr;
    EXPECT_STATUS(STATUS_INVALID_PARAMETER_MIX,
                  a.d().NdkCreatePd(a.get(), Creates::completion, &created, &pd));
    a.barrier();
    EXPECT_EQ(created.count(), 0u);
    EXPECT_EQ(pd, nullptr);
}

TEST(Misbehave, ModerationPendingReturnsPendingAndChangesNothing)
{
    RawAdapter a("misbehave=moderation_pending");
    Record &notify = a.record();
    FlushRig rig(a, Record::notify, &notify);
    ASSERT_TRUE(rig.ready());
    // Were it applied, this would hold the notification until two completions arrived.
    EXPECT_STATUS(STATUS_PENDING,
                  rig.cq->Dispatch->NdkControlCqInterruptModeration(rig.cq, MAXULONG, 2));
    rig.arm();
    rig.one_completion();
    EXPECT_TRUE(notify.wait(1)) << "the moderation took effect";
}

TEST(Misbehave, ModerationNotSupportedDespiteTheAdapterFlag)
{
    RawAdapter a("misbehave=moderation_not_supported");
    ASSERT_TRUE(a.info().AdapterFlags & NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED);
    NDK_CQ *cq = a.cq();
    ASSERT_NE(cq, nullptr);
    EXPECT_STATUS(STATUS_NOT_SUPPORTED,
                  cq->Dispatch->NdkControlCqInterruptModeration(cq, 100, 4));
}

// ---- hold / release / held ----------------------------------------------------------------

// Wait (at most kWait) until the knob `held` reads `value`.
bool held_becomes(RawAdapter &a, const std::string &value)
{
    auto deadline = std::chrono::steady_clock::now() + kWait;
    while (a.knob("held") != value) {
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

TEST(Hold, NamesMustBeDispatchFunctionsAndHeldIsReadOnly)
{
    RawAdapter a;
    EXPECT_EQ(a.knob("held"), "0");
    EXPECT_EQ(a.knob("hold"), "");
    std::string reply;
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, control(a, "hold", "NdkNoSuchFunction", reply));
    EXPECT_NE(reply.find("NdkNoSuchFunction"), std::string::npos);
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, control(a, "held", "1", reply));
    for (const char *name : {"NdkGetCqResults", "NdkGetCqResultsEx", "NdkArmCq", "NdkSend",
                             "NdkWrite", "NdkRead", "NdkReceive", "NdkSrqReceive", "NdkCloseQp",
                             "NdkRegisterMr", "NdkConnect"}) {
        EXPECT_STATUS(STATUS_SUCCESS, a.set("hold", name)) << name;
        EXPECT_EQ(a.knob("hold"), name);
    }
    EXPECT_STATUS(STATUS_SUCCESS, a.set("release", "1")); // also disarms a hold that caught nothing
    EXPECT_EQ(a.knob("hold"), "");
}

// One holdable call per case, each on an object of an unconnected adapter.
struct HoldCase {
    const char *function;
    std::function<void(NDK_CQ *, NDK_QP *, NDK_SRQ *)> call;
};

// Names the case in test listings (CTest shows the parameter).
void PrintTo(const HoldCase &c, std::ostream *out) { *out << c.function; }

class HoldEach : public ::testing::TestWithParam<HoldCase> {};

TEST_P(HoldEach, BlocksTheNextCallUntilReleaseAndOnlyThatOne)
{
    RawAdapter a;
    NDK_CQ *cq = a.cq();
    NDK_PD *pd = a.pd();
    ASSERT_TRUE(cq && pd);
    NDK_SRQ *srq = a.srq(pd);
    NDK_QP *qp = a.qp(pd, cq, cq);
    ASSERT_TRUE(srq && qp);
    const HoldCase &c = GetParam();
    ASSERT_STATUS(STATUS_SUCCESS, a.set("hold", c.function));
    std::atomic<bool> returned{false};
    std::thread caller([&] {
        c.call(cq, qp, srq);
        returned = true;
    });
    ASSERT_TRUE(held_becomes(a, "1")) << c.function << " was not caught";
    EXPECT_FALSE(returned.load());
    EXPECT_EQ(a.knob("hold"), "") << "consumed by the call it caught";
    // No provider lock is taken yet: the same function runs meanwhile on this thread.
    c.call(cq, qp, srq);
    EXPECT_STATUS(STATUS_SUCCESS, a.set("release", "1"));
    caller.join();
    EXPECT_TRUE(returned.load());
    EXPECT_EQ(a.knob("held"), "0");
}

INSTANTIATE_TEST_SUITE_P(
    Functions, HoldEach,
    ::testing::Values(
        HoldCase{"NdkGetCqResults",
                 [](NDK_CQ *cq, NDK_QP *, NDK_SRQ *) {
                     NDK_RESULT r[4];
                     cq->Dispatch->NdkGetCqResults(cq, r, 4);
                 }},
        HoldCase{"NdkGetCqResultsEx",
                 [](NDK_CQ *cq, NDK_QP *, NDK_SRQ *) {
                     NDK_RESULT_EX r[4];
                     cq->Dispatch->NdkGetCqResultsEx(cq, r, 4);
                 }},
        HoldCase{"NdkArmCq",
                 [](NDK_CQ *cq, NDK_QP *, NDK_SRQ *) {
                     cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
                 }},
        HoldCase{"NdkSend",
                 [](NDK_CQ *, NDK_QP *qp, NDK_SRQ *) {
                     qp->Dispatch->NdkSend(qp, nullptr, nullptr, 0, 0);
                 }},
        HoldCase{"NdkWrite",
                 [](NDK_CQ *, NDK_QP *qp, NDK_SRQ *) {
                     qp->Dispatch->NdkWrite(qp, nullptr, nullptr, 0, 0, 0, 0);
                 }},
        HoldCase{"NdkRead",
                 [](NDK_CQ *, NDK_QP *qp, NDK_SRQ *) {
                     qp->Dispatch->NdkRead(qp, nullptr, nullptr, 0, 0, 0, 0);
                 }},
        HoldCase{"NdkReceive",
                 [](NDK_CQ *, NDK_QP *qp, NDK_SRQ *) {
                     qp->Dispatch->NdkReceive(qp, nullptr, nullptr, 0);
                 }},
        HoldCase{"NdkSrqReceive",
                 [](NDK_CQ *, NDK_QP *, NDK_SRQ *srq) {
                     srq->Dispatch->NdkSrqReceive(srq, nullptr, nullptr, 0);
                 }}),
    [](const ::testing::TestParamInfo<HoldCase> &info) {
        return std::string(info.param.function);
    });

TEST(Hold, TheAdapterCloseReleasesAHeldCall)
{
    RawAdapter a;
    NDK_CQ *cq = a.cq();
    ASSERT_NE(cq, nullptr);
    ASSERT_STATUS(STATUS_SUCCESS, a.set("hold", "NdkArmCq"));
    std::thread caller([cq] { cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY); });
    ASSERT_TRUE(held_becomes(a, "1"));
    a.close(); // lets the call finish on the live CQ before anything is torn down
    caller.join();
}

} // namespace
} // namespace ndktest
