#include "soft_oid.hpp"

#include "soft_objects.hpp"
#include "providers/ndis_tables.hpp"

#include <algorithm>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace ndk::soft {
namespace {

SOCKADDR_INET sockaddr_inet(const Endpoint &endpoint)
{
    SOCKADDR_INET out{};
    ULONG length = sizeof out;
    endpoint.to_sockaddr(reinterpret_cast<SOCKADDR *>(&out), &length);
    return out;
}

// iWARP runs over TCP, so its ND endpoints are also TCP endpoints: the tables list each entry
// twice, ND first, TCP second (digest 3.7).  The soft fabric's TCP 4-tuple is the ND one.
bool mapped_to_tcp(const Miniport &miniport)
{
    return miniport.knobs.adapter_info({2, 1}).RdmaTechnology == NdkiWarp;
}

NDIS_STATUS query_connections(Miniport &miniport, void *buffer, ULONG length, ULONG *written,
                              ULONG *needed)
{
    ndis::ConnectionsTable table(mapped_to_tcp(miniport));
    for (SoftAdapter *adapter : miniport.adapters) {
        adapter->for_each_object([&](SoftObject &object) {
            if (object.type() != NdkObjectTypeConnector)
                return;
            auto &c = static_cast<SoftConnector &>(object);
            if (c.state != SoftConnector::State::Connected)
                return;
            table.add(sockaddr_inet(c.local), sockaddr_inet(c.remote));
        });
    }
    return table.write(buffer, length, written, needed);
}

NDIS_STATUS query_local_endpoints(Miniport &miniport, void *buffer, ULONG length, ULONG *written,
                                  ULONG *needed)
{
    ndis::LocalEndpointsTable table(mapped_to_tcp(miniport));
    for (SoftAdapter *adapter : miniport.adapters) {
        adapter->for_each_object([&](SoftObject &object) {
            const std::shared_ptr<PortReservation> *port = nullptr;
            bool listener = false;
            if (object.type() == NdkObjectTypeListener) {
                auto &l = static_cast<SoftListener &>(object);
                if (!l.listening)
                    return;
                port = &l.port;
                listener = true;
            } else if (object.type() == NdkObjectTypeSharedEndpoint) {
                port = &static_cast<SoftSharedEndpoint &>(object).port;
            }
            if (port == nullptr || !*port || object.close_requested())
                return;
            table.add(sockaddr_inet((*port)->endpoint()), listener);
        });
    }
    return table.write(buffer, length, written, needed);
}

NDIS_STATUS query_statistics(Miniport &miniport, void *buffer, ULONG length, ULONG *written,
                             ULONG *needed)
{
    return ndis::write_statistics(miniport.counters, buffer, length, written, needed);
}

} // namespace

NDIS_STATUS oid_request(Miniport &miniport, NDIS_OID oid, bool set, void *buffer, ULONG length,
                        ULONG *written, ULONG *needed)
{
    if (written != nullptr)
        *written = 0;
    if (needed != nullptr)
        *needed = 0;
    if (oid == OID_NDK_SET_STATE) {
        if (!set)
            return NDIS_STATUS_NOT_SUPPORTED; // a set-only OID
        if (buffer == nullptr || length != sizeof(BOOLEAN)) {
            if (needed != nullptr)
                *needed = sizeof(BOOLEAN);
            return NDIS_STATUS_INVALID_LENGTH;
        }
        // FALSE disables NDK: adapters already open stay, new opens fail until TRUE.
        BOOLEAN enable = *static_cast<const BOOLEAN *>(buffer);
        std::string why;
        miniport.knobs.set("adapter_not_ready", enable ? "0" : "1", why);
        if (written != nullptr)
            *written = sizeof(BOOLEAN);
        return NDIS_STATUS_SUCCESS;
    }
    if (oid != OID_NDK_STATISTICS && oid != OID_NDK_CONNECTIONS && oid != OID_NDK_LOCAL_ENDPOINTS)
        return NDIS_STATUS_INVALID_OID;
    if (set)
        return NDIS_STATUS_NOT_SUPPORTED; // query-only OIDs
    std::lock_guard lock(Fabric::instance().wire());
    if (oid == OID_NDK_STATISTICS)
        return query_statistics(miniport, buffer, length, written, needed);
    if (oid == OID_NDK_CONNECTIONS)
        return query_connections(miniport, buffer, length, written, needed);
    return query_local_endpoints(miniport, buffer, length, written, needed);
}

} // namespace ndk::soft
