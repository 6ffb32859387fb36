#include "verbs_adapter.hpp"

namespace ndk::verbs {

void Object::depend_on(Object &antecedent)
{
    antecedent.add_dependent();
    antecedents_.push_back(&antecedent);
}

NTSTATUS Object::close(NDK_FN_CLOSE_COMPLETION completion, PVOID context)
{
    VerbsAdapter &adapter = adapter_;
    {
        std::lock_guard lock(adapter.mu());
        if (closing_)
            return STATUS_INVALID_DEVICE_STATE; // a second close (docs/semantics.md)
        closing_ = true;
        adapter.live_.erase(&header());
        in_close_ = true;
        on_close(); // may complete (and release) the object's own requests in flight
        in_close_ = false;
        if (dependents_ > 0) {
            // Completed on the engine once the last successor, child or request is gone; a
            // NULL completion makes the close a dereference (CLOSE-NO-COMPLETION).
            close_completion_ = completion;
            close_context_ = context;
            return STATUS_PENDING;
        }
        finished_ = true;
    }
    // On the engine: a callback of this object may be running there right now, and none may
    // run after this returns.
    adapter.engine().run([this] { finish(); });
    return STATUS_SUCCESS;
}

void Object::release_dependent()
{
    if (--dependents_ > 0 || !closing_ || finished_ || in_close_)
        return;
    finished_ = true;
    adapter_.engine().post([this] { finish(); });
}

void Object::finish()
{
    destroy_resources();
    NDK_FN_CLOSE_COMPLETION completion = close_completion_;
    PVOID context = close_context_;
    if (completion != nullptr)
        completion(context); // before the antecedents' closes can complete (digest 3.1)
    VerbsAdapter &adapter = adapter_;
    std::lock_guard lock(adapter.mu());
    for (Object *antecedent : antecedents_)
        if (adapter.exists(antecedent))
            antecedent->release_dependent();
    adapter.forget(this);
    delete this;
}

void Object::force_destroy()
{
    destroy_resources();
    std::lock_guard lock(adapter_.mu());
    adapter_.forget(this);
    delete this;
}

} // namespace ndk::verbs
