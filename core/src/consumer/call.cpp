#include "ndk/call.hpp"

#include "ndk/status.hpp"

#include "context_table.hpp"
#include "ndk/objects.hpp"

#include <vector>

namespace ndk {

namespace {

// The provider gets a handle to the call's state in the context table; the completion takes
// it out.  A call that completes inline erases it at once, since no completion may come: a
// completion after that (or a second one, or a forged context) matches nothing.
ContextTable &contexts() { return ContextTable::instance(); }

// References released by completions.  A completion runs on the provider's thread; dropping
// the last reference to a handle there would run the handle's close (or the adapter's
// blocking close) on the very thread that must deliver it.  So completions park what they
// release here, and the consumer's next call frees it on the consumer's thread.
// Immortal, like the references it may hold at exit: freeing them from a static destructor
// would close adapters after the globals they need are gone.
std::mutex &reaper_mu = *new std::mutex;
std::vector<std::shared_ptr<void>> &reaper = *new std::vector<std::shared_ptr<void>>;

void park(std::shared_ptr<void> reference)
{
    std::lock_guard lock(reaper_mu);
    reaper.push_back(std::move(reference));
}

} // namespace

void release_parked()
{
    std::vector<std::shared_ptr<void>> parked;
    {
        std::lock_guard lock(reaper_mu);
        parked.swap(reaper);
    }
    // Destroyed here, outside the lock, on the consumer's thread.
}

Call Call::begin(std::function<std::shared_ptr<Object>(NDK_OBJECT_HEADER *)> wrap)
{
    release_parked();
    auto state = std::make_shared<CallState>();
    state->wrap = std::move(wrap);
    return Call(std::move(state));
}

void *Call::context(Adapter &owner) const
{
    void *context = contexts().add(state_);
    owner.track_context(context);
    return context;
}

Call Call::inline_result(NTSTATUS status)
{
    Call call = begin();
    std::lock_guard lock(call.state_->mu);
    call.state_->returned = true;
    call.state_->finishing = true; // nothing left to record: later actions run at once
    call.state_->inline_status = status;
    return call;
}

void Call::finish(CallState &state, NTSTATUS status, std::unique_lock<std::mutex> &lock)
{
    // The completion action runs before the call counts as done, so whoever waits on the call
    // sees its effects (e.g. the registered range of an MR).
    auto action = std::move(state.on_complete);
    state.on_complete = nullptr;
    state.finishing = true; // actions added from now on run at once
    if (action) {
        lock.unlock();
        action(status);
        park(std::make_shared<std::function<void(NTSTATUS)>>(std::move(action)));
        lock.lock();
    }
}

void Call::adopt(CallState &state, NDK_OBJECT_HEADER *created)
{
    // Once: a provider that also completes a create it returned inline hands the same object
    // twice, and two handles would close it twice.
    if (!state.wrap || state.object || !state.fault.empty())
        return;
    if (created == nullptr) {
        // digest 1.0 (NDK_FN_CREATE_COMPLETION): a create that succeeded hands over its object;
        // one that says STATUS_SUCCESS with none leaves the consumer nothing to use or close.
        state.fault = "the provider's create succeeded without an object (a NULL out-parameter "
                      "or completion object)";
        return;
    }
    try {
        state.object = state.wrap(created);
    } catch (const ProviderFault &fault) {
        state.fault = fault.what();
    }
}

void Call::returned(NTSTATUS status, void *context, NDK_OBJECT_HEADER *created) const
{
    if (status != STATUS_PENDING)
        contexts().erase(context);
    std::unique_lock lock(state_->mu);
    if (status == STATUS_PENDING) {
        state_->returned = true;
        state_->inline_status = status;
        state_->cv.notify_all();
        return; // the completion will come, with the context
    }
    if (status == STATUS_SUCCESS)
        adopt(*state_, created);
    finish(*state_, status, lock);
    state_->returned = true;
    state_->inline_status = status;
    state_->cv.notify_all();
}

void Call::on_complete(std::function<void(NTSTATUS)> action) const
{
    std::unique_lock lock(state_->mu);
    if (!state_->finishing) {
        if (state_->on_complete) {
            state_->on_complete = [first = std::move(state_->on_complete),
                                   then = std::move(action)](NTSTATUS status) {
                first(status);
                then(status);
            };
        } else {
            state_->on_complete = std::move(action);
        }
        return;
    }
    // Finishing or done: run now.  The status is final once finishing began.
    lock.unlock();
    wait();
    action(result());
}

void Call::create_completion(PVOID context, NTSTATUS status, NDK_OBJECT_HEADER *object)
{
    auto owned = contexts().take<CallState>(context);
    if (!owned)
        return; // late, repeated or forged: nothing of ours to touch
    CallState &state = *owned;
    {
        std::unique_lock lock(state.mu);
        if (status == STATUS_SUCCESS)
            adopt(state, object);
        finish(state, status, lock);
        ++state.completions;
        state.completion_status = status;
        state.cv.notify_all();
    }
    park(std::move(owned));
}

void Call::request_completion(PVOID context, NTSTATUS status)
{
    auto owned = contexts().take<CallState>(context);
    if (!owned)
        return; // late, repeated or forged: nothing of ours to touch
    CallState &state = *owned;
    {
        std::unique_lock lock(state.mu);
        finish(state, status, lock);
        ++state.completions;
        state.completion_status = status;
        state.cv.notify_all();
    }
    park(std::move(owned));
}

void Call::close_completion(PVOID context) { request_completion(context, STATUS_SUCCESS); }

NTSTATUS Call::status() const
{
    std::lock_guard lock(state_->mu);
    return state_->inline_status;
}

int Call::completions() const
{
    std::lock_guard lock(state_->mu);
    return state_->completions;
}

std::optional<NTSTATUS> Call::completion_status() const
{
    std::lock_guard lock(state_->mu);
    if (state_->completions == 0)
        return std::nullopt;
    return state_->completion_status;
}

bool Call::done() const
{
    std::lock_guard lock(state_->mu);
    return (state_->returned && state_->inline_status != STATUS_PENDING) ||
           state_->completions > 0;
}

bool Call::wait(std::optional<Seconds> timeout, const std::atomic<bool> *stop) const
{
    release_parked();
    std::unique_lock lock(state_->mu);
    auto ready = [this] {
        return (state_->returned && state_->inline_status != STATUS_PENDING) ||
               state_->completions > 0;
    };
    auto woken = [&] { return ready() || (stop != nullptr && stop->load()); };
    if (!timeout)
        state_->cv.wait(lock, woken);
    else
        state_->cv.wait_for(lock, *timeout, woken);
    return ready();
}

void Call::wake() const
{
    { std::lock_guard lock(state_->mu); } // as EventQueue::wake: no wait misses it
    state_->cv.notify_all();
}

NTSTATUS Call::result() const
{
    std::lock_guard lock(state_->mu);
    if (state_->completions > 0)
        return state_->completion_status;
    if (state_->returned && state_->inline_status != STATUS_PENDING)
        return state_->inline_status;
    throw std::logic_error("the call has not completed");
}

std::shared_ptr<Object> Call::object() const
{
    std::lock_guard lock(state_->mu);
    if (!state_->fault.empty())
        throw ProviderFault(state_->fault);
    return state_->object;
}

} // namespace ndk
