// The soft RNIC's initiator data path: executing a QP's requests in order, each transfer
// through the connection's channel (soft_channel.hpp) to the peer's target side
// (soft_target.hpp), and what an error does to the connection (digest 1.7, 3.3, 3.4, 4.2; docs/semantics.md, DATA-*).  Lock held for every function.
#pragma once

#include "soft_objects.hpp"

namespace ndk::soft {

// Whether a request changes memory access (Bind, FastRegister, Invalidate, SendAndInvalidate,
// a Read that invalidates its sink): it is posted and executed only with the wire lock held
// exclusive, since other connections read the token tables it changes.
bool changes_memory_access(const WorkRequest &wr);

// Run the QP's released initiator requests now, or, under manual progress, queue a step that
// does.  Call after anything that may let a request proceed (a post, a receive at the peer).
// Under Hold::Shared a request that changes memory access, and what follows it, is left for
// the engine, which runs it exclusive.
void kick(SoftQp &qp, Hold hold = Hold::Exclusive);

// An error completion ended the connection: both QPs go to the error state and flush, the
// peer gets a disconnect event (ND2 QP error model, digest 4.2).
void fail_connection(SoftQp &qp);

// A receive was posted on `qp` (or on its SRQ): a send blocked at the peer may now proceed.
void receive_posted(SoftQp &qp, Hold hold = Hold::Exclusive);

// The channel's answer to the request in flight at the head of `qp`'s queue (one that
// returned Answer::later): it completes with `status` and the queue goes on.  Under Hold::Shared
// the head must not change memory access (the transport hands such an answer to the engine).
void answered(SoftQp &qp, NTSTATUS status, Hold hold);

} // namespace ndk::soft
