// The fault layer's dispatch tables, one Forward entry per member (fault_forward.hpp), and the
// faces and callback records an adapter owns.
#include "layers/fault/fault_forward.hpp"

namespace ndk::fault {

#define NDK_FORWARD(Dispatch, Member) .Member = Forward<#Member, &Dispatch::Member>::call

namespace {

const NDK_ADAPTER_DISPATCH kAdapterDispatch = {
    NDK_FORWARD(NDK_ADAPTER_DISPATCH, NdkQueryExtension),
    NDK_FORWARD(NDK_ADAPTER_DISPATCH, NdkQueryAdapterInfo),
    NDK_FORWARD(NDK_ADAPTER_DISPATCH, NdkCreateCq),
    NDK_FORWARD(NDK_ADAPTER_DISPATCH, NdkCreatePd),
    NDK_FORWARD(NDK_ADAPTER_DISPATCH, NdkCreateSharedEndpoint),
    NDK_FORWARD(NDK_ADAPTER_DISPATCH, NdkCreateConnector),
    NDK_FORWARD(NDK_ADAPTER_DISPATCH, NdkCreateListener),
    NDK_FORWARD(NDK_ADAPTER_DISPATCH, NdkBuildLAM),
    NDK_FORWARD(NDK_ADAPTER_DISPATCH, NdkReleaseLAM),
};

const NDK_CQ_DISPATCH kCqDispatch = {
    NDK_FORWARD(NDK_CQ_DISPATCH, NdkCloseCq),
    NDK_FORWARD(NDK_CQ_DISPATCH, NdkQueryExtension),
    NDK_FORWARD(NDK_CQ_DISPATCH, NdkResizeCq),
    NDK_FORWARD(NDK_CQ_DISPATCH, NdkArmCq),
    NDK_FORWARD(NDK_CQ_DISPATCH, NdkGetCqResults),
    NDK_FORWARD(NDK_CQ_DISPATCH, NdkControlCqInterruptModeration),
    NDK_FORWARD(NDK_CQ_DISPATCH, NdkGetCqResultsEx),
};

const NDK_PD_DISPATCH kPdDispatch = {
    NDK_FORWARD(NDK_PD_DISPATCH, NdkClosePd),
    NDK_FORWARD(NDK_PD_DISPATCH, NdkQueryExtension),
    NDK_FORWARD(NDK_PD_DISPATCH, NdkCreateMr),
    NDK_FORWARD(NDK_PD_DISPATCH, NdkCreateMw),
    NDK_FORWARD(NDK_PD_DISPATCH, NdkCreateSrq),
    NDK_FORWARD(NDK_PD_DISPATCH, NdkCreateQp),
    NDK_FORWARD(NDK_PD_DISPATCH, NdkCreateQpWithSrq),
    NDK_FORWARD(NDK_PD_DISPATCH, NdkGetPrivilegedMemoryRegionToken),
};

const NDK_MR_DISPATCH kMrDispatch = {
    NDK_FORWARD(NDK_MR_DISPATCH, NdkCloseMr),
    NDK_FORWARD(NDK_MR_DISPATCH, NdkQueryExtension),
    NDK_FORWARD(NDK_MR_DISPATCH, NdkRegisterMr),
    NDK_FORWARD(NDK_MR_DISPATCH, NdkDeregisterMr),
    NDK_FORWARD(NDK_MR_DISPATCH, NdkInitializeFastRegisterMr),
    NDK_FORWARD(NDK_MR_DISPATCH, NdkGetRemoteTokenFromMr),
    NDK_FORWARD(NDK_MR_DISPATCH, NdkGetLocalTokenFromMr),
};

const NDK_MW_DISPATCH kMwDispatch = {
    NDK_FORWARD(NDK_MW_DISPATCH, NdkCloseMw),
    NDK_FORWARD(NDK_MW_DISPATCH, NdkQueryExtension),
    NDK_FORWARD(NDK_MW_DISPATCH, NdkGetRemoteTokenFromMw),
};

const NDK_SRQ_DISPATCH kSrqDispatch = {
    NDK_FORWARD(NDK_SRQ_DISPATCH, NdkCloseSrq),
    NDK_FORWARD(NDK_SRQ_DISPATCH, NdkQueryExtension),
    NDK_FORWARD(NDK_SRQ_DISPATCH, NdkModifySrq),
    NDK_FORWARD(NDK_SRQ_DISPATCH, NdkSrqReceive),
};

const NDK_QP_DISPATCH kQpDispatch = {
    NDK_FORWARD(NDK_QP_DISPATCH, NdkCloseQp),
    NDK_FORWARD(NDK_QP_DISPATCH, NdkQueryExtension),
    NDK_FORWARD(NDK_QP_DISPATCH, NdkFlush),
    NDK_FORWARD(NDK_QP_DISPATCH, NdkSend),
    NDK_FORWARD(NDK_QP_DISPATCH, NdkReceive),
    NDK_FORWARD(NDK_QP_DISPATCH, NdkBind),
    NDK_FORWARD(NDK_QP_DISPATCH, NdkFastRegister),
    NDK_FORWARD(NDK_QP_DISPATCH, NdkInvalidate),
    NDK_FORWARD(NDK_QP_DISPATCH, NdkRead),
    NDK_FORWARD(NDK_QP_DISPATCH, NdkWrite),
    NDK_FORWARD(NDK_QP_DISPATCH, NdkSendAndInvalidate),
};

const NDK_SHARED_ENDPOINT_DISPATCH kSharedEndpointDispatch = {
    NDK_FORWARD(NDK_SHARED_ENDPOINT_DISPATCH, NdkCloseSharedEndpoint),
    NDK_FORWARD(NDK_SHARED_ENDPOINT_DISPATCH, NdkQueryExtension),
    NDK_FORWARD(NDK_SHARED_ENDPOINT_DISPATCH, NdkGetLocalAddress),
};

const NDK_CONNECTOR_DISPATCH kConnectorDispatch = {
    NDK_FORWARD(NDK_CONNECTOR_DISPATCH, NdkCloseConnector),
    NDK_FORWARD(NDK_CONNECTOR_DISPATCH, NdkQueryExtension),
    NDK_FORWARD(NDK_CONNECTOR_DISPATCH, NdkConnect),
    NDK_FORWARD(NDK_CONNECTOR_DISPATCH, NdkConnectWithSharedEndpoint),
    NDK_FORWARD(NDK_CONNECTOR_DISPATCH, NdkCompleteConnect),
    NDK_FORWARD(NDK_CONNECTOR_DISPATCH, NdkAccept),
    NDK_FORWARD(NDK_CONNECTOR_DISPATCH, NdkReject),
    NDK_FORWARD(NDK_CONNECTOR_DISPATCH, NdkGetConnectionData),
    NDK_FORWARD(NDK_CONNECTOR_DISPATCH, NdkGetLocalAddress),
    NDK_FORWARD(NDK_CONNECTOR_DISPATCH, NdkGetPeerAddress),
    NDK_FORWARD(NDK_CONNECTOR_DISPATCH, NdkDisconnect),
    NDK_FORWARD(NDK_CONNECTOR_DISPATCH, NdkCompleteConnectEx),
    NDK_FORWARD(NDK_CONNECTOR_DISPATCH, NdkAcceptEx),
};

const NDK_LISTENER_DISPATCH kListenerDispatch = {
    NDK_FORWARD(NDK_LISTENER_DISPATCH, NdkCloseListener),
    NDK_FORWARD(NDK_LISTENER_DISPATCH, NdkQueryExtension),
    NDK_FORWARD(NDK_LISTENER_DISPATCH, NdkListen),
    NDK_FORWARD(NDK_LISTENER_DISPATCH, NdkGetLocalAddress),
    NDK_FORWARD(NDK_LISTENER_DISPATCH, NdkControlConnectEvents),
};

} // namespace

#undef NDK_FORWARD

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

// The oldest retired T once more than kRetiredKept wait (FaultAdapter::retire), else a new one
// kept in `all` for the adapter's life (`fresh`).  mu_ held.
template <class T>
T *FaultAdapter::reuse_or_make(std::deque<T *> &retired, std::deque<std::unique_ptr<T>> &all,
                               bool &fresh)
{
    fresh = retired.size() <= kRetiredKept;
    if (fresh) {
        all.push_back(std::make_unique<T>());
        return all.back().get();
    }
    T *again = retired.front();
    retired.pop_front();
    return again;
}

FaultAdapter::FaultAdapter(FaultMiniport &miniport, NDK_ADAPTER *inner) : miniport(miniport)
{
    wrap(&inner->Header, NdkObjectTypeAdapter);
}

Face *FaultAdapter::wrap(NDK_OBJECT_HEADER *inner, NDK_OBJECT_TYPE type)
{
    if (inner == nullptr)
        return nullptr;
    Face *face = nullptr;
    {
        std::lock_guard lock(mu_);
        bool fresh = false;
        face = reuse_or_make(retired_, faces_, fresh);
        if (fresh)
            own_.insert(face);
    }
    // The provider's header as it made it (version, type, NdkReserved, digest 1.0), so that
    // whoever checks it above sees the provider's.  From here on the face's NdkReserved is the
    // consumer's: what the provider writes into its own object's later is not seen through
    // the layer.
    face->Header = *inner;
    // A provider object without a dispatch table stays without one (digest 1.0): the layer
    // does not hide that from whoever checks it above.
    face->Dispatch = reinterpret_cast<AnyObject *>(inner)->Dispatch != nullptr
                         ? layer_dispatch(type)
                         : nullptr;
    if (type != NdkObjectTypeAdapter) {
        switch (miniport.injection.misbehave()) { // broken on purpose (docs/knobs.md)
        case Misbehave::HeaderVersion: face->Header.Version.Major += 1; break;
        case Misbehave::HeaderType: face->Header.ObjectType = NdkObjectTypeMax; break;
        case Misbehave::HeaderReserved: face->Header.NdkReserved.rf[0] = reinterpret_cast<PVOID>(1); break;
        case Misbehave::DispatchNull: face->Dispatch = nullptr; break;
        default: break;
        }
    }
    face->inner = reinterpret_cast<AnyObject *>(inner);
    face->adapter = this;
    face->results.store(nullptr, std::memory_order_relaxed); // a CQ's, kept in cq_results_
    ++face->generation;
    face->magic = kFaceMagic;
    return face;
}

void FaultAdapter::retire(Face *face, uint64_t generation)
{
    std::lock_guard lock(mu_);
    if (face->magic != kFaceMagic || face->generation != generation ||
        face == faces_.front().get())
        return;
    face->magic = kRetiredFaceMagic;
    face->inner = nullptr;
    for (CallbackRecord *record : face->records)
        retire_record(record);
    face->records.clear(); // its capacity stays for the face's next object
    retired_.push_back(face);
}

void FaultAdapter::adopt(Face *face, CallbackRecord *first, CallbackRecord *second)
{
    std::lock_guard lock(mu_);
    for (CallbackRecord *record : {first, second}) {
        if (record == nullptr || record->owner != CallbackRecord::Owner::Fresh)
            continue;
        if (face != nullptr && face->magic == kFaceMagic) {
            record->owner = CallbackRecord::Owner::Face;
            face->records.push_back(record);
        } else {
            retire_record(record);
        }
    }
}

void FaultAdapter::retire_record(CallbackRecord *record)
{
    record->owner = CallbackRecord::Owner::Retired;
    retired_records_.push_back(record);
}

bool FaultAdapter::owns(const void *object)
{
    std::lock_guard lock(mu_);
    return own_.count(object) != 0 && static_cast<const Face *>(object)->magic == kFaceMagic;
}

// Made on first use, not with every CQ: a CqResults (its deque allocates a block at once) for
// each CQ of a walk or a benchmark, kept for the adapter's life, was most of the cost of a CQ's
// create and close (bench/compare: 4.9 us, the heap's growth and its page faults).
CqResults &FaultAdapter::results_of(Face &cq)
{
    std::lock_guard lock(mu_);
    if (CqResults *made = cq.results.load(std::memory_order_acquire))
        return *made;
    cq_results_.push_back(std::make_unique<CqResults>());
    cq.results.store(cq_results_.back().get(), std::memory_order_release);
    return *cq_results_.back();
}

CallbackRecord *FaultAdapter::record(void (*function)(), PVOID context, NDK_OBJECT_TYPE created,
                                     bool completion)
{
    CallbackRecord *record = nullptr;
    {
        std::lock_guard lock(mu_);
        bool fresh = false;
        record = reuse_or_make(retired_records_, records_, fresh);
        if (!fresh)
            *record = CallbackRecord{};
    }
    record->function = function;
    record->context = context;
    record->created = created;
    record->completion = completion;
    record->adapter = this;
    return record;
}

} // namespace ndk::fault
