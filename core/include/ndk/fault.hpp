// The fault layer (core/src/layers/fault/): the test knobs `fail`, `hold`, `create_mode`,
// `request_mode`, `close_mode`, `seed` and the `misbehave` names visible at the ABI edge, acted
// in front of any provider (docs/knobs.md, docs/architecture.md).  ndk::Adapter::open and
// ndk::RawAdapter stack it over every provider.
#pragma once

#include "ndk/provider.h"
#include "ndk/registry.hpp"

#include <atomic>
#include <memory>

namespace ndk::fault {

// `inner` behind the fault layer: a miniport of the result is the layer's over one of
// `inner`'s, created with the options the layer does not act.  Its name is `inner`'s.
std::shared_ptr<Provider> wrap(std::shared_ptr<Provider> inner);

// A call held by the knob `hold` asks `check` at least every 50 ms while it waits; when it
// returns true, that call's hold ends as if released.  The Python binding sets one so that a
// signal whose Python handler raises (Ctrl-C's KeyboardInterrupt) ends a held call on the main
// thread, which raises it when the call returns.  Null (the default): a hold ends only by
// `release` or by its adapter's close.
using HoldInterrupted = bool (*)();
void set_hold_interrupted(HoldInterrupted check);

// What a call in progress on this thread is on, for the holds: the consumer marks each
// object and adapter it enters a call on (ndk::InCall) by the flag its close sets, and a call
// the knob `hold` holds ends as soon as one of its flags is set and wake_holds() is called
// (docs/semantics.md, CLOSE-HELD): the close of an object ends the holds of the calls on it.
void enter_closable(const std::atomic<bool> *closing);
void leave_closable(const std::atomic<bool> *closing);
// Wake every held call of the process to check its flags (a close just set one).
void wake_holds();

} // namespace ndk::fault
