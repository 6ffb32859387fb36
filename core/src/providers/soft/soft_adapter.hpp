// The soft NDK adapter: its dispatch table, its object table and the two helpers every create
// and every asynchronous request goes through.  Both complete inline: pending completion
// modes and injected failures are the fault layer's, in front of the provider (docs/knobs.md).
#pragma once

#include "soft_engine.hpp"
#include "soft_miniport.hpp"
#include "soft_object.hpp"
#include "soft_token_table.hpp"
#include "soft_wire_lock.hpp"
#include "providers/kit/kit_object_registry.hpp"

#include <array>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ndk::soft {

class Transport;

class SoftAdapter : public NDK_ADAPTER {
public:
    SoftAdapter(Miniport &miniport, NDK_VERSION version);
    ~SoftAdapter();

    static SoftAdapter *from(NDK_ADAPTER *adapter) { return static_cast<SoftAdapter *>(adapter); }

    Miniport &miniport() const { return miniport_; }
    Knobs &knobs() const { return miniport_.knobs; }
    NDK_VERSION version() const { return version_; }
    NDK_ADAPTER_INFO info() const { return knobs().adapter_info(version_); }
    Misbehave misbehave() const { return knobs().misbehave(); }
    Engine &engine() { return engine_; }
    WireLock &mu() { return mu_; }
    // Where connect requests go and how listeners get them (soft_transport.hpp).
    Transport &transport();
    // The miniport's own transport (shm, tcp), nullptr for the in-process fabric.
    Transport *own_transport() const { return miniport_.transport.get(); }

    // Blocking close (CLOSE_NDK_ADAPTER_HANDLER): delivers every queued callback, tears down
    // what the consumer left open, and returns when no callback can follow (digest 3.1).
    void shutdown();

    // Find a live object of the given type from a consumer's pointer; nullptr when the pointer
    // is not a live object of this adapter (closed, foreign, wrong type).  Lock held.
    template <class T>
    T *lookup(const void *ndk_object, NDK_OBJECT_TYPE type)
    {
        return registry_.lookup<T>(ndk_object, type);
    }

    // Create an object: object cap, then `make` (which validates what needs the lock and
    // returns the object, or nullptr with `status` set); the object is returned inline.
    template <class T, class Out>
    NTSTATUS create(Out **out, const std::function<std::unique_ptr<T>(NTSTATUS &)> &make)
    {
        std::unique_lock lock(mu_);
        if (at_cap(T::kType))
            return STATUS_INSUFFICIENT_RESOURCES;
        NTSTATUS status = STATUS_SUCCESS;
        std::unique_ptr<T> made = make(status);
        if (!made)
            return status;
        T *object = made.get();
        adopt(std::move(made));
        lock.unlock();
        *out = object;
        return STATUS_SUCCESS;
    }

    // An asynchronous request: `perform`, inline.  `undo` (optional) runs when the request
    // fails, to release what the caller set up for it.
    static NTSTATUS request(const std::function<NTSTATUS()> &perform,
                            const std::function<void()> &undo = {});

    // Post a consumer callback on the engine (the provider's own thread).
    void deliver(std::function<void()> callback) { engine_.post(std::move(callback)); }

    // On the engine: call a pending request's completion (a Connect's or an Accept's), then
    // drop the dependent reference it holds on `object` (nullptr: none).
    void finish_request(SoftObject *object, NDK_FN_REQUEST_COMPLETION completion, PVOID context,
                        NTSTATUS status);

    // Logical address mappings built by NdkBuildLAM: I/O virtual page -> host page.
    struct LamTable {
        std::unordered_map<uint64_t, uintptr_t> pages;
        std::unordered_map<const void *, std::vector<uint64_t>> mappings; // by AdapterContext
    };
    LamTable &lams() { return lams_; } // lock held

    UINT32 privileged_token() const { return kPrivilegedToken; }

    // Memory tokens: the MR or MW each local or remote token names.  Lock held.
    TokenTable<SoftObject> &tokens() { return tokens_; }
    // True while `object` has not been destroyed (it may be closing).  Lock held.
    bool exists(const SoftObject *object) const { return registry_.exists(object); }

    // Every object of this adapter not yet destroyed, in creation order.  Lock held.
    template <class F>
    void for_each_object(F &&visit)
    {
        for (auto &object : objects_)
            visit(*object);
    }
    // Take ownership of an object made outside create() (a connector delivered by a connect
    // event).  Lock held.
    void adopt(std::unique_ptr<SoftObject> object);

private:
    friend class SoftObject;
    static constexpr UINT32 kPrivilegedToken = 0x00000001;

    bool at_cap(NDK_OBJECT_TYPE type) const; // lock held
    void destroy(SoftObject &object);                // lock held

    Miniport &miniport_;
    NDK_VERSION version_;
    WireLock &mu_; // the fabric's wire lock (soft_fabric.hpp, soft_wire_lock.hpp)
    std::list<std::unique_ptr<SoftObject>> objects_; // creation order
    kit::ObjectRegistry<SoftObject> registry_;
    LamTable lams_;
    TokenTable<SoftObject> tokens_;
    Engine engine_; // last: its thread stops first, before the tables above go away
};

} // namespace ndk::soft
