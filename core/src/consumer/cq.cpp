#include "ndk/objects.hpp"

#include <sched.h>

namespace ndk {

Cq::Cq(std::shared_ptr<Adapter> adapter, NDK_CQ *cq, std::shared_ptr<CqEvents> events,
       void *event_context)
    : Object(std::move(adapter), &cq->Header, cq->Dispatch->NdkCloseCq), ndk_(cq),
      events_(std::move(events))
{
    event_context_ = event_context;
}

void Cq::notification(PVOID context, NTSTATUS status)
{
    auto events = Adapter::find_event_sink<CqEvents>(context);
    if (!events)
        return; // after the CQ's close completed, or a context that is not a CQ's
    events->gate.pass();
    events->notification_cpu.store(sched_getcpu()); // before the push a waiter wakes on
    events->notifications.push(status);
}

void CallbackGate::close() { closed_.store(true); }

void CallbackGate::open()
{
    {
        std::lock_guard lock(mu_);
        closed_.store(false);
    }
    cv_.notify_all();
}

int CallbackGate::waiting() const
{
    std::lock_guard lock(mu_);
    return waiting_;
}

void CallbackGate::pass()
{
    if (!closed_.load(std::memory_order_acquire)) [[likely]]
        return;
    std::unique_lock lock(mu_);
    ++waiting_;
    cv_.wait(lock, [this] { return !closed_.load(); });
    --waiting_;
}

Call Cq::resize(ULONG cq_depth)
{
    auto in_call = enter();
    Call call = Call::begin();
    void *context = call.context(*adapter());
    NTSTATUS status = ndk_->Dispatch->NdkResizeCq(ndk_, cq_depth, Call::request_completion, context);
    call.returned(status, context);
    return call;
}

void Cq::arm(ULONG type)
{
    auto in_call = enter();
    std::lock_guard lock(poll_mu_);
    ndk_->Dispatch->NdkArmCq(ndk_, type);
}

std::vector<NDK_RESULT> Cq::get_results(ULONG n)
{
    auto in_call = enter();
    std::vector<NDK_RESULT> results(n);
    std::lock_guard lock(poll_mu_);
    results.resize(n ? ndk_->Dispatch->NdkGetCqResults(ndk_, results.data(), n) : 0);
    return results;
}

std::vector<NDK_RESULT_EX> Cq::get_results_ex(ULONG n)
{
    std::vector<NDK_RESULT_EX> results(n);
    results.resize(get_results_into(results));
    return results;
}

ULONG Cq::get_results_into(std::span<NDK_RESULT_EX> results)
{
    auto in_call = enter();
    if (results.empty())
        return 0;
    std::lock_guard lock(poll_mu_);
    ULONG n = ndk_->Dispatch->NdkGetCqResultsEx(ndk_, results.data(),
                                                static_cast<ULONG>(results.size()));
    // Before NDKPI 2.1 ProviderErrorCode's offset is padding (digest 2.3): whatever a provider
    // left there is no error code, so the consumer sees 0 ("not provided").
    NDK_VERSION v = ndk_->Header.Version;
    if (v.Major < 2 || (v.Major == 2 && v.Minor < 1))
        for (ULONG i = 0; i < n && i < results.size(); ++i)
            results[i].ProviderErrorCode = 0;
    return n;
}

NTSTATUS Cq::control_interrupt_moderation(ULONG interval, ULONG count)
{
    auto in_call = enter();
    return ndk_->Dispatch->NdkControlCqInterruptModeration(ndk_, interval, count);
}

} // namespace ndk
