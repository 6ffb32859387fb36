#include "soft_adapter.hpp"

#include "soft_dispatch_entry.hpp"
#include "soft_objects.hpp"

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

SoftAdapter::~SoftAdapter()
{
    shutdown();
    std::lock_guard lock(mu_);
    std::erase(miniport_.adapters, this);
}

void SoftAdapter::shutdown()
{
    // A call caught by the hold knob goes on and returns before anything is torn down; what
    // requests that never completed (misbehave) kept is let go.
    miniport_.hold.release_adapter(this);
    {
        std::lock_guard lock(mu_);
        for (SoftObject *object : abandoned_)
            object->release_dependent();
        abandoned_.clear();
    }
    // Deliver what is queued, then close what the consumer left open, successors first
    // (reverse creation order), and deliver the close completions that this releases.
    for (int round = 0; round < 4; ++round) {
        engine_.drain();
        std::unique_lock lock(mu_);
        if (objects_.empty())
            return;
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
    return cap != 0 && counts_[type] >= cap;
}

void SoftAdapter::adopt(std::unique_ptr<SoftObject> object)
{
    SoftObject *raw = object.get();
    objects_.push_back(std::move(object));
    raw->self_ = std::prev(objects_.end());
    registry_.add(*raw);
    ++counts_[raw->type()];
}

void SoftAdapter::destroy(SoftObject &object)
{
    object.release_all_antecedents();
    --counts_[object.type()];
    registry_.remove(object);
    objects_.erase(object.self_);
}

bool SoftAdapter::injected_failure(const char *function, NDK_FN_CREATE_COMPLETION completion,
                                   PVOID context, NTSTATUS &status)
{
    auto failure = knobs().take_failure(function);
    if (!failure)
        return false;
    if (!failure->async || completion == nullptr) {
        status = failure->status;
        return true;
    }
    complete_create(completion, context, failure->status, nullptr);
    status = STATUS_PENDING;
    return true;
}

void SoftAdapter::complete_create(NDK_FN_CREATE_COMPLETION completion, PVOID context,
                                  NTSTATUS status, NDK_OBJECT_HEADER *object)
{
    Misbehave mode = misbehave();
    if (mode == Misbehave::NeverComplete)
        return; // broken on purpose; the object stays in the adapter's table until its close
    engine_.post([completion, context, status, object, mode] {
        completion(context, status, object);
        if (mode == Misbehave::CompleteTwice)
            completion(context, status, object); // broken on purpose
    });
}

void SoftAdapter::finish_request(Misbehave mode, SoftObject *object,
                                 NDK_FN_REQUEST_COMPLETION completion, PVOID context,
                                 NTSTATUS status)
{
    if (mode == Misbehave::RequestNeverComplete) {
        // Broken on purpose: as if the completion were lost, the request stays in flight, so
        // its object's close pends until the adapter's close lets it go.
        if (object != nullptr) {
            std::lock_guard lock(mu_);
            abandoned_.push_back(object);
        }
        return;
    }
    completion(context, status);
    if (mode == Misbehave::RequestCompleteTwice)
        completion(context, status); // broken on purpose
    if (object != nullptr) {
        std::lock_guard lock(mu_);
        object->release_dependent();
    }
}

NTSTATUS SoftAdapter::request(SoftObject *object, const char *function,
                              NDK_FN_REQUEST_COMPLETION completion, PVOID context,
                              std::function<NTSTATUS()> perform, std::function<void()> undo)
{
    auto settle = [undo](NTSTATUS status) {
        if (status != STATUS_SUCCESS && undo)
            undo();
        return status;
    };
    auto failure = knobs().take_failure(function);
    if (failure && (!failure->async || completion == nullptr))
        return settle(failure->status);
    bool pend = failure.has_value() ||
                (completion != nullptr && knobs().should_pend(CallKind::Request));
    if (!pend)
        return settle(perform());
    if (object != nullptr) {
        std::lock_guard lock(mu_);
        object->add_dependent(); // a close waits for this request (digest 3.1)
    }
    engine_.post([this, object, completion, context, failure, settle, mode = misbehave(),
                  perform = std::move(perform)] {
        finish_request(mode, object, completion, context,
                       settle(failure ? failure->status : perform()));
    });
    return STATUS_PENDING;
}

UINT32 SoftAdapter::new_token()
{
    UINT32 token = next_token_++;
    if (next_token_ == 0)
        next_token_ = 0x100;
    return token;
}

namespace {

NTSTATUS query_adapter_info(NDK_ADAPTER *ndk_adapter, NDK_ADAPTER_INFO *pInfo, ULONG *pBufferSize)
{
    SoftAdapter *adapter = SoftAdapter::from(ndk_adapter);
    if (auto failure = adapter->knobs().take_failure("NdkQueryAdapterInfo"))
        return failure->status;
    return kit::query_adapter_info(adapter->info(), pInfo, pBufferSize);
}

NTSTATUS adapter_query_extension(NDK_OBJECT_HEADER *object, GUID *id, NDK_VERSION version,
                                 NDK_EXTENSION_INTERFACE *out)
{
    auto *adapter = SoftAdapter::from(reinterpret_cast<NDK_ADAPTER *>(object));
    if (auto failure = adapter->knobs().take_failure("NdkQueryExtension"))
        return failure->status;
    return query_extension_not_supported(object, id, version, out);
}

} // namespace

const NDK_ADAPTER_DISPATCH kAdapterDispatch = {
    .NdkQueryExtension = entry<SoftAdapter, "NdkQueryExtension", adapter_query_extension>,
    .NdkQueryAdapterInfo = entry<SoftAdapter, "NdkQueryAdapterInfo", query_adapter_info>,
    .NdkCreateCq = entry<SoftAdapter, "NdkCreateCq", create_cq>,
    .NdkCreatePd = entry<SoftAdapter, "NdkCreatePd", create_pd>,
    .NdkCreateSharedEndpoint = entry<SoftAdapter, "NdkCreateSharedEndpoint", create_shared_endpoint>,
    .NdkCreateConnector = entry<SoftAdapter, "NdkCreateConnector", create_connector>,
    .NdkCreateListener = entry<SoftAdapter, "NdkCreateListener", create_listener>,
    .NdkBuildLAM = entry<SoftAdapter, "NdkBuildLAM", build_lam>,
    .NdkReleaseLAM = entry<SoftAdapter, "NdkReleaseLAM", release_lam>,
};

} // namespace ndk::soft
