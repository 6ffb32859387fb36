// The part every soft NDK object shares: its place in the adapter, and the lifetime rules of
// digest 3.1 (kit::Lifetime): closing an object with dependents returns STATUS_PENDING, and
// the close completes, on the engine, once the last one is gone.
#pragma once

#include "ndk/ndkpi.h"
#include "providers/kit/kit_lifetime.hpp"
#include "providers/kit/kit_object_header.hpp"

#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <vector>

namespace ndk::soft {

class SoftAdapter;

class SoftObject : public kit::AdapterObject<SoftAdapter> {
public:
    using AdapterObject::AdapterObject;

    // NDK_FN_CLOSE_OBJECT for every object type.
    NTSTATUS close(NDK_FN_CLOSE_COMPLETION completion, PVOID context);

    // The close completion is on its way (queued on the engine): no callback may follow it.
    // The adapter lock must be held.
    bool close_completion_scheduled() const { return completion_scheduled_; }

protected:
    // Called once, under the adapter lock, when the close is requested: drop what the object
    // holds outside itself (ports, fabric entries) so a new object can take them at once.
    virtual void on_close() {}
    // Called once, under the adapter lock, when the object is freed (its close completed, or
    // the adapter's shutdown): what on_close() had to leave for the requests still holding it.
    virtual void on_destroy() {}
    // The last dependent of a pending close is gone: complete it on the engine.
    void on_last_dependent() override;

private:
    friend class SoftAdapter;
    void schedule_close_completion();
    // For the adapter: its shutdown closes what the consumer left open, and destroy() lets
    // the antecedents go.
    bool begin_shutdown_close() { return begin_close(); }
    void dereference() { pend_close(nullptr, nullptr); }
    void release_all_antecedents() { release_antecedents(); }

    // Atomic: the data path may schedule it (a flush releasing the last request that held an
    // MR) while another connection's event looks at it.
    std::atomic<bool> completion_scheduled_{false};
    std::function<void()> after_close_; // misbehave=callback_after_close: runs after the close
    std::list<std::unique_ptr<SoftObject>>::iterator self_; // in the adapter's object list
};

using kit::init_header;
using kit::query_extension_not_supported;

} // namespace ndk::soft
