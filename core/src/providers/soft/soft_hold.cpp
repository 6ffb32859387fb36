#include "soft_hold.hpp"

namespace ndk::soft {

CallHold::~CallHold()
{
    std::lock_guard lock(mu_);
    disarm();
}

bool CallHold::is_knob(std::string_view key)
{
    return key == "hold" || key == "release" || key == "held";
}

void CallHold::disarm()
{
    if (!armed_)
        return;
    armed_ = false;
    function_.clear();
    armed_anywhere_.fetch_sub(1, std::memory_order_relaxed);
}

NTSTATUS CallHold::set(std::string_view key, const std::string &value, std::string &reply)
{
    std::lock_guard lock(mu_);
    if (key == "hold") {
        if (!is_holdable_function(value)) {
            reply = "knob hold=" + value + ": not a dispatch function of the soft provider";
            return STATUS_INVALID_PARAMETER;
        }
        if (!armed_)
            armed_anywhere_.fetch_add(1, std::memory_order_relaxed);
        armed_ = true;
        function_ = value;
        return STATUS_SUCCESS;
    }
    if (key == "release") {
        // Lets every held call go, and disarms a hold that caught nothing yet.
        disarm();
        for (auto &[id, caught] : caught_)
            caught.released = true;
        changed_.notify_all();
        return STATUS_SUCCESS;
    }
    reply = "knob " + std::string(key) + " is read-only";
    return STATUS_INVALID_PARAMETER;
}

NTSTATUS CallHold::get(std::string_view key, std::string &value) const
{
    std::lock_guard lock(mu_);
    if (key == "hold") {
        value = function_;
        return STATUS_SUCCESS;
    }
    if (key == "held") {
        size_t blocked = 0;
        for (const auto &[id, caught] : caught_)
            blocked += caught.released ? 0 : 1;
        value = std::to_string(blocked);
        return STATUS_SUCCESS;
    }
    value.clear();
    return STATUS_SUCCESS; // `release` has no value to read
}

CallHold::Ticket CallHold::enter(const SoftAdapter *adapter, std::string_view function)
{
    std::unique_lock lock(mu_);
    if (!armed_ || function_ != function)
        return {};
    disarm(); // one call only
    uint64_t id = next_id_++;
    Caught &caught = caught_[id];
    caught.adapter = adapter;
    changed_.wait(lock, [&caught] { return caught.released; });
    return Ticket(this, id);
}

void CallHold::returned(uint64_t id)
{
    // Notified under the lock: release_adapter() may return, and the miniport with this hold
    // be destroyed, as soon as the lock is free.
    std::lock_guard lock(mu_);
    caught_.erase(id);
    changed_.notify_all();
}

void CallHold::release_adapter(const SoftAdapter *adapter)
{
    std::unique_lock lock(mu_);
    for (auto &[id, caught] : caught_)
        if (caught.adapter == adapter)
            caught.released = true;
    changed_.notify_all();
    changed_.wait(lock, [this, adapter] {
        for (const auto &[id, caught] : caught_)
            if (caught.adapter == adapter)
                return false;
        return true;
    });
}

} // namespace ndk::soft
