// Checks on the objects a handle passes to the provider as arguments.
#pragma once

#include "ndk/objects.hpp"

#include <initializer_list>

namespace ndk {

// Each object must be open (ClosedError otherwise): a closed object's header is the provider's
// freed memory.  Null entries are passed through as NULL, for misuse scenarios.
inline void check_open_arguments(std::initializer_list<const Object *> objects)
{
    for (const Object *object : objects)
        if (object != nullptr)
            object->check_open();
}

} // namespace ndk
