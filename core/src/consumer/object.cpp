#include "ndk/objects.hpp"

namespace ndk {

Object::Object(std::shared_ptr<Adapter> adapter, NDK_OBJECT_HEADER *header,
               NDK_FN_CLOSE_OBJECT close_function, std::vector<std::shared_ptr<Object>> holds)
    : adapter_(std::move(adapter)), header_(header), type_(header->ObjectType),
      close_function_(close_function),
      holds_(std::move(holds))
{
}

Object::~Object()
{
    // A handle dropped while open closes its object.  It never waits: the event sink stays
    // alive inside the close's completion action until the provider completes the close, so
    // no callback reaches freed memory, and a close that never completes (a provider breaking
    // digest 3.1) leaks the sink rather than blocking.
    if (!adapter_->is_open())
        return; // the adapter's blocking close already ended every callback
    Call call;
    {
        std::lock_guard lock(mu_);
        call = close_call_;
    }
    if (!call.valid())
        call = close();
    if (event_sink_)
        call.on_complete([sink = event_sink_](NTSTATUS) {});
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
    std::lock_guard lock(mu_);
    return !close_call_.valid() && adapter_->is_open();
}

void Object::check_open() const
{
    static const char *const kNames[] = {"object", "adapter", "QP", "CQ", "MR", "MW",
                                         "PD", "shared endpoint", "connector", "listener", "SRQ"};
    if (!is_open()) {
        auto type = static_cast<unsigned>(type_);
        throw ClosedError(std::string(type < 11 ? kNames[type] : "object") + " is closed");
    }
}

Call Object::close()
{
    std::unique_lock lock(mu_);
    if (close_call_.valid())
        return close_call_;
    if (!adapter_->is_open()) {
        close_call_ = Call::inline_result(STATUS_SUCCESS); // closed with its adapter
        return close_call_;
    }
    close_call_ = Call::begin();
    Call call = close_call_;
    lock.unlock();
    closing();
    void *context = call.context();
    NTSTATUS status = close_function_(header_, Call::close_completion, context);
    call.returned(status, context);
    return call;
}

} // namespace ndk
