// Checks on the objects a handle passes to the provider as arguments.
#pragma once

#include "ndk/objects.hpp"

#include <initializer_list>
#include <vector>

namespace ndk {

// Each object must be open (ClosedError otherwise): a closed object's header is the provider's
// freed memory.  Objects passed as arguments (the QP of a Connect, the MR and MW of a Bind) are
// entered like the object called (InCall), so none is closed under the call.  Null entries are
// passed through as NULL, for misuse scenarios.
inline std::vector<InCall> enter_arguments(std::initializer_list<const Object *> objects)
{
    std::vector<InCall> entered;
    entered.reserve(objects.size());
    for (const Object *object : objects)
        if (object != nullptr)
            entered.push_back(object->enter());
    return entered;
}

} // namespace ndk
