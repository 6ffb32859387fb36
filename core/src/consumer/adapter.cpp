#include "ndk/objects.hpp"

#include "context_table.hpp"
#include "fork_generation.hpp"
#include "wrap.hpp"

#include "ndk/fault.hpp"
#include "ndk/knob_text.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace ndk {
namespace {

// `text` with its control characters written as escapes (\n, \0, \xNN), quoted.
std::string printable(const std::string &text)
{
    std::string out = "'";
    for (char c : text) {
        auto byte = static_cast<unsigned char>(c);
        if (c == '\n')
            out += "\\n";
        else if (c == '\0')
            out += "\\0";
        else if (byte < 0x20 || byte == 0x7f) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02x", byte);
            out += hex;
        } else
            out += c;
    }
    return out + "'";
}

} // namespace

std::shared_ptr<Adapter> Adapter::open(const std::string &provider_name,
                                       const std::string &options, NDK_VERSION version,
                                       bool validate)
{
    // Every provider is opened behind the fault layer, which acts `fail`, `hold`, the
    // completion modes and the ABI-edge misbehaviour in front of it (docs/knobs.md).
    auto provider = fault::wrap(Provider::load(provider_name));
    if (validate)
        provider = validate::wrap(std::move(provider));
    const NDK_HARNESS_PROVIDER &entry = provider->entry();
    if (!options.empty() && entry.ControlMiniport == nullptr)
        throw KnobError(STATUS_NOT_SUPPORTED, "provider '" + provider_name + "' has no knobs");
    char error[4096] = {}; // a knob error may list every valid value
    NDIS_HANDLE miniport = nullptr;
    NDIS_STATUS status = provider->create_miniport(options.empty() ? nullptr : options.c_str(),
                                                   error, sizeof error, &miniport);
    if (status == STATUS_NOT_SUPPORTED && !options.empty())
        throw KnobError(status, "provider '" + provider_name + "': " + error);
    if (status != NDIS_STATUS_SUCCESS)
        throw Error(status, error[0] ? error : "creating the " + provider_name + " miniport");
    NDIS_OPEN_NDK_ADAPTER_PARAMETERS parameters{};
    parameters.Version = version;
    NDK_ADAPTER *adapter = nullptr;
    status = entry.Characteristics.OpenNDKAdapterHandler(miniport, &parameters, &adapter);
    if (status != NDIS_STATUS_SUCCESS) {
        entry.DestroyMiniport(miniport);
        throw Error(status, "OpenNDKAdapterHandler(version " + std::to_string(version.Major) +
                                "." + std::to_string(version.Minor) + ")");
    }
    auto session = validate::session_of(*provider, miniport);
    std::shared_ptr<Adapter> opened(new Adapter(std::move(provider), miniport, adapter));
    opened->validation_ = std::move(session);
    return opened;
}

std::string knob_problem(const std::string &key, const std::string &value)
{
    auto control = [](const std::string &text) {
        return std::any_of(text.begin(), text.end(), [](char c) {
            return static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == ';';
        });
    };
    if (control(key) || key.find('=') != std::string::npos)
        return "knob name " + printable(key) + ": a name has no control character, ';' or '='";
    if (control(value))
        return "knob " + key + "=" + printable(value) +
               ": a value is one line without control characters (newline, NUL) or ';'";
    return {};
}

std::string options_text(const KnobList &knobs)
{
    std::string options;
    for (const auto &[key, value] : knobs) {
        if (std::string problem = knob_problem(key, value); !problem.empty())
            throw Error(STATUS_INVALID_PARAMETER, problem);
        options += key + "=" + value + "\n";
    }
    return options;
}

Adapter::Adapter(std::shared_ptr<Provider> provider, NDIS_HANDLE miniport, NDK_ADAPTER *adapter)
    : provider_(std::move(provider)), miniport_(miniport), ndk_(adapter),
      fork_generation_(fork_generation()), opener_pid_(static_cast<int>(::getpid()))
{
}

Adapter::~Adapter() { close(); }

bool Adapter::inherited() const { return fork_generation_ != fork_generation(); }

// Every path that would reach the provider asks inherited() before taking mu_: a lock the
// parent's thread held at the fork stays locked in the child.
void Adapter::throw_inherited() const
{
    throw InheritedError("the adapter was opened by process " + std::to_string(opener_pid_) +
                         " before fork(); a child process cannot use what it inherited: open "
                         "an adapter of its own (docs/semantics.md, FORK)");
}

