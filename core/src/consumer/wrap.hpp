// The function a create Call uses to turn the created NDK object into its handle.  It runs
// inline or on the provider's thread (create completion), and registers the handle with its
// adapter so the adapter's close can close it first.
#pragma once

#include "ndk/objects.hpp"

#include <functional>
#include <memory>

namespace ndk {

template <class T, class... Args>
std::function<std::shared_ptr<Object>(NDK_OBJECT_HEADER *)>
wrapper(std::shared_ptr<Adapter> adapter, Args... args)
{
    return [adapter = std::move(adapter), args...](NDK_OBJECT_HEADER *header) {
        using Ndk = std::remove_pointer_t<decltype(std::declval<T>().ndk())>;
        // The header is the first member of every NDK object (digest 1.0).
        auto object = std::make_shared<T>(adapter, reinterpret_cast<Ndk *>(header), args...);
        adapter->track(object);
        return std::shared_ptr<Object>(object);
    };
}

} // namespace ndk
