// Shadows (what every validated object shares) and the validated adapter with its dispatch
// table.
#include "layers/validate/validate_layer.hpp"

#include <algorithm>
#include <cstring>

namespace ndk::validate {

namespace {

const char *type_name(NDK_OBJECT_TYPE type)
{
    switch (type) {
    case NdkObjectTypeAdapter: return "adapter";
    case NdkObjectTypeQp: return "QP";
    case NdkObjectTypeCq: return "CQ";
    case NdkObjectTypeMr: return "MR";
    case NdkObjectTypeMw: return "MW";
    case NdkObjectTypePd: return "PD";
    case NdkObjectTypeSharedEndpoint: return "SharedEndpoint";
    case NdkObjectTypeConnector: return "connector";
    case NdkObjectTypeListener: return "listener";
    case NdkObjectTypeSrq: return "SRQ";
    default: return "object";
    }
}

size_t dispatch_entries(NDK_OBJECT_TYPE type)
{
    switch (type) {
    case NdkObjectTypeAdapter: return sizeof(NDK_ADAPTER_DISPATCH) / sizeof(void *);
    case NdkObjectTypeQp: return sizeof(NDK_QP_DISPATCH) / sizeof(void *);
    case NdkObjectTypeCq: return sizeof(NDK_CQ_DISPATCH) / sizeof(void *);
    case NdkObjectTypeMr: return sizeof(NDK_MR_DISPATCH) / sizeof(void *);
    case NdkObjectTypeMw: return sizeof(NDK_MW_DISPATCH) / sizeof(void *);
    case NdkObjectTypePd: return sizeof(NDK_PD_DISPATCH) / sizeof(void *);
    case NdkObjectTypeSharedEndpoint:
        return sizeof(NDK_SHARED_ENDPOINT_DISPATCH) / sizeof(void *);
    case NdkObjectTypeConnector: return sizeof(NDK_CONNECTOR_DISPATCH) / sizeof(void *);
    case NdkObjectTypeListener: return sizeof(NDK_LISTENER_DISPATCH) / sizeof(void *);
    case NdkObjectTypeSrq: return sizeof(NDK_SRQ_DISPATCH) / sizeof(void *);
    default: return 0;
    }
}

// The layer, as the real object's consumer, owns its NdkReserved (digest 1.0): it writes this
// pattern there and expects to find it unchanged at close.
PVOID stamp(const Shadow *shadow, int i)
{
    return reinterpret_cast<PVOID>(reinterpret_cast<uintptr_t>(shadow) ^ (0x5a5a0000u + i));
}

std::string version_text(NDK_VERSION v)
{
    return std::to_string(v.Major) + "." + std::to_string(v.Minor);
}

// Check a header and dispatch table as the provider returned them (digest 1.0).
void check_header(const NDK_OBJECT_HEADER &header, const void *dispatch, NDK_OBJECT_TYPE expected,
                  NDK_VERSION version, const std::string &name, const char *call,
                  LayerAdapter &adapter)
{
    if (header.Version.Major != version.Major || header.Version.Minor != version.Minor)
        adapter.report("OBJECT-HEADER-VERSION", name, call,
                       "Header.Version is " + version_text(header.Version) +
                           ", the adapter reported " + version_text(version));
    if (header.ObjectType != expected)
        adapter.report("OBJECT-HEADER-TYPE", name, call,
                       "Header.ObjectType is " + std::to_string(header.ObjectType) +
                           ", expected " + std::to_string(expected) + " (" +
                           type_name(expected) + ")");
    for (PVOID slot : header.NdkReserved.rf)
        if (slot != nullptr) {
            adapter.report("OBJECT-HEADER-RESERVED", name, call,
                           "Header.NdkReserved is not zero when the object is returned");
            break;
        }
    if (dispatch == nullptr) {
        adapter.report("OBJECT-DISPATCH", name, call, "Dispatch is NULL when returned");
        return;
    }
    auto entries = static_cast<const void *const *>(dispatch);
    for (size_t i = 0; i < dispatch_entries(expected); ++i)
        if (entries[i] == nullptr) {
            adapter.report("OBJECT-DISPATCH", name, call,
                           "dispatch entry " + std::to_string(i) +
                               " is NULL (every provider function is mandatory)");
            break;
        }
}

} // namespace

// ---- Shadow --------------------------------------------------------------------------------

Shadow::Shadow(LayerAdapter &adapter, NDK_OBJECT_TYPE type, const void *layer_dispatch)
    : adapter_(adapter), type_(type), name_(adapter.next_name(type))
{
    face_.Dispatch = layer_dispatch;
    face_.owner = this;
    face_.Header.ObjectType = type;
    face_.Header.Version = adapter.version();
}

void Shadow::bind(NDK_OBJECT_HEADER *real, const char *call)
{
    auto *object = reinterpret_cast<Face *>(real); // { Header, Dispatch } as every NDK object
    check_header(*real, object->Dispatch, type_, adapter_.version(), name_, call, adapter_);
    real_dispatch_ = object->Dispatch;
    face_.Header.Version = real->Version;
    face_.Header.ObjectType = real->ObjectType;
    for (int i = 0; i < 4; ++i)
        real->NdkReserved.rf[i] = stamp(this, i);
    real_ = real;
}

bool Shadow::usable(const char *call)
{
    State now = state();
    if (now != State::Open) {
        report("OBJECT-CLOSED-CALL", call,
               now == State::Closing ? "called after the object's close was called (close "
                                       "pending); not forwarded"
                                     : "called on a closed object; not forwarded");
        return false;
    }
    if (real_dispatch_ == nullptr) {
        report("OBJECT-DISPATCH", call, "the provider gave the object no dispatch table; "
                                        "the call cannot be forwarded");
        return false;
    }
    return true;
}

bool Shadow::accepts_callback(const char *callback)
{
    State now = state();
    if (now == State::Completing || now == State::Closed) {
        report("CALLBACK-AFTER-CLOSE", callback,
               "the provider called back after the object's close completed; not delivered");
        return false;
    }
    return true;
}

void Shadow::add_successor(Shadow &successor, bool tentative)
{
    std::lock_guard lock(mu_);
    (tentative ? tentative_successors_ : successors_).push_back(&successor);
}

void Shadow::confirm_successor(Shadow &successor)
{
    std::lock_guard lock(mu_);
    auto it = std::find(tentative_successors_.begin(), tentative_successors_.end(), &successor);
    if (it == tentative_successors_.end())
        return;
    tentative_successors_.erase(it);
    successors_.push_back(&successor);
}

void Shadow::remove_successor(Shadow &successor)
{
    std::lock_guard lock(mu_);
    for (auto *list : {&successors_, &tentative_successors_}) {
        auto it = std::find(list->begin(), list->end(), &successor);
        if (it != list->end())
            list->erase(it);
    }
}

void Shadow::check_successors_closed(const char *call)
{
    std::vector<Shadow *> open;
    // The adapter's close closes the successors the consumer left open, without a close
    // completion the layer could see: their order against this one is not observable.
    bool adapter_closing = adapter_.is_closing();
    {
        std::lock_guard lock(mu_);
        for (Shadow *successor : successors_) {
            // A successor whose close is under way (called, not yet completed) is not judged:
            // the layer cannot tell the provider's order of events from its own there.
            State state = successor->state();
            if ((state == State::Open && !adapter_closing) ||
                (state == State::Completing && !successor->close_held.load()))
                open.push_back(successor);
        }
    }
    for (Shadow *successor : open)
        report("CLOSE-ANTECEDENT-OPEN", call,
               "the close completed while its successor " + successor->name() +
                   " is still open (its close completion has not returned)");
}

void Shadow::check_reserved(const char *call)
{
    if (real_ == nullptr)
        return;
    for (int i = 0; i < 4; ++i)
        if (real_->NdkReserved.rf[i] != stamp(this, i)) {
            report("OBJECT-HEADER-RESERVED", call,
                   "the provider modified Header.NdkReserved before the object was closed");
            return;
        }
}

void Shadow::report(const char *rule, const char *call, std::string message) const
{
    adapter_.report(rule, name_, call, std::move(message));
}

CqShadow::CqShadow(LayerAdapter &adapter)
    : Shadow(adapter, NdkObjectTypeCq, layer_dispatch(NdkObjectTypeCq))
{
}
SrqShadow::SrqShadow(LayerAdapter &adapter)
    : Shadow(adapter, NdkObjectTypeSrq, layer_dispatch(NdkObjectTypeSrq))
{
    queue.what = "SRQ";
    queue.judge_order = false;
}
QpShadow::QpShadow(LayerAdapter &adapter)
    : Shadow(adapter, NdkObjectTypeQp, layer_dispatch(NdkObjectTypeQp))
{
    initiator.what = "initiator queue";
    receive.what = "receive queue";
}
ConnectorShadow::ConnectorShadow(LayerAdapter &adapter)
    : Shadow(adapter, NdkObjectTypeConnector, layer_dispatch(NdkObjectTypeConnector))
{
}
ListenerShadow::ListenerShadow(LayerAdapter &adapter)
    : Shadow(adapter, NdkObjectTypeListener, layer_dispatch(NdkObjectTypeListener))
{
}

const void *layer_dispatch(NDK_OBJECT_TYPE type)
{
    switch (type) {
    case NdkObjectTypeAdapter: return &kAdapterDispatch;
    case NdkObjectTypeQp: return &kQpDispatch;
    case NdkObjectTypeCq: return &kCqDispatch;
    case NdkObjectTypeMr: return &kMrDispatch;
    case NdkObjectTypeMw: return &kMwDispatch;
    case NdkObjectTypePd: return &kPdDispatch;
    case NdkObjectTypeSharedEndpoint: return &kSharedEndpointDispatch;
    case NdkObjectTypeConnector: return &kConnectorDispatch;
    case NdkObjectTypeListener: return &kListenerDispatch;
    case NdkObjectTypeSrq: return &kSrqDispatch;
    default: return nullptr;
    }
}

NTSTATUS query_extension(NDK_OBJECT_HEADER *object, GUID *id, NDK_VERSION version,
                         NDK_EXTENSION_INTERFACE *out)
{
    Shadow &s = Shadow::of(object);
    if (!s.usable("NdkQueryExtension"))
        return STATUS_INVALID_DEVICE_STATE;
    // Every dispatch table starts with Close then QueryExtension (digest 1.0).
    auto entries = s.real_dispatch<NDK_FN_QUERY_EXTENSION_INTERFACE>();
    NTSTATUS status = entries[1](s.real(), id, version, out);
    check_documented(&s, s.adapter(), "NdkQueryExtension", status);
    return status;
}

// ---- LayerAdapter --------------------------------------------------------------------------

LayerAdapter::LayerAdapter(ValidatedMiniport &miniport, NDK_ADAPTER *real)
    : miniport_(miniport), real_(real)
{
    face_.Header = real->Header;
    std::memset(&face_.Header.NdkReserved, 0, sizeof face_.Header.NdkReserved);
    face_.Dispatch = &kAdapterDispatch;
    face_.self = this;
    check_header(real->Header, real->Dispatch, NdkObjectTypeAdapter, real->Header.Version,
                 "adapter", "OpenNDKAdapterHandler", *this);
}

LayerAdapter &LayerAdapter::of(NDK_ADAPTER *face)
{
    return *reinterpret_cast<AdapterFace *>(face)->self;
}

std::string LayerAdapter::next_name(NDK_OBJECT_TYPE type)
{
    std::lock_guard lock(mu_);
    unsigned n = ++counters_[type <= NdkObjectTypeMax ? type : 0];
    return std::string(type_name(type)) + "#" + std::to_string(n);
}

Shadow *LayerAdapter::own(const void *face) const
{
    std::lock_guard lock(mu_);
    auto it = faces_.find(face);
    return it == faces_.end() ? nullptr : it->second;
}

NTSTATUS check_arguments(LayerAdapter &adapter, const char *call,
                         std::initializer_list<Argument> arguments)
{
    NTSTATUS status = STATUS_SUCCESS;
    for (const Argument &argument : arguments) {
        if (argument.face == nullptr)
            continue;
        Shadow *shadow = adapter.own(argument.face);
        if (shadow == nullptr ||
            (shadow->type() != argument.type && shadow->type() != argument.or_type))
            return STATUS_INVALID_PARAMETER; // not followed: no shadow to report it on
        if (shadow->state() != State::Open) {
            shadow->report("OBJECT-CLOSED-CALL", call,
                           "passed as an argument after its close was called; not forwarded");
            status = STATUS_INVALID_PARAMETER;
        }
    }
    return status;
}

NDK_ADAPTER_INFO LayerAdapter::info() const
{
    NDK_ADAPTER_INFO info{};
    ULONG size = sizeof info;
    if (real_->Dispatch->NdkQueryAdapterInfo(real_, &info, &size) != STATUS_SUCCESS)
        info = NDK_ADAPTER_INFO{};
    return info;
}

namespace {

LayerAdapter &adapter_of(NDK_ADAPTER *face) { return LayerAdapter::of(face); }

NTSTATUS adapter_query_extension(NDK_OBJECT_HEADER *object, GUID *id, NDK_VERSION version,
                                 NDK_EXTENSION_INTERFACE *out)
{
    LayerAdapter &a = adapter_of(reinterpret_cast<NDK_ADAPTER *>(object));
    NTSTATUS status = a.real()->Dispatch->NdkQueryExtension(&a.real()->Header, id, version, out);
    check_documented(nullptr, a, "NdkQueryExtension", status);
    return status;
}

NTSTATUS query_adapter_info(NDK_ADAPTER *face, NDK_ADAPTER_INFO *info, ULONG *size)
{
    LayerAdapter &a = adapter_of(face);
    NTSTATUS status = a.real()->Dispatch->NdkQueryAdapterInfo(a.real(), info, size);
    check_documented(nullptr, a, "NdkQueryAdapterInfo", status);
    return status;
}

NTSTATUS create_cq(NDK_ADAPTER *face, ULONG depth, NDK_FN_CQ_NOTIFICATION_CALLBACK notification,
                   PVOID notification_context, GROUP_AFFINITY *affinity,
                   NDK_FN_CREATE_COMPLETION completion, PVOID context, NDK_CQ **out)
{
    LayerAdapter &a = adapter_of(face);
    CqShadow &cq = a.make<CqShadow>();
    cq.consumer_callback = notification;
    cq.consumer_context = notification_context;
    return run_create(a, cq, "NdkCreateCq", completion, context, reinterpret_cast<void **>(out),
                      [&](NDK_FN_CREATE_COMPLETION done, PVOID ctx, void **slot) {
                          return a.real()->Dispatch->NdkCreateCq(
                              a.real(), depth, notification ? cq_notification : nullptr, &cq,
                              affinity, done, ctx, reinterpret_cast<NDK_CQ **>(slot));
                      });
}

NTSTATUS create_pd(NDK_ADAPTER *face, NDK_FN_CREATE_COMPLETION completion, PVOID context,
                   NDK_PD **out)
{
    LayerAdapter &a = adapter_of(face);
    PlainShadow &pd = a.make<PlainShadow>(NdkObjectTypePd);
    return run_create(a, pd, "NdkCreatePd", completion, context, reinterpret_cast<void **>(out),
                      [&](NDK_FN_CREATE_COMPLETION done, PVOID ctx, void **slot) {
                          return a.real()->Dispatch->NdkCreatePd(
                              a.real(), done, ctx, reinterpret_cast<NDK_PD **>(slot));
                      });
}

NTSTATUS create_connector(NDK_ADAPTER *face, NDK_FN_CREATE_COMPLETION completion, PVOID context,
                          NDK_CONNECTOR **out)
{
    LayerAdapter &a = adapter_of(face);
    ConnectorShadow &connector = a.make<ConnectorShadow>();
    return run_create(a, connector, "NdkCreateConnector", completion, context,
                      reinterpret_cast<void **>(out),
                      [&](NDK_FN_CREATE_COMPLETION done, PVOID ctx, void **slot) {
                          return a.real()->Dispatch->NdkCreateConnector(
                              a.real(), done, ctx, reinterpret_cast<NDK_CONNECTOR **>(slot));
                      });
}

NTSTATUS create_shared_endpoint(NDK_ADAPTER *face, const PSOCKADDR address, ULONG length,
                                NDK_FN_CREATE_COMPLETION completion, PVOID context,
                                NDK_SHARED_ENDPOINT **out)
{
    LayerAdapter &a = adapter_of(face);
    PlainShadow &endpoint = a.make<PlainShadow>(NdkObjectTypeSharedEndpoint);
    return run_create(a, endpoint, "NdkCreateSharedEndpoint", completion, context,
                      reinterpret_cast<void **>(out),
                      [&](NDK_FN_CREATE_COMPLETION done, PVOID ctx, void **slot) {
                          return a.real()->Dispatch->NdkCreateSharedEndpoint(
                              a.real(), address, length, done, ctx,
                              reinterpret_cast<NDK_SHARED_ENDPOINT **>(slot));
                      });
}

NTSTATUS create_listener(NDK_ADAPTER *face, NDK_FN_CONNECT_EVENT_CALLBACK event, PVOID event_context,
                         NDK_FN_CREATE_COMPLETION completion, PVOID context, NDK_LISTENER **out)
{
    LayerAdapter &a = adapter_of(face);
    ListenerShadow &listener = a.make<ListenerShadow>();
    listener.consumer_callback = event;
    listener.consumer_context = event_context;
    return run_create(a, listener, "NdkCreateListener", completion, context,
                      reinterpret_cast<void **>(out),
                      [&](NDK_FN_CREATE_COMPLETION done, PVOID ctx, void **slot) {
                          return a.real()->Dispatch->NdkCreateListener(
                              a.real(), event ? connect_event : nullptr, &listener, done, ctx,
                              reinterpret_cast<NDK_LISTENER **>(slot));
                      });
}

NTSTATUS build_lam(NDK_ADAPTER *face, MDL *mdl, SIZE_T length, NDK_FN_REQUEST_COMPLETION completion,
                   PVOID context, NDK_LOGICAL_ADDRESS_MAPPING *lam, ULONG *lam_size, ULONG *fbo)
{
    LayerAdapter &a = adapter_of(face);
    return run_request(a, nullptr, "NdkBuildLAM", completion, context,
                       [&](NDK_FN_REQUEST_COMPLETION done, PVOID ctx) {
                           return a.real()->Dispatch->NdkBuildLAM(
                               a.real(), mdl, length, completion ? done : nullptr,
                               completion ? ctx : nullptr, lam, lam_size, fbo);
                       });
}

void release_lam(NDK_ADAPTER *face, NDK_LOGICAL_ADDRESS_MAPPING *lam)
{
    LayerAdapter &a = adapter_of(face);
    a.real()->Dispatch->NdkReleaseLAM(a.real(), lam);
}

} // namespace

const NDK_ADAPTER_DISPATCH kAdapterDispatch = {
    .NdkQueryExtension = adapter_query_extension,
    .NdkQueryAdapterInfo = query_adapter_info,
    .NdkCreateCq = create_cq,
    .NdkCreatePd = create_pd,
    .NdkCreateSharedEndpoint = create_shared_endpoint,
    .NdkCreateConnector = create_connector,
    .NdkCreateListener = create_listener,
    .NdkBuildLAM = build_lam,
    .NdkReleaseLAM = release_lam,
};

} // namespace ndk::validate
