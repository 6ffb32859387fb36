// A Call records what one asynchronous NDK call did: its inline status, whether and how often
// its completion fired, with what status and object.  Conformance scenarios need all of it
// ("returned STATUS_PENDING, then completed exactly once with STATUS_SUCCESS"), not just
// "it worked" (ARCHITECTURE, "The C++ consumer API").
#pragma once

#include "ndk/ndkpi.h"
#include "ndk/status.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

namespace ndk {

class Adapter;

// A provider refused a knob: it has no knobs, or not this one.
class KnobError : public Error {
public:
    using Error::Error;
};

// A call on an object that is closed (or on an object of a closed adapter).
class ClosedError : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

// A call in a forked child on an adapter (or an object of one) that the parent opened: the
// child does not own it (docs/semantics.md, FORK).
class InheritedError : public ClosedError {
public:
    using ClosedError::ClosedError;
};

// A provider broke the ABI in a way the consumer cannot go on from: a created object without
// a dispatch table, or with a NULL entry where NDK requires a function.  The object is not
// used (its close included: there is no function to call), and the call's result raises this.
class ProviderFault : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Object;

// Free what completions released on the provider's thread (see call.cpp).  Called by every
// Call::begin and wait, and by Adapter::close; callers may call it at any consumer-side point.
void release_parked();

struct CallState {
    mutable std::mutex mu;
    std::condition_variable cv;
    bool returned = false;  // the call itself has returned
    bool finishing = false; // its completion (or inline return) is being recorded
    NTSTATUS inline_status = STATUS_PENDING;
    int completions = 0;
    NTSTATUS completion_status = STATUS_PENDING;
    std::shared_ptr<Object> object; // the created object, once there is one
    std::string fault;              // why the created object is unusable (ProviderFault)
    std::function<std::shared_ptr<Object>(NDK_OBJECT_HEADER *)> wrap;
    std::function<void(NTSTATUS)> on_complete; // runs once, on success or failure
};

class Call {
public:
    using Seconds = std::chrono::duration<double>;

    Call() = default;

    // Start recording a call; `wrap` turns a created NDK object into its handle.
    static Call begin(std::function<std::shared_ptr<Object>(NDK_OBJECT_HEADER *)> wrap = {});
    // The context to pass to the provider with the completion functions below, for a call on
    // `owner` (or one of its objects): the adapter's close lets it go with the rest of its
    // contexts, should the provider never complete the call (Adapter::track_context).
    void *context(Adapter &owner) const;
    // Record the inline return of the call that was given `context`; `created` is the
    // out-parameter of a create that returned STATUS_SUCCESS.  Any status but STATUS_PENDING
    // means no completion will come, so the context is released here.
    void returned(NTSTATUS status, void *context, NDK_OBJECT_HEADER *created = nullptr) const;
    // A call that completes without a completion callback (NTSTATUS-returning inline calls).
    static Call inline_result(NTSTATUS status);
    // Run `action(status)` once the call is done (inline or by completion), before anyone
    // waiting on the call wakes; actions added later run at once, in the caller's thread.
    void on_complete(std::function<void(NTSTATUS)> action) const;

    static void create_completion(PVOID context, NTSTATUS status, NDK_OBJECT_HEADER *object);
    static void request_completion(PVOID context, NTSTATUS status);
    static void close_completion(PVOID context);

    bool valid() const { return state_ != nullptr; }
    NTSTATUS status() const; // the inline status
    int completions() const;
    std::optional<NTSTATUS> completion_status() const;
    bool done() const;
    // Wait until done; false on timeout.  No timeout: wait forever.  A set `stop` ends the wait
    // too (false) when wake() is called after it was set: a close (ndk/close_signal.hpp).
    bool wait(std::optional<Seconds> timeout = std::nullopt,
              const std::atomic<bool> *stop = nullptr) const;
    // Wake the waits in wait() to check their `stop`.
    void wake() const;
    // The final status: the inline status, or the completion's after STATUS_PENDING.
    // Throws std::logic_error if the call is not done.
    NTSTATUS result() const;
    // The created object; throws ProviderFault when the provider created an unusable one.
    std::shared_ptr<Object> object() const;

private:
    explicit Call(std::shared_ptr<CallState> state) : state_(std::move(state)) {}
    static void finish(CallState &state, NTSTATUS status, std::unique_lock<std::mutex> &lock);
    static void adopt(CallState &state, NDK_OBJECT_HEADER *created);

    std::shared_ptr<CallState> state_;
};

} // namespace ndk
