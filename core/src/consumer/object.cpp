#include "ndk/objects.hpp"

#include "ndk/fault.hpp"

#include <iterator>

namespace ndk {

const char *object_type_name(NDK_OBJECT_TYPE type)
{
    static const char *const kNames[] = {"object", "adapter", "QP", "CQ", "MR", "MW",
                                         "PD", "shared endpoint", "connector", "listener", "SRQ"};
    auto index = static_cast<unsigned>(type);
    return index < std::size(kNames) ? kNames[index] : "object";
}

Object::Object(std::shared_ptr<Adapter> adapter, NDK_OBJECT_HEADER *header,
               NDK_FN_CLOSE_OBJECT close_function, std::vector<std::shared_ptr<Object>> holds)
    : adapter_(std::move(adapter)), header_(header), type_(header->ObjectType),
      close_function_(close_function),
      holds_(std::move(holds))
{
}

Object::~Object()
{
    // A handle dropped while open closes its object.  It never waits: the event sink stays in
    // the context table until the provider completes the close (or the adapter goes), so no
    // callback reaches freed memory.  No call can be in flight here: a caller holds a
    // reference for the whole call.
    if (!adapter_->accepts_closes())
        return; // the adapter's close already ended every callback
    Call call;
    {
        std::lock_guard lock(mu_);
        call = close_call_;
    }
    if (!call.valid())
        call = close();
}

void Object::hold(std::shared_ptr<Object> antecedent)
{
    if (!antecedent)
        return;
    std::lock_guard lock(mu_);
    for (const auto &held : holds_)
        if (held == antecedent)
            return;
    holds_.push_back(std::move(antecedent));
}

bool Object::is_open() const
{
    if (adapter_->inherited())
        return false; // without mu_: a parent's thread may have held it at the fork
    std::lock_guard lock(mu_);
    return !close_call_.valid() && adapter_->is_open();
}

bool Object::close_completed() const
{
    return !adapter_->accepts_closes() || close_done_->load();
}

std::vector<CloseSignal::Watch> Object::watch_close(const CloseSignal::Wake &wake) const
{
    std::vector<CloseSignal::Watch> watches;
    watches.push_back(CloseSignal::watch(close_signal_, wake));
    watches.push_back(adapter_->watch_close(wake));
    return watches;
}

void Object::check_open() const
{
    if (adapter_->inherited())
        adapter_->check_open(); // InheritedError
    if (!is_open())
        throw ClosedError(std::string(object_type_name(type_)) + " is closed");
}

InCall Object::enter() const
{
    adapter_->enter_call(); // ClosedError once the adapter is closing
    InCall in_call(nullptr, adapter_.get());
    std::lock_guard lock(mu_);
    if (close_call_.valid())
        throw ClosedError(std::string(object_type_name(type_)) + " is closed");
    ++calls_in_flight_;
    in_call.object_ = const_cast<Object *>(this);
    fault::enter_closable(&closing_);
    return in_call;
}

void Object::leave() const
{
    fault::leave_closable(&closing_);
    Call deferred;
    {
        std::lock_guard lock(mu_);
        if (--calls_in_flight_ == 0 && close_deferred_) {
            close_deferred_ = false;
            deferred = close_call_;
        }
    }
    if (deferred.valid())
        const_cast<Object *>(this)->issue_close(std::move(deferred));
}

InCall::~InCall()
{
    // The object's deferred close is issued before the adapter's, which closes after it.
    if (object_)
        object_->leave();
    if (adapter_)
        adapter_->leave();
}

Call Object::close()
{
    if (adapter_->inherited()) // the parent's object: the child leaves it as it is
        return Call::inline_result(STATUS_SUCCESS);
    std::unique_lock lock(mu_);
    if (close_call_.valid())
        return close_call_;
    closing_.store(true);
    if (!adapter_->begin_close()) {
        close_call_ = Call::inline_result(STATUS_SUCCESS); // closed with its adapter
        close_done_->store(true);
        lock.unlock();
        close_signal_->notify();
        return close_call_;
    }
    close_call_ = Call::begin();
    Call call = close_call_;
    if (calls_in_flight_ > 0) {
        // The call still inside the provider issues it on its way out, before it lets the
        // adapter's close go on.  A call the fault layer holds goes on now (CLOSE-HELD).
        close_deferred_ = true;
        lock.unlock();
        close_signal_->notify();
        fault::wake_holds();
        adapter_->end_close();
        return call;
    }
    lock.unlock();
    close_signal_->notify();
    issue_close(call);
    adapter_->end_close();
    return call;
}

void Object::issue_close(Call call)
{
    // No event may follow the close (3.1).  The completion holds no reference to the adapter:
    // it may run on the provider's thread and be freed wherever completions are, and a last
    // adapter reference must never go there (its close would run on that thread).
    if (event_context_)
        call.on_complete(
            [context = event_context_](NTSTATUS) { Adapter::forget_event_context(context); });
    if (auto held = held_until_closed()) // dropped as the close completes, on its thread
        call.on_complete([held = std::move(held)](NTSTATUS) mutable { held.reset(); });
    // Nothing issued on the object completes any more: the waits for it end (WAIT-CLOSED).
    call.on_complete([done = close_done_, signal = close_signal_](NTSTATUS) {
        done->store(true);
        signal->notify();
    });
    closing();
    void *context = call.context(*adapter());
    NTSTATUS status = close_function_(header_, Call::close_completion, context);
    call.returned(status, context);
}

} // namespace ndk
