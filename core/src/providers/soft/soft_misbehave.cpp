#include "soft_misbehave.hpp"

#include "soft_objects.hpp"

#include <atomic>
#include <iterator>
#include <pthread.h>
#include <sched.h>
#include <thread>

namespace ndk::soft {
namespace {

struct Named {
    Misbehave mode;
    const char *name;
};
const Named kNames[] = {
    {Misbehave::None, "none"},
    {Misbehave::CompleteAfterInline, "complete_after_inline"},
    {Misbehave::CompleteTwice, "complete_twice"},
    {Misbehave::NeverComplete, "never_complete"},
    {Misbehave::OutParamAfterPending, "out_param_after_pending"},
    {Misbehave::RequestCompleteAfterInline, "request_complete_after_inline"},
    {Misbehave::RequestCompleteTwice, "request_complete_twice"},
    {Misbehave::RequestNeverComplete, "request_never_complete"},
    {Misbehave::HeaderVersion, "header_version"},
    {Misbehave::HeaderType, "header_type"},
    {Misbehave::HeaderReserved, "header_reserved"},
    {Misbehave::DispatchNull, "dispatch_null"},
    {Misbehave::CallbackAfterClose, "callback_after_close"},
    {Misbehave::CloseAntecedentEarly, "close_antecedent_early"},
    {Misbehave::NotifyUnarmed, "notify_unarmed"},
    {Misbehave::NotifyTwice, "notify_twice"},
    {Misbehave::ConcurrentCqCallbacks, "concurrent_cq_callbacks"},
    {Misbehave::ProviderErrorCode, "provider_error_code"},
    {Misbehave::DropInvalidateToken, "drop_invalidate_token"},
    {Misbehave::CompleteSilent, "complete_silent"},
    {Misbehave::DropCompletion, "drop_completion"},
    {Misbehave::ReorderCompletions, "reorder_completions"},
    {Misbehave::UndocumentedStatus, "undocumented_status"},
    {Misbehave::ModerationPending, "moderation_pending"},
    {Misbehave::ModerationNotSupported, "moderation_not_supported"},
};
static_assert(std::size(kNames) == static_cast<size_t>(Misbehave::ModerationNotSupported) + 1,
              "every Misbehave has a name");

// Wait for `done` by spinning, not sleeping: a thread woken from a sleep arrives
// microseconds late, long after a short callback on the other thread has returned.
template <class Done>
void spin_until(Done done)
{
    for (unsigned spins = 1; !done(); ++spins)
        if (spins % 4096 == 0)
            std::this_thread::yield(); // the other thread may need this core
}

// Puts the calling thread and a second one on two different CPUs for the lifetime of this
// object (when the process may use two), restoring the caller's CPUs at the end: threads that
// share a CPU only ever take turns, whatever they do.
class SeparateCpus {
public:
    SeparateCpus()
    {
        if (pthread_getaffinity_np(pthread_self(), sizeof original_, &original_) != 0)
            return;
        int here = sched_getcpu();
        if (here < 0 || !CPU_ISSET(here, &original_) || CPU_COUNT(&original_) < 2)
            return;
        others_ = original_;
        CPU_CLR(here, &others_);
        cpu_set_t mine;
        CPU_ZERO(&mine);
        CPU_SET(here, &mine);
        pinned_ = pthread_setaffinity_np(pthread_self(), sizeof mine, &mine) == 0;
    }
    ~SeparateCpus()
    {
        if (pinned_)
            pthread_setaffinity_np(pthread_self(), sizeof original_, &original_);
    }
    SeparateCpus(const SeparateCpus &) = delete;
    SeparateCpus &operator=(const SeparateCpus &) = delete;

