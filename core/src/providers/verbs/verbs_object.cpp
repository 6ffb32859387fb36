#include "verbs_adapter.hpp"

namespace ndk::verbs {

NTSTATUS Object::close(NDK_FN_CLOSE_COMPLETION completion, PVOID context)
{
    VerbsAdapter &adapter = this->adapter();
    {
        std::lock_guard lock(adapter.mu());
        // Pending: completed on the engine once the last successor, child or request is gone.
        if (NTSTATUS status = close_or_pend(
                completion, context,
                [&] {
                    adapter.registry_.retire(*this);
                    on_close(); // may complete (and release) its own requests in flight
                });
            status != STATUS_SUCCESS)
            return status;
    }
    // On the engine: a callback of this object may be running there right now, and none may
    // run after this returns.
    adapter.engine().run([this] { finish(); });
    return STATUS_SUCCESS;
}

void Object::on_last_dependent()
{
    if (!claim_finish())
        return;
    adapter().engine().post([this] { finish(); });
}

void Object::finish()
{
    destroy_resources();
    call_close_completion(); // before the antecedents' closes can complete (digest 3.1)
    VerbsAdapter &adapter = this->adapter();
    std::lock_guard lock(adapter.mu());
    release_antecedents([&adapter](const kit::Lifetime *antecedent) {
        return adapter.exists(static_cast<const Object *>(antecedent));
    });
    adapter.forget(this);
    delete this;
}

void Object::force_destroy()
{
    destroy_resources();
    std::lock_guard lock(adapter().mu());
    adapter().forget(this);
    delete this;
}

} // namespace ndk::verbs
