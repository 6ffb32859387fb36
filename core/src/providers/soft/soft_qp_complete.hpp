// Completing a QP's requests at the initiator, below both the data path that runs them
// (soft_transfer.cpp) and the connection management that ends them (soft_connection.cpp): one
// request done, its receiver-not-ready wait given up, or every queued request cancelled.  Lock
// held for every function.
#pragma once

#include "soft_objects.hpp"

namespace ndk::soft {

// `wr` is done with `status`: the MRs and MW it held since its post are let go, and its result
// goes to the initiator CQ unless it succeeded silently (digest 2.5).
void complete_initiator(SoftQp &qp, WorkRequest &wr, NTSTATUS status);

// The head send no longer waits for a receive at the peer (knob rnr_timeout_ms): its timer is
// cancelled, and one already queued on the engine finds itself stale.
void cancel_rnr_timer(SoftQp &qp);

// Complete every request still queued on the QP's initiator and receive queues with
// STATUS_CANCELLED (NdkFlush, Disconnect's implicit flush, close, an error).
void flush_qp(SoftQp &qp);

} // namespace ndk::soft
