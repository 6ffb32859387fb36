// The `misbehave` knob: the one knob that makes the soft provider break the NDK contract, one
// rule at a time, so that a validation layer can be shown to catch each violation (the list
// and what each breaks: docs/knobs.md, "Misbehaving on purpose").  Only the names that need
// the provider's internals are here: the fault layer acts those visible at the ABI edge
// (core/src/layers/fault/), in front of every provider.  These four act inside the provider:
// whether an object still has dependents (close_antecedent_early) and whether a completion
// reached a CQ nobody armed (notify_unarmed) are the provider's state, which the edge does not
// see; concurrent_cq_callbacks overlaps the provider's own callback thread with a second one;
// callback_after_close calls the callback from the provider's engine once the provider has
// freed the CQ, the lifetime case a validation layer must catch from a real provider.
// Everything outside the broken rule stays as it is: the provider stays memory-safe and frees
// everything at adapter close, whatever a consumer without the layer makes of it.
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

enum class Misbehave : uint8_t {
    None,
    // Lifetime (digest 3.1).
    CallbackAfterClose,   // a closed CQ's notification callback is called once more
    CloseAntecedentEarly, // a close with dependents returns SUCCESS (and completes never)
    // CQ notifications (digest 3.2).
    NotifyUnarmed,         // a completion on an unarmed CQ calls the callback anyway
    ConcurrentCqCallbacks, // each notification is delivered from two threads at once
};

std::optional<Misbehave> parse_misbehave(std::string_view name);
const char *misbehave_name(Misbehave mode);
// Every valid name, comma separated, for the knob's error reply.
std::string misbehave_names();

// How many times concurrent_cq_callbacks calls the callback from each of its two threads.
inline constexpr int kConcurrentCallbackRounds = 200;

// callback_after_close: for a CQ being closed, a call of its notification callback with
// STATUS_SUCCESS, captured now so it can run after the CQ is gone; empty for other objects.
std::function<void()> cq_callback_after_close(SoftObject &object);

// Call a CQ notification callback as the mode says: once, or from the calling thread and a
// second thread at the same time, kConcurrentCallbackRounds times each
// (concurrent_cq_callbacks).  Never with the wire lock held.
void call_cq_notification(Misbehave mode, NDK_FN_CQ_NOTIFICATION_CALLBACK notify, PVOID context,
                          NTSTATUS status);

} // namespace ndk::soft