bool Adapter::is_open() const
{
    if (inherited())
        return false;
    std::lock_guard lock(mu_);
    return open_;
}

void Adapter::end_holds()
{
    // A call the fault layer holds (knob `hold`) lasts until `release` or its adapter's close
    // (docs/knobs.md), which would pend on it: release it, and disarm a hold that caught
    // nothing, which would catch one of the closes.  The
    // miniport is this adapter's alone (open() creates it): no other adapter's hold ends.
    std::string hold, reply;
    if (has_knobs() && !inherited() && accepts_closes() &&
        get_knob("hold", hold) == STATUS_SUCCESS)
        set_knob("release", "1", reply);
}

bool Adapter::begin_close()
{
    if (inherited())
        return false;
    std::lock_guard lock(mu_);
    if (torn_down_)
        return false;
    ++closes_in_flight_;
    return true;
}

void Adapter::end_close()
{
    std::vector<Call> closes;
    {
        std::lock_guard lock(mu_);
        if (--closes_in_flight_ == 0)
            closes_done_.notify_all();
        if (closes_in_flight_ != 0 || calls_in_flight_ != 0 || !close_deferred_)
            return;
        close_deferred_ = false;
        closes.swap(deferred_closes_);
    }
    finish_close(std::move(closes)); // the adapter's close waited for this object's
}

bool Adapter::accepts_closes() const
{
    if (inherited())
        return false; // the parent's to close
    std::lock_guard lock(mu_);
    return !torn_down_;
}

CloseSignal::Watch Adapter::watch_close(const CloseSignal::Wake &wake) const
{
    return CloseSignal::watch(close_signal_, wake);
}

void Adapter::check_open() const
{
    if (inherited())
        throw_inherited();
    if (!is_open())
        throw ClosedError("adapter is closed");
}

void Adapter::enter_call()
{
    if (inherited())
        throw_inherited();
    std::lock_guard lock(mu_);
    if (!open_)
        throw ClosedError("adapter is closed");
    ++calls_in_flight_;
    fault::enter_closable(&closing_);
}

InCall Adapter::enter()
{
    enter_call();
    return InCall(nullptr, this);
}

void Adapter::leave()
{
    fault::leave_closable(&closing_);
    std::vector<Call> closes;
    {
        std::lock_guard lock(mu_);
        if (--calls_in_flight_ != 0 || closes_in_flight_ != 0 || !close_deferred_)
            return;
        close_deferred_ = false;
        closes.swap(deferred_closes_);
    }
    finish_close(std::move(closes)); // the last call in flight finishes the pending close
}

std::vector<Call> Adapter::close_children()
{
    std::vector<std::shared_ptr<Object>> open_children;
    {
        std::lock_guard lock(mu_);
        for (auto it = children_.rbegin(); it != children_.rend(); ++it)
            if (auto child = it->lock())
                open_children.push_back(std::move(child));
    }
    // Successors first: children were tracked in creation order.  A child with a call in
    // flight has its close pend until that call returns (Object::close).
    std::vector<Call> closes;
    for (auto &child : open_children) {
        Call call = child->close(); // the close already under way, if there is one
        if (!call.done())
            closes.push_back(std::move(call));
    }
    return closes;
}

void Adapter::close()
{
    // In a forked child, the provider's adapter, its threads and its locks are the parent's
    // copy: the child leaves them untouched (its copy of the memory goes with the process).
    if (inherited())
        return;
    {
        std::lock_guard lock(mu_);
        if (!open_)
            return;
        open_ = false; // no new call enters from here on
        closing_.store(true);
    }
    close_signal_->notify(); // the waits on the adapter and its objects end (WAIT-CLOSED)
    // A provider under manual progress (the soft provider's knob progress=manual,
    // docs/knobs.md) runs no completion until stepped, and nobody steps an adapter being
    // closed: the closes below would never complete.  Hand progress back to the provider.
    std::string progress, reply;
    if (has_knobs() && get_knob("progress", progress) == STATUS_SUCCESS && progress == "manual")
        set_knob("progress", "auto", reply);
    end_holds(); // before the closes below, which an armed hold would catch
    std::vector<Call> closes = close_children();
    {
        std::lock_guard lock(mu_);
        if (calls_in_flight_ > 0 || closes_in_flight_ > 0) {
            // Another thread is inside the provider on this adapter: waiting for it here could
            // wait forever (a held call is released by a knob, or by this very close), so the
            // close pends and the last call to return finishes it (leave(), end_close()).
            close_deferred_ = true;
            deferred_closes_ = std::move(closes);
            return;
        }
    }
    finish_close(std::move(closes));
}

