#include "soft_adapter.hpp"

#include "soft_objects.hpp"
#include "soft_transport.hpp"

#include <cstdint>
#include <cstring>

namespace ndk::soft {

SoftAdapter::SoftAdapter(Miniport &miniport, NDK_VERSION version)
    : NDK_ADAPTER{}, miniport_(miniport), version_(version), mu_(Fabric::instance().wire())
{
    init_header(Header, NdkObjectTypeAdapter, version);
    Dispatch = &kAdapterDispatch;
    engine_.set_manual(miniport.knobs.manual_progress());
    std::lock_guard lock(mu_);
    miniport.adapters.push_back(this);
}

// The miniport's own (transport=shm), else the in-process fabric (docs/transport.md).
Transport &SoftAdapter::transport()
{
    return own_transport() != nullptr ? *own_transport() : inproc_transport();
}

SoftAdapter::~SoftAdapter()
{
    shutdown();
    std::lock_guard lock(mu_);
    std::erase(miniport_.adapters, this);
}

void SoftAdapter::shutdown()
{
    // Deliver what is queued, then close what the consumer left open, successors first
    // (reverse creation order), and deliver the close completions that this releases.  Each
    // round frees at least the objects nothing depends on any more, and their close
    // completions release their antecedents in the next: go on while rounds make progress, so
    // a chain of pending closes (a PD waiting for an MR waiting for a window ...) of any
    // depth completes, whatever order a transport's thread delivered its events in.
    for (size_t left = SIZE_MAX;;) {
        engine_.drain();
        std::unique_lock lock(mu_);
        if (objects_.empty() || objects_.size() == left)
            break;
        left = objects_.size();
        std::vector<SoftObject *> open;
        for (auto it = objects_.rbegin(); it != objects_.rend(); ++it)
            open.push_back(it->get());
        for (SoftObject *object : open) {
            if (!object->begin_shutdown_close())
                continue; // its close completion is pending on its successors
            registry_.retire(*object);
            object->on_close();
            if (object->dependents() == 0)
                destroy(*object);
            else
                object->dereference();
        }
    }
    // Anything left is held by a dependency the consumer never released: drop it silently.
    engine_.drain();
    std::lock_guard lock(mu_);

    registry_.clear();
    objects_.clear();
}

bool SoftAdapter::at_cap(NDK_OBJECT_TYPE type) const
{
    ObjectCaps caps = knobs().caps();
    ULONG cap = 0;
    switch (type) {
    case NdkObjectTypeQp: cap = caps.max_qp; break;
    case NdkObjectTypeCq: cap = caps.max_cq; break;
    case NdkObjectTypeMr: cap = caps.max_mr; break;
    case NdkObjectTypePd: cap = caps.max_pd; break;
    case NdkObjectTypeMw: cap = caps.max_mw; break;
    case NdkObjectTypeSrq: cap = caps.max_srq; break;
    default: break;
    }
    return cap != 0 && miniport_.object_counts[type] >= cap;
}

void SoftAdapter::adopt(std::unique_ptr<SoftObject> object)
{
    SoftObject *raw = object.get();
    objects_.push_back(std::move(object));
    raw->self_ = std::prev(objects_.end());
    registry_.add(*raw);
    ++miniport_.object_counts[raw->type()];
}

void SoftAdapter::destroy(SoftObject &object)
{
    object.on_destroy();
    object.release_all_antecedents();
    --miniport_.object_counts[object.type()];
    registry_.remove(object);
    objects_.erase(object.self_);
}

void SoftAdapter::finish_request(SoftObject *object, NDK_FN_REQUEST_COMPLETION completion,
                                 PVOID context, NTSTATUS status)
{
    completion(context, status);
    if (object != nullptr) {
        std::lock_guard lock(mu_);
        object->release_dependent();
    }
}

NTSTATUS SoftAdapter::request(const std::function<NTSTATUS()> &perform,
                              const std::function<void()> &undo)
{
    NTSTATUS status = perform();
    if (status != STATUS_SUCCESS && undo)
        undo();
    return status;
}

namespace {

NTSTATUS query_adapter_info(NDK_ADAPTER *ndk_adapter, NDK_ADAPTER_INFO *pInfo, ULONG *pBufferSize)
{
    SoftAdapter *adapter = SoftAdapter::from(ndk_adapter);
    return kit::query_adapter_info(adapter->info(), pInfo, pBufferSize);
}

} // namespace

const NDK_ADAPTER_DISPATCH kAdapterDispatch = {
    .NdkQueryExtension = query_extension_not_supported,
    .NdkQueryAdapterInfo = query_adapter_info,
    .NdkCreateCq = create_cq,
    .NdkCreatePd = create_pd,
    .NdkCreateSharedEndpoint = create_shared_endpoint,
    .NdkCreateConnector = create_connector,
    .NdkCreateListener = create_listener,
    .NdkBuildLAM = build_lam,
    .NdkReleaseLAM = release_lam,
};

} // namespace ndk::soft