    // From the second thread.
    void place_second() const
    {
        if (pinned_)
            pthread_setaffinity_np(pthread_self(), sizeof others_, &others_);
    }

private:
    cpu_set_t original_{};
    cpu_set_t others_{};
    bool pinned_ = false;
};

// A barrier for two threads, reused round after round.
class SpinRounds {
public:
    void arrive_and_wait(int round)
    {
        arrived_.fetch_add(1, std::memory_order_acq_rel);
        spin_until([&] { return arrived_.load(std::memory_order_acquire) >= 2 * (round + 1); });
    }

private:
    std::atomic<int> arrived_{0};
};

} // namespace

std::optional<Misbehave> parse_misbehave(std::string_view name)
{
    for (const auto &entry : kNames)
        if (name == entry.name)
            return entry.mode;
    return std::nullopt;
}

const char *misbehave_name(Misbehave mode)
{
    for (const auto &entry : kNames)
        if (entry.mode == mode)
            return entry.name;
    return "?";
}

std::string misbehave_names()
{
    std::string names;
    for (const auto &entry : kNames)
        names += (names.empty() ? "" : ", ") + std::string(entry.name);
    return names;
}

void misbehave_header(Misbehave mode, NDK_OBJECT_HEADER &header)
{
    switch (mode) {
    case Misbehave::HeaderVersion: ++header.Version.Major; break;
    case Misbehave::HeaderType: header.ObjectType = NdkObjectTypeMax; break;
    case Misbehave::HeaderReserved: header.NdkReserved.rf[0] = reinterpret_cast<PVOID>(1); break;
    default: break;
    }
}

std::function<void()> cq_callback_after_close(SoftObject &object)
{
    if (object.type() != NdkObjectTypeCq)
        return {};
    auto &cq = static_cast<SoftCq &>(object);
    return [notify = cq.notify, context = cq.notify_context] { notify(context, STATUS_SUCCESS); };
}

void call_cq_notification(Misbehave mode, NDK_FN_CQ_NOTIFICATION_CALLBACK notify, PVOID context,
                          NTSTATUS status)
{
    if (mode == Misbehave::NotifyTwice) {
        notify(context, status);
        notify(context, status); // after the first returned: a second callback for one arm
        return;
    }
    if (mode != Misbehave::ConcurrentCqCallbacks) {
        notify(context, status);
        return;
    }
    // Both threads, on two CPUs, are released together every round and call the callback at
    // once: one leads, the other calls as soon as the leader's call has begun (a callback may
    // be far shorter than a thread's wake-up, so a plain release would let the first call end
    // before the second starts).  They take turns leading.  The second thread is joined
    // before the engine moves on, so nothing outlives this delivery.
    SeparateCpus cpus;
    SpinRounds rounds;
    std::atomic<int> leading{-1}; // the round whose leader is calling
    auto deliver = [&](int me) {
        if (me == 1)
            cpus.place_second();
        for (int round = 0; round < kConcurrentCallbackRounds; ++round) {
            rounds.arrive_and_wait(round);
            if (round % 2 == me)
                leading.store(round, std::memory_order_release);
            else
                spin_until([&] { return leading.load(std::memory_order_acquire) == round; });
            notify(context, status);
        }
    };
    std::thread second(deliver, 1);
    deliver(0);
    second.join();
}

void post_shuffled_initiator_result(Misbehave mode, SoftQp &qp, const NDK_RESULT_EX &result)
{
    InitiatorCompletionShuffle &shuffle = qp.completion_shuffle;
    if (mode == Misbehave::DropCompletion) {
        if (result.Status == STATUS_SUCCESS && ++shuffle.successes % 2 == 1)
            return; // the request executed and its slot is free; only the completion is lost
        post_result(*qp.initiator_cq, result, false);
        return;
    }
    if (!shuffle.held_back) { // reorder_completions: the first of a pair waits for the second
        shuffle.held_back = result;
        return;
    }
    NDK_RESULT_EX first = *shuffle.held_back;
    shuffle.held_back.reset();
    post_result(*qp.initiator_cq, result, false);
    post_result(*qp.initiator_cq, first, false);
}

void release_held_back_completion(SoftQp &qp)
{
    if (!qp.completion_shuffle.held_back)
        return;
    NDK_RESULT_EX held = *qp.completion_shuffle.held_back;
    qp.completion_shuffle.held_back.reset();
    post_result(*qp.initiator_cq, held, false);
}

} // namespace ndk::soft
