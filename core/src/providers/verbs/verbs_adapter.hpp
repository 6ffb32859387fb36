// A verbs miniport (one RDMA device) and the NDK adapters opened on it.  Each adapter has its
// own device context, completion channel and rdma_cm event channel, all watched by its engine
// thread, so closing an adapter stops everything that could call back into its consumer.
#pragma once

#include "verbs_device.hpp"
#include "providers/kit/kit_object_registry.hpp"
#include "verbs_engine.hpp"
#include "verbs_object.hpp"

#include <infiniband/verbs.h>
#include <mutex>
#include <rdma/rdma_cma.h>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ndk::verbs {

class VerbsAdapter;
struct VQp;

struct Miniport {
    Device device;
    std::mutex mu; // counters, enabled (taken after an adapter's lock, never before)
    NDIS_NDK_PERFORMANCE_COUNTERS counters{};
    std::mutex adapters_mu; // adapters (taken before an adapter's lock)
    std::vector<VerbsAdapter *> adapters;
    bool enabled = true; // OID_NDK_SET_STATE: disabled, new opens are ADAPTER_NOT_READY
};

class VerbsAdapter : public NDK_ADAPTER {
public:
    // Throws nothing: check ok() (and why()) after construction.
    VerbsAdapter(Miniport &miniport, NDK_VERSION version);
    ~VerbsAdapter(); // blocking close (digest 3.1)

    static VerbsAdapter *from(NDK_ADAPTER *adapter) { return static_cast<VerbsAdapter *>(adapter); }
    bool ok() const { return context_ != nullptr && channel_ != nullptr && cm_ != nullptr; }

    Miniport &miniport() const { return miniport_; }
    const Device &device() const { return miniport_.device; }
    NDK_VERSION version() const { return version_; }
    NDK_ADAPTER_INFO info() const { return device().info(version_); }
    ibv_context *context() const { return context_; }
    ibv_comp_channel *channel() const { return channel_; }
    rdma_event_channel *cm() const { return cm_; }
    Engine &engine() { return engine_; }
    std::mutex &mu() { return mu_; }

    // A live (not closing) object of this adapter and of that type, or nullptr.  Lock held.
    template <class T>
    T *lookup(const void *ndk_object, NDK_OBJECT_TYPE type)
    {
        return registry_.lookup<T>(ndk_object, type);
    }
    // True while `object` has not been freed (it may be closing).  Lock held.
    bool exists(const Object *object) const { return registry_.exists(object); }

    // Take a new object into the tables and return it through `out` (creates complete inline:
    // the verbs calls behind them are synchronous).  Takes the lock.
    template <class T, class Out>
    NTSTATUS created(T *object, Out **out)
    {
        {
            std::lock_guard lock(mu_);
            adopt(object);
        }
        *out = object;
        return STATUS_SUCCESS;
    }
    void adopt(Object *object); // lock held
    void forget(Object *object); // lock held

    // Every object not yet freed, in creation order.  Lock held.
    template <class F>
    void for_each_object(F &&visit)
    {
        for (Object *object : order_)
            visit(*object);
    }

    // QPs by number, for completions (ibv_wc names its QP by number).  Lock held.
    std::unordered_map<uint32_t, VQp *> &qps() { return qps_; }

    // Call a consumer callback on the engine.
    void deliver(std::function<void()> callback) { engine_.post(std::move(callback)); }

private:
    friend class Object;
    void on_completion_channel();
    void on_cm_event();
    void on_async_event();

    Miniport &miniport_;
    NDK_VERSION version_;
    ibv_context *context_ = nullptr;
    ibv_comp_channel *channel_ = nullptr;
    rdma_event_channel *cm_ = nullptr;
    std::mutex mu_;
    kit::ObjectRegistry<Object> registry_;
    std::vector<Object *> order_; // creation order, for the shutdown
    std::unordered_map<uint32_t, VQp *> qps_;
    Engine engine_; // last: stops first
};

extern const NDK_ADAPTER_DISPATCH kAdapterDispatch;

} // namespace ndk::verbs
