// An adapter's transport: where its connect requests go and how its listeners receive them
// (docs/transport.md, "The interface").  What crosses an established relation is the
// connector's ConnectorLink (soft_connector_link.hpp) and the QP's Channel (soft_channel.hpp),
// which the transport gives them; this is what comes before: finding the peer.
//
// One per adapter; the in-process fabric's is `inproc_transport()`.  Wire lock held
// (exclusive) for every call.
#pragma once

#include "soft_objects.hpp"

#include <span>

namespace ndk::soft {

class Transport {
public:
    virtual ~Transport() = default;

    // The listener takes connect requests at its endpoint from now on (its port is reserved),
    // until stop_listening.
    virtual void start_listening(SoftListener &listener) = 0;
    virtual void stop_listening(SoftListener &listener) = 0;

    // Carry the connect request of `c` (its local and remote endpoints and requested read
    // limits set) with `private_data` to its destination.  STATUS_SUCCESS: on its way, `c`
    // linked to the connector that will answer it; otherwise the refusal to return inline
    // (HOST_UNREACHABLE, CONNECTION_REFUSED), with nothing changed.
    virtual NTSTATUS connect(SoftConnector &c, std::span<const unsigned char> private_data) = 0;
};

// Both ends of every connection in this process (soft_inproc_transport.cpp).
Transport &inproc_transport();

} // namespace ndk::soft
