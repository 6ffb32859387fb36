// The adapter (digest 1.1): what it reports, what it creates, its blocking close; and the close
// of every object (digest 3.1), on kit::Lifetime.
#include "loop_objects.hpp"

#include <algorithm>

namespace ndk::loop {

// ---- the close of every object ---------------------------------------------------------------

NTSTATUS LoopObject::close(NDK_FN_CLOSE_COMPLETION completion, PVOID context)
{
    LoopAdapter &a = adapter();
    {
        std::lock_guard lock(fabric_mu());
        // Pending: completed on the engine when the last successor, child or request is gone.
        if (NTSTATUS status = close_or_pend(completion, context,
                                            [&] {
                                                a.retire(this);
                                                on_close(); // may complete its own requests
                                            });
            status != STATUS_SUCCESS)
            return status;
    }
    // On the engine, after every callback already queued for this object: none runs later.
    a.engine().run([this] { finish(); });
    return STATUS_SUCCESS;
}

void LoopObject::on_last_dependent()
{
    if (!claim_finish())
        return;
    LoopAdapter &a = adapter();
    a.engine().post([&a, this] {
        {
            std::lock_guard lock(fabric_mu());
            if (!a.exists(this))
                return; // freed by the adapter's close meanwhile
        }
        finish(); // only the engine frees objects: it stays until then
    });
}

void LoopObject::finish()
{
    call_close_completion(); // before the antecedents' closes may complete (digest 3.1)
    LoopAdapter &a = adapter();
    std::lock_guard lock(fabric_mu());
    release_antecedents([&a](const kit::Lifetime *antecedent) {
        return a.exists(static_cast<const LoopObject *>(antecedent));
    });
    a.forget(this);
    delete this;
}

void LoopObject::shut_down()
{
    mark_finishing(); // nothing may queue its finish() now
    if (begin_close())
        on_close();
}

// ---- the adapter -----------------------------------------------------------------------------

NDK_ADAPTER_INFO LoopAdapter::info(NDK_VERSION version)
{
    NDK_ADAPTER_INFO info{};
    info.Version = version;
    info.VendorId = 0;
    info.DeviceId = 0x100F; // "loop"
    info.MaxRegistrationSize = size_t{1} << 32;
    info.MaxWindowSize = 0;  // no memory windows: NdkCreateMw is not supported
    info.FRMRPageCount = 0;  // no fast registration: NdkCreateMr(FastRegister) is not supported
    info.MaxInitiatorRequestSge = 16;
    info.MaxReceiveRequestSge = 16;
    info.MaxReadRequestSge = 16;
    info.MaxTransferLength = 1u << 30;
    info.MaxInlineDataSize = 256;
    info.MaxInboundReadLimit = 16;
    info.MaxOutboundReadLimit = 16;
    info.MaxReceiveQueueDepth = 4096;
    info.MaxInitiatorQueueDepth = 4096;
    info.MaxSrqDepth = 0; // no SRQ (digest 2.1: 0 = no SRQ support)
    info.MaxCqDepth = 1u << 16;
    info.LargeRequestThreshold = 4096;
    info.MaxCallerData = 56;
    info.MaxCalleeData = 148;
    info.AdapterFlags = NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED |
                        NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED;
    info.RdmaTechnology = NdkUndefined; // no wire at all
    return info;
}

namespace {

NTSTATUS query_adapter_info(NDK_ADAPTER *adapter, NDK_ADAPTER_INFO *pInfo, ULONG *pBufferSize)
{
    return kit::query_adapter_info(LoopAdapter::from(adapter)->info(), pInfo, pBufferSize);
}

// Not implemented by this example: shared endpoints and logical address mappings.
NTSTATUS create_shared_endpoint(NDK_ADAPTER *, const PSOCKADDR, ULONG, NDK_FN_CREATE_COMPLETION,
                                PVOID, NDK_SHARED_ENDPOINT **)
{
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS build_lam(NDK_ADAPTER *, MDL *, SIZE_T, NDK_FN_REQUEST_COMPLETION, PVOID,
                   NDK_LOGICAL_ADDRESS_MAPPING *, ULONG *, ULONG *)
{
    return STATUS_NOT_SUPPORTED;
}

VOID release_lam(NDK_ADAPTER *, NDK_LOGICAL_ADDRESS_MAPPING *) {}

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

} // namespace

LoopAdapter::LoopAdapter(Miniport &miniport, NDK_VERSION version)
    : NDK_ADAPTER{}, miniport_(miniport), version_(version)
{
    init_header(Header, NdkObjectTypeAdapter, version);
    Dispatch = &kAdapterDispatch;
    std::lock_guard lock(fabric_mu());
    miniport.adapters.push_back(this);
}

LoopAdapter::~LoopAdapter()
{
    // What the consumer left open goes, on the engine so that no callback runs meanwhile; the
    // engine then delivers what that queued (callbacks of freed objects are dropped).
    engine_.run([this] {
        std::lock_guard lock(fabric_mu());
        // First every object leaves its connections and the fabric while all still exist,
        // then all are freed.
        for (auto it = order_.rbegin(); it != order_.rend(); ++it)
            (*it)->shut_down();
        for (LoopObject *object : order_)
            delete object;
        order_.clear();
        registry_.clear();
        std::erase(miniport_.adapters, this);
    });
    engine_.stop();
}

void LoopAdapter::adopt(LoopObject *object)
{
    registry_.add(*object);
    order_.push_back(object);
}

} // namespace ndk::loop
