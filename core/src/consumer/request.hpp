// How a handle issues an asynchronous NDK request (one with NDK_FN_REQUEST_COMPLETION): begin
// a Call, keep the arguments the provider may still read alive until the call completes, issue
// it with the Call's context, record the inline return.
#pragma once

#include "ndk/call.hpp"
#include "ndk/objects.hpp"

#include <memory>
#include <utility>

namespace ndk {

// `issue(context)` calls the NDK function with Call::request_completion and `context`, and
// returns its NTSTATUS.  It must not throw: validate arguments before.  `owner`: the adapter
// the request is made on (Call::context).
template <class Issue>
Call issue_request(Adapter &owner, Issue &&issue, std::shared_ptr<const void> keep = nullptr)
{
    Call call = Call::begin();
    if (keep)
        call.on_complete([keep = std::move(keep)](NTSTATUS) {});
    void *context = call.context(owner);
    NTSTATUS status = std::forward<Issue>(issue)(context);
    call.returned(status, context);
    return call;
}

} // namespace ndk
