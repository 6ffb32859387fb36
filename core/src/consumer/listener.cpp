// The listener handle: listening, and the connectors its connect events deliver (digest 1.9,
// 3.5).
#include "ndk/objects.hpp"

#include "wrap.hpp"

namespace ndk {
namespace {

// A close nobody waits for: a connector delivered to a listener that is closing.
void ignore_close(PVOID) {}

void close_unwanted(NDK_CONNECTOR *connector)
{
    if (connector->Dispatch != nullptr && connector->Dispatch->NdkCloseConnector != nullptr)
        connector->Dispatch->NdkCloseConnector(&connector->Header, ignore_close, nullptr);
}

} // namespace

Listener::Listener(std::shared_ptr<Adapter> adapter, NDK_LISTENER *listener,
                   std::shared_ptr<ListenerEvents> events, void *event_context)
    : Object(std::move(adapter), &listener->Header, listener->Dispatch->NdkCloseListener),
      ndk_(listener), events_(std::move(events))
{
    event_context_ = event_context;
}

Listener::~Listener()
{
    // Close here, not in ~Object, so closing() runs while this is still a Listener.
    if (adapter()->is_open())
        close();
}

void Listener::connect_event(PVOID context, NDK_CONNECTOR *connector)
{
    auto events = Adapter::find_event_sink<ListenerEvents>(context);
    if (!events) {
        close_unwanted(connector); // after the listener's close completed: nobody wants it
        return;
    }
    std::lock_guard lock(events->mu);
    if (events->closing) {
        // Nobody will take it.  A raw NDK close, not a handle: this is the provider's thread,
        // where no handle may be freed (ARCHITECTURE, "The C++ consumer API").
        close_unwanted(connector);
        return;
    }
    events->connections.push(connector);
}

void Listener::closing()
{
    std::vector<NDK_CONNECTOR *> unwanted;
    {
        std::lock_guard lock(events_->mu);
        events_->closing = true; // from now on connect_event closes what it gets
        while (auto connector = events_->connections.pop())
            unwanted.push_back(*connector);
    }
    for (NDK_CONNECTOR *connector : unwanted)
        close_unwanted(connector); // outside the lock: the provider is called
}

std::shared_ptr<Connector> Listener::next_connection(std::optional<Call::Seconds> timeout,
                                                    const std::atomic<bool> *stop)
{
    check_open(); // a wait on the event queue, not a call into the provider
    auto connector = events_->connections.pop(timeout, stop);
    if (!connector)
        return nullptr;
    auto self = std::static_pointer_cast<Listener>(shared_from_this());
    check_dispatch(*connector);
    auto handle = std::make_shared<Connector>(adapter(), *connector,
                                              std::vector<std::shared_ptr<Object>>{self});
    adapter()->track(handle);
    return handle;
}

Call Listener::listen(SocketAddress address)
{
    auto in_call = enter();
    Call call = Call::begin();
    void *context = call.context(*adapter());
    NTSTATUS status = ndk_->Dispatch->NdkListen(ndk_, address.get(), address.length,
                                                Call::request_completion, context);
    call.returned(status, context);
    return call;
}

NTSTATUS Listener::get_local_address(SocketAddress &address)
{
    auto in_call = enter();
    address.length = sizeof address.storage;
    return ndk_->Dispatch->NdkGetLocalAddress(ndk_, address.get(), &address.length);
}

void Listener::control_connect_events(bool pause)
{
    auto in_call = enter();
    ndk_->Dispatch->NdkControlConnectEvents(ndk_, pause ? TRUE : FALSE);
}

} // namespace ndk
