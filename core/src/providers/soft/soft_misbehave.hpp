// The `misbehave` knob: the one knob that makes the soft provider break the NDK contract, one
// rule at a time, so that a validation layer can be shown to catch each violation (the list
// and what each breaks: docs/knobs.md, "Misbehaving on purpose").  Everything outside the
// broken rule stays as it is: the provider stays memory-safe and frees everything at adapter
// close, whatever a consumer without the layer makes of it.
//
// This file holds the names and the small helpers the hooks call; each hook sits in the soft
// file where the behaviour it breaks lives, and reads the setting with one relaxed atomic load
// (SoftAdapter::misbehave()).
#pragma once

#include "ndk/ndkpi.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ndk::soft {

class SoftObject;
class SoftQp;

enum class Misbehave : uint8_t {
    None,
    // Create completions (digest 1.0): every path of every NdkCreateXxx.
    CompleteAfterInline,  // an inline return also calls the completion, before returning
    CompleteTwice,        // a pending create calls its completion twice
    NeverComplete,        // a pending create never calls its completion
    OutParamAfterPending, // a pending create also writes *ppNdkXxx
    // The same three for asynchronous requests (RegisterMr, Listen, Connect, Accept, ...).
    RequestCompleteAfterInline,
    RequestCompleteTwice,
    RequestNeverComplete,
    // Object headers and dispatch tables of new objects (digest 1.0).
    HeaderVersion,  // Version.Major is the adapter's Major + 1
    HeaderType,     // ObjectType is NdkObjectTypeMax
    HeaderReserved, // NdkReserved.rf[0] is (PVOID)1
    DispatchNull,   // Dispatch is NULL
    // Lifetime (digest 3.1).
    CallbackAfterClose,   // a closed CQ's notification callback is called once more
    CloseAntecedentEarly, // a close with dependents returns SUCCESS (and completes never)
    // CQ notifications (digest 3.2).
    NotifyUnarmed,         // a completion on an unarmed CQ calls the callback anyway
    NotifyTwice,           // a satisfied arm calls the callback twice
    ConcurrentCqCallbacks, // each notification is delivered from two threads at once
    // Results (digest 2.3, 2.5) and completions of the initiator queue.
    ProviderErrorCode,  // a successful NDK_RESULT_EX carries ProviderErrorCode 0x1234
    DropInvalidateToken, // ReceiveAndInvalidate reports ~token
    CompleteSilent,      // a SILENT_SUCCESS request that succeeds still completes
    DropCompletion,      // the 1st, 3rd, ... successful initiator completion of a QP is lost
    ReorderCompletions,  // initiator completions arrive in swapped pairs: 2, 1, 4, 3, ...
    // Statuses (digest 1.2, 1.3).
    UndocumentedStatus,     // NdkCreatePd fails with INVALID_PARAMETER_MIX
    ModerationPending,      // NdkControlCqInterruptModeration returns PENDING
    ModerationNotSupported, // ... returns NOT_SUPPORTED although the adapter flag is set
};

std::optional<Misbehave> parse_misbehave(std::string_view name);
const char *misbehave_name(Misbehave mode);
// Every valid name, comma separated, for the knob's error reply.
std::string misbehave_names();

// The ProviderErrorCode that provider_error_code puts on successful results.
inline constexpr ULONG kMisbehaveProviderErrorCode = 0x1234;
// How many times concurrent_cq_callbacks calls the callback from each of its two threads.
inline constexpr int kConcurrentCallbackRounds = 200;

// header_version, header_type, header_reserved: break a new object's header.
void misbehave_header(Misbehave mode, NDK_OBJECT_HEADER &header);

// callback_after_close: for a CQ being closed, a call of its notification callback with
// STATUS_SUCCESS, captured now so it can run after the CQ is gone; empty for other objects.
std::function<void()> cq_callback_after_close(SoftObject &object);

// Call a CQ notification callback as the mode says: once, twice in a row (notify_twice), or
// from the calling thread and a second thread at the same time, kConcurrentCallbackRounds
// times each (concurrent_cq_callbacks).  Never with the wire lock held.
void call_cq_notification(Misbehave mode, NDK_FN_CQ_NOTIFICATION_CALLBACK notify, PVOID context,
                          NTSTATUS status);

// What drop_completion and reorder_completions keep per QP.  Wire lock held.
struct InitiatorCompletionShuffle {
    uint64_t successes = 0;                  // drop_completion: successful completions so far
    std::optional<NDK_RESULT_EX> held_back;  // reorder_completions: the first of a pair
};

// Queue an initiator completion on the QP's CQ through drop_completion or reorder_completions.
// Wire lock held.
void post_shuffled_initiator_result(Misbehave mode, SoftQp &qp, const NDK_RESULT_EX &result);
// A completion reorder_completions still holds back goes to the CQ now (flush, disconnect,
// close).  Wire lock held.
void release_held_back_completion(SoftQp &qp);

} // namespace ndk::soft
