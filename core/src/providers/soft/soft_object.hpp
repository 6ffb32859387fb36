// The part every soft NDK object shares: its place in the adapter, and the lifetime rules of
// digest 3.1.  An object counts its dependents (successors such as the QPs on a CQ, children
// such as the MRs of a PD, and its own requests still in flight); closing it while any remain
// returns STATUS_PENDING, and the close completes, on the engine, once the last one is gone.
// A successor's close completion always returns before its antecedent's close completes.
#pragma once

#include "ndk/ndkpi.h"
#include "providers/kit/kit_object_header.hpp"

#include <functional>
#include <list>
#include <memory>
#include <vector>

namespace ndk::soft {

class SoftAdapter;

class SoftObject {
public:
    SoftObject(SoftAdapter &adapter, NDK_OBJECT_TYPE type) : adapter_(adapter), type_(type) {}
    virtual ~SoftObject() = default;
    SoftObject(const SoftObject &) = delete;
    SoftObject &operator=(const SoftObject &) = delete;

    virtual NDK_OBJECT_HEADER &header() = 0;
    NDK_OBJECT_TYPE type() const { return type_; }
    SoftAdapter &adapter() const { return adapter_; }

    // NDK_FN_CLOSE_OBJECT for every object type.
    NTSTATUS close(NDK_FN_CLOSE_COMPLETION completion, PVOID context);

    // The adapter lock must be held for these.
    void depend_on(SoftObject &antecedent);
    void add_dependent() { ++dependents_; }
    void release_dependent();
    bool close_requested() const { return close_requested_; }
    // The close completion is on its way (queued on the engine): no callback may follow it.
    bool close_completion_scheduled() const { return completion_scheduled_; }
    int dependents() const { return dependents_; }

protected:
    // Called once, under the adapter lock, when the close is requested: drop what the object
    // holds outside itself (ports, fabric entries) so a new object can take them at once.
    virtual void on_close() {}

private:
    friend class SoftAdapter;
    void schedule_close_completion();
    void release_antecedents();

    SoftAdapter &adapter_;
    NDK_OBJECT_TYPE type_;
    std::vector<SoftObject *> antecedents_;
    int dependents_ = 0;
    bool close_requested_ = false;
    bool completion_scheduled_ = false;
    NDK_FN_CLOSE_COMPLETION close_completion_ = nullptr;
    PVOID close_context_ = nullptr;
    std::function<void()> after_close_; // misbehave=callback_after_close: runs after the close
    std::list<std::unique_ptr<SoftObject>>::iterator self_; // in the adapter's object list
};

using kit::init_header;
using kit::query_extension_not_supported;

} // namespace ndk::soft