void Adapter::finish_close(std::vector<Call> closes)
{
    // Objects whose create was in flight when the close began were tracked since: close them
    // before waiting, as their antecedents' closes wait for them (digest 3.1).
    for (auto &call : close_children())
        closes.push_back(std::move(call));
    for (auto &call : closes)
        call.wait(Call::Seconds(10));
    {
        // An object's close that raced this one (its destructor on another thread) has
        // returned before the provider's adapter goes.
        std::unique_lock lock(mu_);
        torn_down_ = true;
        children_.clear();
        closes_done_.wait(lock, [this] { return closes_in_flight_ == 0; });
    }
    close_signal_->notify(); // nothing issued on the adapter completes any more
    // Blocking: on return no callback of any descendant can run (digest 3.1).
    provider_->entry().Characteristics.CloseNDKAdapterHandler(miniport_, ndk_);
    provider_->entry().DestroyMiniport(miniport_);
    // So no event sink outlives the adapter, even one whose close never completed, and no call
    // the provider never completed keeps what it holds (misbehave=never_complete: the adapter
    // itself, through the create's wrapper).
    std::unordered_set<void *> contexts;
    {
        std::lock_guard lock(mu_);
        contexts.swap(contexts_);
    }
    for (void *context : contexts)
        ContextTable::instance().erase(context);
    release_parked();
}

void *Adapter::add_event_context(const std::type_info &type, std::shared_ptr<void> sink)
{
    void *context = ContextTable::instance().add_entry(std::type_index(type), std::move(sink));
    track_context(context);
    return context;
}

void Adapter::track_context(void *context)
{
    auto &table = ContextTable::instance();
    std::lock_guard lock(mu_);
    // Contexts whose call completed or whose object closed leave the list now and then, so a
    // long-lived adapter's list stays as long as what is pending or open on it.
    if (contexts_.size() >= 64 && contexts_.size() % 64 == 0)
        std::erase_if(contexts_, [&table](void *c) { return !table.contains(c); });
    contexts_.insert(context);
}

std::shared_ptr<void> Adapter::find_event_context(const std::type_info &type, void *context)
{
    return ContextTable::instance().find_entry(std::type_index(type), context, false);
}

void Adapter::release_on_failure(const Call &create, void *context)
{
    create.on_complete([context](NTSTATUS status) {
        if (status != STATUS_SUCCESS)
            forget_event_context(context);
    });
}

void Adapter::forget_event_context(void *context)
{
    ContextTable::instance().erase(context); // the adapter's list drops it when it prunes
}

void Adapter::track(const std::shared_ptr<Object> &object)
{
    std::lock_guard lock(mu_);
    if (children_.size() >= 64 && children_.size() % 64 == 0)
        std::erase_if(children_, [](const auto &weak) { return weak.expired(); });
    children_.push_back(object);
}

NTSTATUS Adapter::query_adapter_info(NDK_ADAPTER_INFO *info, ULONG *size)
{
    auto in_call = enter();
    return ndk_->Dispatch->NdkQueryAdapterInfo(ndk_, info, size);
}

NDK_ADAPTER_INFO Adapter::query_info()
{
    NDK_ADAPTER_INFO info{};
    ULONG size = sizeof info;
    NTSTATUS status = query_adapter_info(&info, &size);
    if (status != STATUS_SUCCESS)
        throw Error(status, "NdkQueryAdapterInfo");
    return info;
}

NTSTATUS Adapter::query_extension(GUID *id, NDK_VERSION version, NDK_EXTENSION_INTERFACE *out)
{
    auto in_call = enter();
    return ndk_->Dispatch->NdkQueryExtension(&ndk_->Header, id, version, out);
}

