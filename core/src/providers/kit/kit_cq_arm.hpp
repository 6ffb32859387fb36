// A CQ's arm and notification state (digest 3.2, 1.3), for any provider:
//  - NdkArmCq before the arm is satisfied merges the two arms: ANY wins, then SOLICITED;
//  - an arm is satisfied once, by what arrived since the last callback: ANY by any completion,
//    success or error (docs/semantics.md, ARM-ANY), SOLICITED by a solicited send or an error;
//  - a CQ error satisfies every arm type, once, and is the last thing the CQ reports
//    (CQ-ERROR-ARM); an unarmed CQ reports it at its next arm.
// The provider keeps one under its lock, tells it what arrived, and calls the consumer's
// notification with what take() returns, from a thread that is not inside the consumer's call.
#pragma once

#include "ndk/ndkpi.h"

#include <cstdint>
#include <optional>

namespace ndk::kit {

class CqArm {
public:
    // NdkArmCq.  A type above NDK_CQ_NOTIFY_SOLICITED is no arm: false, nothing changes.
    bool arm(ULONG type);
    bool armed() const { return armed_ != 0; }
    ULONG type() const { return armed_ - 1; } // only while armed()

    // A completion arrived; `solicits` when it satisfies SOLICITED (a solicited send, or an
    // error completion).
    void arrived(bool solicits)
    {
        ++arrived_;
        if (solicits)
            ++solicited_;
    }
    // Completions since the last callback (interrupt moderation counts them).
    ULONG arrived_count() const { return arrived_; }

    // For a provider that counts its completions anyway (a ring's absolute count of pushes):
    // instead of arrived() for each completion, it says solicited_arrived() for a completion
    // that satisfies SOLICITED and catch_up(count) before arm() and take(), so its producers
    // write nothing of the arm per completion while no arm is pending (the arm's line then
    // stays in the consumer's cache).  Same rules: catch_up counts what arrived since.
    void solicited_arrived() { ++solicited_; }
    void catch_up(uint64_t count)
    {
        arrived_ += static_cast<ULONG>(count - counted_);
        counted_ = count;
    }

    // The notification the arm is owed now: the CQ's error (`cq_error` other than SUCCESS) once,
    // or STATUS_SUCCESS when what arrived matches the arm and `held_back()` (interrupt
    // moderation) does not hold it; then the arm is spent.  nullopt: no notification now.
    template <class HeldBack>
    std::optional<NTSTATUS> take(NTSTATUS cq_error, HeldBack &&held_back)
    {
        if (armed_ == 0)
            return std::nullopt;
        if (cq_error != STATUS_SUCCESS) {
            if (error_reported_)
                return std::nullopt;
            error_reported_ = true;
            armed_ = 0;
            return cq_error;
        }
        if (!matches() || held_back())
            return std::nullopt;
        armed_ = 0; // once per arm
        arrived_ = 0;
        solicited_ = 0;
        return STATUS_SUCCESS;
    }
    std::optional<NTSTATUS> take(NTSTATUS cq_error)
    {
        return take(cq_error, [] { return false; });
    }

private:
    bool matches() const
    {
        return (type() == NDK_CQ_NOTIFY_ANY && arrived_ > 0) ||
               (type() == NDK_CQ_NOTIFY_SOLICITED && solicited_ > 0);
    }

    ULONG armed_ = 0; // 0: not armed; else NDK_CQ_NOTIFY_* + 1
    ULONG arrived_ = 0;
    ULONG solicited_ = 0;
    uint64_t counted_ = 0; // catch_up's count when last caught up
    bool error_reported_ = false;
};

} // namespace ndk::kit
