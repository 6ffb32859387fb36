// A connector's line to the connector at the other end: the transport's half of connection
// establishment and teardown (docs/transport.md).  What one side does (soft_connector.cpp,
// soft_connection.cpp) reaches the other as one of these events, and the other side's
// connector takes it in the matching `on_*` function of soft_connection.hpp, so each rule of
// establishment (digest 1.8, 3.5, 3.6) is written once whichever transport carries the event.
//
// A connector holds its link from the moment a connect request links the two sides until the
// connection ends or establishment fails; an event that ends the relation also drops the
// receiver's link, and the sender drops its own.  Wire lock held (exclusive).
#pragma once

#include "soft_objects.hpp"

#include <cstdint>
#include <optional>
#include <span>

namespace ndk::soft {

class ConnectorLink {
public:
    virtual ~ConnectorLink() = default;

    // Passive -> active: the Accept's reply (MPA Reply) with its private data and the limits
    // the passive side settled on (its inbound, its outbound).
    virtual void reply(std::span<const unsigned char> private_data, ULONG inbound_read_limit,
                       ULONG outbound_read_limit) = 0;
    // Passive -> active: NdkReject (with its private data), or the passive connector's close
    // before it accepted (no private data).  False when the active side had given up already
    // (NdkReject: CONNECTION_ABORTED), which a transport to another process may learn only
    // now.
    virtual bool reject(std::optional<std::span<const unsigned char>> private_data) = 0;
    // Active -> passive: CompleteConnect (RFC 6581's ready-to-use): both sides are connected.
    // False when the passive side is gone meanwhile (nothing connected).
    virtual bool ready_to_use() = 0;
    // Active -> passive: the active side refuses the reply (NdkReject after the reply, its
    // close or its establishment timeout): the passive side's Accept fails.  False when the
    // passive side had given up already.
    virtual bool refuse_reply() = 0;
    // Either way, before establishment: this side gave up (close, timeout); the other side
    // learns it when it next acts (its Accept or CompleteConnect: CONNECTION_ABORTED).
    virtual void abandon() = 0;
    // Either way, once connected: the connection ended on this side for `reason`
    // (kDisconnectGraceful / Abortive / Error of soft_connection.hpp).
    virtual void disconnect(ULONG reason) = 0;
};

// Both connectors in this process: each event calls the other connector's `on_*` directly.
class InprocConnectorLink final : public ConnectorLink {
public:
    InprocConnectorLink(SoftConnector &self, SoftConnector &peer) : self_(self), peer_(peer) {}

    void reply(std::span<const unsigned char> private_data, ULONG inbound_read_limit,
               ULONG outbound_read_limit) override;
    bool reject(std::optional<std::span<const unsigned char>> private_data) override;
    bool ready_to_use() override;
    bool refuse_reply() override;
    void abandon() override;
    void disconnect(ULONG reason) override;

private:
    SoftConnector &self_;
    SoftConnector &peer_;
};

// Link two connectors of this process: `active`'s connect request has reached `passive`.
void link_inproc(SoftConnector &active, SoftConnector &passive);

} // namespace ndk::soft
