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

NTSTATUS SoftObject::close(NDK_FN_CLOSE_COMPLETION completion, PVOID context)
{
    SoftAdapter &adapter = this->adapter();
    std::unique_lock lock(adapter.mu_);
    if (!begin_close())
        return STATUS_INVALID_DEVICE_STATE; // a second close of one object: consumer error
    adapter.registry_.retire(*this);
    on_close();
    Misbehave mode = adapter.misbehave();
    if (mode == Misbehave::CallbackAfterClose)
        after_close_ = cq_callback_after_close(*this);
    if (mode == Misbehave::CloseAntecedentEarly && dependents() > 0) {
        // Broken on purpose: SUCCESS while dependents remain.  The object lives on as a zombie
        // and goes with its last dependent, with a close completion nobody hears.
        pend_close(nullptr, nullptr);
        return STATUS_SUCCESS;
    }
    if (dependents() == 0) { // inline; the fault layer's close_mode=pending reports it later
        std::function<void()> after = std::move(after_close_);
        adapter.destroy(*this);
        if (after) {
            // From the engine, a little later, so that it comes after this close returned.
            adapter.engine_.post_after(std::chrono::milliseconds(10), std::move(after));
        }
        return STATUS_SUCCESS;
    }
    // A NULL completion with successors open: the consumer broke the contract; the close is a
    // dereference (digest 3.1) and the object goes with the last one.
    pend_close(completion, context);
    if (dependents() == 0)
        schedule_close_completion();
    return STATUS_PENDING;
}

void SoftObject::on_last_dependent()
{
    if (close_pending())
        schedule_close_completion();
}

void SoftObject::schedule_close_completion()
{
    if (completion_scheduled_.exchange(true))
        return;
    SoftAdapter &adapter = this->adapter();
    adapter.engine_.post([this, &adapter] {
        std::function<void()> after = std::move(after_close_);
        call_close_completion();
        {
            // Only now may antecedents complete their own closes (digest 3.1).
            std::lock_guard lock(adapter.mu_);
            adapter.destroy(*this);
        }
        if (after)
            after(); // misbehave=callback_after_close
    });
}

} // namespace ndk::soft