NTSTATUS Adapter::set_knob(const std::string &key, const std::string &value, std::string &reply)
{
    if (inherited())
        throw_inherited();
    // Not enter(): knobs reach the miniport, not the adapter, and stay usable while a close
    // pends on a held call (the `release` knob ends the hold).
    if (!accepts_closes())
        throw ClosedError("adapter is closed");
    if (!has_knobs())
        return STATUS_NOT_SUPPORTED;
    if (std::string problem = knob_problem(key, value); !problem.empty()) {
        reply = problem;
        return STATUS_INVALID_PARAMETER;
    }
    char buf[1024] = {};
    NTSTATUS status =
        provider_->entry().ControlMiniport(miniport_, key.c_str(), value.c_str(), buf, sizeof buf);
    reply = buf;
    return status;
}

NTSTATUS Adapter::get_knob(const std::string &key, std::string &value)
{
    if (inherited())
        throw_inherited();
    if (!accepts_closes())
        throw ClosedError("adapter is closed");
    if (!has_knobs())
        return STATUS_NOT_SUPPORTED;
    char buf[4096] = {};
    NTSTATUS status =
        provider_->entry().ControlMiniport(miniport_, key.c_str(), nullptr, buf, sizeof buf);
    value = buf;
    return status;
}

std::optional<std::vector<std::string>> Adapter::addresses()
{
    std::string text;
    if (!has_knobs() || get_knob("address", text) != STATUS_SUCCESS)
        return std::nullopt;
    std::vector<std::string> hosts;
    std::stringstream items(text);
    for (std::string host; std::getline(items, host, ',');) {
        auto first = host.find_first_not_of(" \t\n");
        if (first != std::string::npos)
            hosts.push_back(host.substr(first, host.find_last_not_of(" \t\n") - first + 1));
    }
    return hosts;
}

Call Adapter::create_cq(ULONG cq_depth, const GROUP_AFFINITY *affinity)
{
    auto in_call = enter();
    auto events = std::make_shared<CqEvents>();
    if (affinity)
        events->affinity = *affinity;
    void *events_context = event_context(events);
    Call call = Call::begin(wrapper<Cq>(shared_from_this(), events, events_context));
    release_on_failure(call, events_context);
    GROUP_AFFINITY copy{};
    if (affinity)
        copy = *affinity;
    NDK_CQ *cq = nullptr;
    void *context = call.context(*this);
    NTSTATUS status = ndk_->Dispatch->NdkCreateCq(ndk_, cq_depth, Cq::notification, events_context,
                                                  affinity ? &copy : nullptr,
                                                  Call::create_completion, context, &cq);
    call.returned(status, context, cq ? &cq->Header : nullptr);
    return call;
}

Call Adapter::create_pd()
{
    auto in_call = enter();
    Call call = Call::begin(wrapper<Pd>(shared_from_this()));
    NDK_PD *pd = nullptr;
    void *context = call.context(*this);
    NTSTATUS status = ndk_->Dispatch->NdkCreatePd(ndk_, Call::create_completion, context, &pd);
    call.returned(status, context, pd ? &pd->Header : nullptr);
    return call;
}

Call Adapter::create_connector()
{
    auto in_call = enter();
    Call call = Call::begin(wrapper<Connector>(shared_from_this()));
    NDK_CONNECTOR *connector = nullptr;
    void *context = call.context(*this);
    NTSTATUS status =
        ndk_->Dispatch->NdkCreateConnector(ndk_, Call::create_completion, context, &connector);
    call.returned(status, context, connector ? &connector->Header : nullptr);
    return call;
}

Call Adapter::create_listener()
{
    auto in_call = enter();
    auto events = std::make_shared<ListenerEvents>();
    void *events_context = event_context(events);
    Call call = Call::begin(wrapper<Listener>(shared_from_this(), events, events_context));
    release_on_failure(call, events_context);
    NDK_LISTENER *listener = nullptr;
    void *context = call.context(*this);
    NTSTATUS status = ndk_->Dispatch->NdkCreateListener(
        ndk_, Listener::connect_event, events_context, Call::create_completion, context,
        &listener);
    call.returned(status, context, listener ? &listener->Header : nullptr);
    return call;
}

Call Adapter::create_shared_endpoint(SocketAddress address)
{
    auto in_call = enter();
    Call call = Call::begin(wrapper<SharedEndpoint>(shared_from_this()));
    NDK_SHARED_ENDPOINT *endpoint = nullptr;
    void *context = call.context(*this);
    NTSTATUS status = ndk_->Dispatch->NdkCreateSharedEndpoint(
        ndk_, address.get(), address.length, Call::create_completion, context, &endpoint);
    call.returned(status, context, endpoint ? &endpoint->Header : nullptr);
    return call;
}

} // namespace ndk
