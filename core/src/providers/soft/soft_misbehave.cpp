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
    {Misbehave::CallbackAfterClose, "callback_after_close"},
    {Misbehave::CloseAntecedentEarly, "close_antecedent_early"},
    {Misbehave::NotifyUnarmed, "notify_unarmed"},
    {Misbehave::ConcurrentCqCallbacks, "concurrent_cq_callbacks"},
};
static_assert(std::size(kNames) == static_cast<size_t>(Misbehave::ConcurrentCqCallbacks) + 1,
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

} // namespace ndk::soft
