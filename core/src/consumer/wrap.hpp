// The function a create Call uses to turn the created NDK object into its handle.  It runs
// inline or on the provider's thread (create completion), and registers the handle with its
// adapter so the adapter's close can close it first.
#pragma once

#include "ndk/objects.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace ndk {

// How many leading entries of an object's dispatch table must be set: all of them, except
// that a connector of NDKPI 2.0 has no 2.1 members (digest 2.7).
template <class Ndk>
size_t required_dispatch_entries(const Ndk *object)
{
    using Dispatch = std::remove_const_t<std::remove_pointer_t<decltype(object->Dispatch)>>;
    if constexpr (std::is_same_v<Ndk, NDK_CONNECTOR>) {
        NDK_VERSION v = object->Header.Version;
        if (v.Major < 2 || (v.Major == 2 && v.Minor < 1))
            return offsetof(NDK_CONNECTOR_DISPATCH, NdkCompleteConnectEx) / sizeof(void *);
    }
    return sizeof(Dispatch) / sizeof(void *);
}

// A created object is usable only through a full dispatch table (digest 1.0: the provider sets
// Dispatch before it returns the object).  A provider that breaks this would have the consumer
// call through NULL; the create's result raises ProviderFault instead, and the object is left
// to the provider (there is no close function to call).
template <class Ndk>
void check_dispatch(const Ndk *object)
{
    const char *problem = nullptr;
    if (object->Dispatch == nullptr) {
        problem = "whose Dispatch is NULL";
    } else {
        // Every member of an NDK dispatch table is a function pointer (ndkpi.h).
        auto *entries = reinterpret_cast<void *const *>(object->Dispatch);
        for (size_t i = 0, n = required_dispatch_entries(object); i < n; ++i)
            if (entries[i] == nullptr)
                problem = "whose dispatch table has a NULL function";
    }
    if (problem)
        throw ProviderFault(std::string("the provider created a ") +
                            object_type_name(object->Header.ObjectType) + " " + problem +
                            " (digest 1.0); the object cannot be used");
}

template <class T, class... Args>
std::function<std::shared_ptr<Object>(NDK_OBJECT_HEADER *)>
wrapper(std::shared_ptr<Adapter> adapter, Args... args)
{
    return [adapter = std::move(adapter), args...](NDK_OBJECT_HEADER *header) {
        using Ndk = std::remove_pointer_t<decltype(std::declval<T>().ndk())>;
        // The header is the first member of every NDK object (digest 1.0).
        auto *ndk = reinterpret_cast<Ndk *>(header);
        check_dispatch(ndk);
        auto object = std::make_shared<T>(adapter, ndk, args...);
        adapter->track(object);
        return std::shared_ptr<Object>(object);
    };
}

} // namespace ndk
