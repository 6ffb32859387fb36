// Which of the consumer's pointers name objects of an adapter.  The consumer hands NDK
// structure pointers back to the provider (a CQ to NdkCreateQp, an MR to NdkBind); a closed,
// foreign or wrongly typed one must not be followed, and the creating call returns
// STATUS_INVALID_PARAMETER (docs/semantics.md, QP-OBJECTS, CLOSED-ARGUMENT).  An object is
// "live" from its create until its close is requested, and "exists" until the provider frees
// it (a pending close, a callback still queued).  The adapter lock guards it.
#pragma once

#include "ndk/ndkpi.h"

#include <unordered_map>
#include <unordered_set>

namespace ndk::kit {

template <class Object>
class ObjectRegistry {
public:
    void add(Object &object)
    {
        live_[&object.header()] = &object;
        all_.insert(&object);
    }
    // The close was requested: the consumer's pointer names nothing any more.
    void retire(Object &object) { live_.erase(&object.header()); }
    // Freed.
    void remove(Object &object)
    {
        live_.erase(&object.header());
        all_.erase(&object);
    }
    void clear()
    {
        live_.clear();
        all_.clear();
    }

    // The live object of that type `ndk_object` names, or nullptr.
    template <class T>
    T *lookup(const void *ndk_object, NDK_OBJECT_TYPE type) const
    {
        auto it = live_.find(ndk_object);
        if (it == live_.end() || it->second->type() != type || it->second->close_requested())
            return nullptr;
        return static_cast<T *>(it->second);
    }
    // True while `object` has not been freed (it may be closing).
    bool exists(const Object *object) const { return all_.count(object) != 0; }

private:
    std::unordered_map<const void *, Object *> live_;
    std::unordered_set<const Object *> all_;
};

} // namespace ndk::kit
