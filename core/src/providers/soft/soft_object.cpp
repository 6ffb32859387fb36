#include "soft_object.hpp"

#include "soft_adapter.hpp"
#include "soft_objects.hpp"

#include <chrono>

namespace ndk::soft {

void deliver_event(SoftObject &object, std::function<void()> callback)
{
    // An event that arises once the close completion is queued (a CQ's moderation timer,
    // which is no dependent, firing after the CQ's last QP closed) would be delivered after
    // that completion, on an object already destroyed: drop it (digest 3.1, no callback after
    // the close completion).
    if (object.close_requested() && object.close_completion_scheduled())
        return;
    object.add_dependent();
    SoftAdapter &adapter = object.adapter();
    adapter.deliver([&object, &adapter, callback = std::move(callback)] {
        callback();
        std::lock_guard lock(adapter.mu());
        object.release_dependent();
    });
}

void SoftObject::depend_on(SoftObject &antecedent)
{
    antecedent.add_dependent();
    antecedents_.push_back(&antecedent);
}

NTSTATUS SoftObject::close(NDK_FN_CLOSE_COMPLETION completion, PVOID context)
{
    SoftAdapter &adapter = adapter_;
    std::unique_lock lock(adapter.mu_);
    if (close_requested_)
        return STATUS_INVALID_DEVICE_STATE; // a second close of one object: consumer error
    close_requested_ = true;
    adapter.live_.erase(&header());
    on_close();
    Misbehave mode = adapter.misbehave();
    if (mode == Misbehave::CallbackAfterClose)
        after_close_ = cq_callback_after_close(*this);
    if (mode == Misbehave::CloseAntecedentEarly && dependents_ > 0) {
        // Broken on purpose: SUCCESS while dependents remain.  The object lives on as a zombie
        // and goes with its last dependent, with a close completion nobody hears.
        close_completion_ = [](PVOID) {};
        return STATUS_SUCCESS;
    }
    bool pend = dependents_ > 0 ||
                (completion != nullptr && adapter.knobs().should_pend(CallKind::Close));
    if (!pend) {
        std::function<void()> after = std::move(after_close_);
        adapter.destroy(*this);
        if (after) {
            // From the engine, a little later, so that it comes after this close returned.
            adapter.engine_.post_after(std::chrono::milliseconds(10), std::move(after));
        }
        return STATUS_SUCCESS;
    }
    if (completion == nullptr) {
        // Successors are open but there is nobody to tell: the consumer broke the contract.
        // Treat the close as a dereference (digest 3.1) and free the object with the last one.
        close_completion_ = [](PVOID) {};
    } else {
        close_completion_ = completion;
    }
    close_context_ = context;
    if (dependents_ == 0)
        schedule_close_completion();
    return STATUS_PENDING;
}

void SoftObject::release_dependent()
{
    if (--dependents_ == 0 && close_requested_ && close_completion_ != nullptr)
        schedule_close_completion();
}

void SoftObject::schedule_close_completion()
{
    if (completion_scheduled_)
        return;
    completion_scheduled_ = true;
    SoftAdapter &adapter = adapter_;
    adapter.engine_.post([this, &adapter] {
        std::function<void()> after = std::move(after_close_);
        close_completion_(close_context_);
        {
            // Only now may antecedents complete their own closes (digest 3.1).
            std::lock_guard lock(adapter.mu_);
            adapter.destroy(*this);
        }
        if (after)
            after(); // misbehave=callback_after_close
    });
}

void SoftObject::release_antecedents()
{
    for (SoftObject *antecedent : antecedents_)
        antecedent->release_dependent();
    antecedents_.clear();
}

} // namespace ndk::soft
