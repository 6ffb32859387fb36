// An adapter's transport: where its connect requests go and how its listeners receive them
// (docs/transport.md, "The interface").  What crosses an established relation is the
// connector's ConnectorLink (soft_connector_link.hpp) and the QP's Channel (soft_channel.hpp),
// which the transport gives them; this is what comes before: finding the peer.
//
// One per adapter; the in-process fabric's is `inproc_transport()`.  Wire lock held
// (exclusive) for every call.
#pragma once

#include "soft_objects.hpp"
#include "soft_quiet.hpp"

#include <span>
#include <stdexcept>

namespace ndk::soft {

class Transport {
public:
    virtual ~Transport() = default;

    // The listener takes connect requests at its endpoint from now on (its port is reserved),
    // until stop_listening.  Not STATUS_SUCCESS: the listen fails with it, nothing changed
    // (tcp: the host's port is another program's, STATUS_SHARING_VIOLATION).
    virtual NTSTATUS start_listening(SoftListener &listener) = 0;
    virtual void stop_listening(SoftListener &listener) = 0;

    // Carry the connect request of `c` (its local and remote endpoints and requested read
    // limits set) with `private_data` to its destination.  STATUS_SUCCESS: on its way, `c`
    // linked to the connector that will answer it; otherwise the refusal to return inline
    // (HOST_UNREACHABLE, CONNECTION_REFUSED), with nothing changed.
    virtual NTSTATUS connect(SoftConnector &c, std::span<const unsigned char> private_data) = 0;

    // A consumer polled a CQ of the adapter and found it empty: a transport whose peers' messages
    // arrive on a thread of its own may serve them here, on the polling thread (shm: the links'
    // rings; tcp: the links' sockets), so that a busy-polling consumer needs no thread wake-up
    // per message.  True when
    // it served something (poll again).  No lock held; the only call without the wire lock.
    virtual bool poll_from_consumer() { return false; }

    // The knob `quiescent` (soft_quiet.hpp): whether nothing this transport holds can make
    // anything happen until a consumer calls.  True only when its progress thread is idle (its
    // mutex then held in `ledger` until the answer is made), nothing is queued for that thread,
    // no establishment is in flight, nothing waits to be read or to reach the peer on any
    // connection, and every open connection's end is named in `ledger` with the end it talks
    // to.  A transport that cannot tell says false.  Wire lock held (exclusive).
    virtual bool quiescent(QuietLedger & /*ledger*/) { return false; }
};

// A transport cannot take an address of its miniport (what() names it and why): another
// process holds it (shm), or it is not this host's (tcp).
struct AddressUnavailable : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Both ends of every connection in this process (inproc/inproc_transport.cpp).
Transport &inproc_transport();

// What every transport does the same way when a connect request arrives (soft_listener.cpp).
//
// Whether `adapter` may connect to an address of `owner` (docs/semantics.md, CONN-LOOPBACK).
bool loopback_allowed(SoftAdapter &adapter, const Miniport &owner);
// The listener at `local` that takes connect requests now, or null: none, paused (it looks
// absent, digest 1.9), closing (it rejects at once, 3.5).
SoftListener *listener_taking_requests(const Endpoint &local);
// The read limits a connect request asks for (the active side's inbound and outbound).
struct RequestedReadLimits {
    ULONG inbound = 0, outbound = 0;
};
// A request from `remote` reached `listener`: the new passive connector, adopted by the
// listener's adapter, holding the listener's endpoint (+1, digest 3.5) and the listener.  The
// transport links it, then calls deliver_connect_event.
SoftConnector &connect_request_arrived(SoftListener &listener, const Endpoint &remote,
                                       RequestedReadLimits requested,
                                       std::span<const unsigned char> private_data);
void deliver_connect_event(SoftConnector &incoming);

} // namespace ndk::soft
