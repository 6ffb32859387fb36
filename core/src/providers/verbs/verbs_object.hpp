// What every verbs NDK object shares: its place in the adapter and the lifetime rules of
// digest 3.1 (kit::Lifetime): a close with dependents returns STATUS_PENDING and completes on
// the adapter's engine once the last one is gone.  A close without dependents frees the verbs
// resources on the engine and returns STATUS_SUCCESS, so no callback of the object can run
// after it (the engine is the only thread that calls them).
#pragma once

#include "ndk/ndkpi.h"
#include "providers/kit/kit_lifetime.hpp"
#include "providers/kit/kit_object_header.hpp"

#include <vector>

namespace ndk::verbs {

class VerbsAdapter;

class Object : public kit::AdapterObject<VerbsAdapter> {
public:
    using AdapterObject::AdapterObject;

    // NDK_FN_CLOSE_OBJECT for every object type.
    NTSTATUS close(NDK_FN_CLOSE_COMPLETION completion, PVOID context);

    // Adapter shutdown: free what the consumer left open (engine thread, no lock).
    void force_destroy();

protected:
    // Under the adapter lock, once, when the close is requested.
    virtual void on_close() {}
    // On the engine thread, without the lock: free the verbs resources.  Every successor is
    // gone by then.
    virtual void destroy_resources() {}
    // The last dependent of a pending close is gone: finish it on the engine.
    void on_last_dependent() override;

private:
    friend class VerbsAdapter;
    void finish(); // engine thread: destroy, complete the close, release antecedents, delete
};

using kit::init_header;
using kit::query_extension_not_supported;

} // namespace ndk::verbs
