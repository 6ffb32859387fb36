#include "verbs_objects.hpp"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>

namespace ndk::verbs {
namespace {

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

ibv_context *open_context(const std::string &name)
{
    int count = 0;
    ibv_device **list = ibv_get_device_list(&count);
    ibv_context *context = nullptr;
    for (int i = 0; list != nullptr && i < count && context == nullptr; ++i)
        if (name == ibv_get_device_name(list[i]))
            context = ibv_open_device(list[i]);
    if (list != nullptr)
        ibv_free_device_list(list);
    return context;
}

NTSTATUS query_adapter_info(NDK_ADAPTER *ndk_adapter, NDK_ADAPTER_INFO *pInfo, ULONG *pBufferSize)
{
    return kit::query_adapter_info(VerbsAdapter::from(ndk_adapter)->info(), pInfo, pBufferSize);
}

// Logical address mappings give the consumer bus addresses of its pages; user-space verbs has
// no such thing (only the kernel's ib_dma_map_* does), so BuildLAM is not supported.
NTSTATUS build_lam(NDK_ADAPTER *, MDL *, SIZE_T, NDK_FN_REQUEST_COMPLETION, PVOID,
                   NDK_LOGICAL_ADDRESS_MAPPING *, ULONG *, ULONG *)
{
    return STATUS_NOT_SUPPORTED;
}

VOID release_lam(NDK_ADAPTER *, NDK_LOGICAL_ADDRESS_MAPPING *) {}

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

VerbsAdapter::VerbsAdapter(Miniport &miniport, NDK_VERSION version)
    : NDK_ADAPTER{}, miniport_(miniport), version_(version)
{
    init_header(Header, NdkObjectTypeAdapter, version);
    Dispatch = &kAdapterDispatch;
    context_ = open_context(miniport.device.name);
    if (context_ != nullptr)
        channel_ = ibv_create_comp_channel(context_);
    cm_ = rdma_create_event_channel();
    if (!ok())
        return;
    set_nonblocking(channel_->fd);
    set_nonblocking(cm_->fd);
    set_nonblocking(context_->async_fd);
    engine_.watch(channel_->fd, [this] { on_completion_channel(); });
    engine_.watch(cm_->fd, [this] { on_cm_event(); });
    engine_.watch(context_->async_fd, [this] { on_async_event(); });
    engine_.start();
    std::lock_guard lock(miniport.adapters_mu);
    miniport.adapters.push_back(this);
}

VerbsAdapter::~VerbsAdapter()
{
    if (ok()) {
        // What the consumer left open goes, successors first (reverse creation order), on
        // the engine so that no callback runs concurrently; then the engine stops.
        engine_.run([this] {
            std::vector<Object *> open;
            {
                std::lock_guard lock(mu_);
                open.assign(order_.rbegin(), order_.rend());
            }
            for (Object *object : open) {
                bool alive;
                {
                    std::lock_guard lock(mu_);
                    alive = exists(object);
                }
                if (alive)
                    object->force_destroy();
            }
        });
        engine_.stop();
        std::lock_guard lock(miniport_.adapters_mu);
        std::erase(miniport_.adapters, this);
    }
    if (cm_ != nullptr)
        rdma_destroy_event_channel(cm_);
    if (channel_ != nullptr)
        ibv_destroy_comp_channel(channel_);
    if (context_ != nullptr)
        ibv_close_device(context_);
}

void VerbsAdapter::adopt(Object *object)
{
    registry_.add(*object);
    order_.push_back(object);
}

void VerbsAdapter::forget(Object *object)
{
    registry_.remove(*object);
    std::erase(order_, object);
}

void VerbsAdapter::on_completion_channel()
{
    ibv_cq *cq = nullptr;
    void *cq_context = nullptr;
    while (ibv_get_cq_event(channel_, &cq, &cq_context) == 0) {
        ibv_ack_cq_events(cq, 1);
        // Every verbs context pointer of this provider is an Object * (the NDK object).
        auto *owner = static_cast<Object *>(cq_context);
        bool alive;
        {
            std::lock_guard lock(mu_);
            alive = exists(owner) && owner->type() == NdkObjectTypeCq;
        }
        if (alive) // a CQ is freed on this thread only, so it stays alive for on_event
            static_cast<VCq *>(owner)->on_event();
    }
}

void VerbsAdapter::on_async_event()
{
    ibv_async_event event;
    while (ibv_get_async_event(context_, &event) == 0) {
        ibv_event_type type = event.event_type;
        void *element = nullptr;
        if (type == IBV_EVENT_CQ_ERR)
            element = event.element.cq->cq_context;
        else if (type == IBV_EVENT_SRQ_LIMIT_REACHED || type == IBV_EVENT_SRQ_ERR)
            element = event.element.srq->srq_context;
        ibv_ack_async_event(&event);
        bool alive;
        {
            std::lock_guard lock(mu_);
            alive = element != nullptr && exists(static_cast<Object *>(element));
        }
        if (!alive)
            continue;
        if (type == IBV_EVENT_CQ_ERR) // an overrun, as rxe reports it (digest 1.3)
            static_cast<VCq *>(static_cast<Object *>(element))->on_error(STATUS_BUFFER_OVERFLOW);
        else if (type == IBV_EVENT_SRQ_LIMIT_REACHED)
            static_cast<VSrq *>(static_cast<Object *>(element))->on_limit();
    }
}

void VerbsAdapter::on_cm_event()
{
    rdma_cm_event *event = nullptr;
    while (rdma_get_cm_event(cm_, &event) == 0) {
        // Copy and acknowledge at once: rdma_destroy_id waits for its events' acks, and ids
        // are destroyed on this very thread.
        rdma_cm_event_type type = event->event;
        int status = event->status;
        rdma_cm_id *id = event->id;
        rdma_cm_id *listen_id = event->listen_id;
        const rdma_conn_param &conn = event->param.conn;
        std::vector<uint8_t> data;
        if (conn.private_data != nullptr && conn.private_data_len > 0) {
            auto *bytes = static_cast<const uint8_t *>(conn.private_data);
            data.assign(bytes, bytes + conn.private_data_len);
        }
        ULONG responder = conn.responder_resources, initiator = conn.initiator_depth;
        rdma_ack_cm_event(event);
        if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
            auto *object = static_cast<Object *>(listen_id->context);
            VListener *listener = nullptr;
            {
                std::lock_guard lock(mu_);
                if (exists(object) && object->type() == NdkObjectTypeListener) {
                    listener = static_cast<VListener *>(object);
                    if (listener->close_requested() || listener->paused)
                        listener = nullptr;
                }
            }
            if (listener != nullptr) {
                listener->on_request(id, data, responder, initiator);
            } else {
                // As if nobody listened (digest 1.9, 3.5): the peer sees its connect refused.
                rdma_reject(id, nullptr, 0);
                rdma_destroy_id(id);
            }
            continue;
        }
        auto *object = static_cast<Object *>(id->context);
        bool alive;
        {
            std::lock_guard lock(mu_);
            alive = exists(object) && object->type() == NdkObjectTypeConnector;
        }
        if (alive)
            static_cast<VConnector *>(object)->on_event(type, status, data, responder, initiator);
    }
}

} // namespace ndk::verbs
