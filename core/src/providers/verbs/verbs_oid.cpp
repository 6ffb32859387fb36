// The miniport's NDIS OID requests (digest 3.7).  iWARP runs over TCP, so on siw the
// connection and endpoint tables list each ND entry followed by its TCP twin (the same
// 4-tuple: siw's TCP connection uses the rdma_cm addresses and ports).
#include "verbs_oid.hpp"

#include "verbs_objects.hpp"
#include "providers/ndis_tables.hpp"

#include <algorithm>
#include <cstring>
#include <unistd.h>

namespace ndk::verbs {
namespace {

SOCKADDR_INET inet(const sockaddr *address)
{
    SOCKADDR_INET out{};
    if (address != nullptr)
        std::memcpy(&out, address, length_of(address));
    return out;
}

NDIS_STATUS query_connections(Miniport &miniport, void *buffer, ULONG length, ULONG *written,
                              ULONG *needed)
{
    ndis::ConnectionsTable table(miniport.device.iwarp);
    for (VerbsAdapter *adapter : miniport.adapters) {
        std::lock_guard lock(adapter->mu());
        adapter->for_each_object([&](Object &object) {
            if (object.type() != NdkObjectTypeConnector)
                return;
            auto &c = static_cast<VConnector &>(object);
            if (c.state != VConnector::State::Established || c.id == nullptr)
                return;
            table.add(inet(rdma_get_local_addr(c.id)), inet(rdma_get_peer_addr(c.id)));
        });
    }
    return table.write(buffer, length, written, needed);
}

NDIS_STATUS query_local_endpoints(Miniport &miniport, void *buffer, ULONG length, ULONG *written,
                                  ULONG *needed)
{
    ndis::LocalEndpointsTable table(miniport.device.iwarp);
    for (VerbsAdapter *adapter : miniport.adapters) {
        std::lock_guard lock(adapter->mu());
        adapter->for_each_object([&](Object &object) {
            const sockaddr *local = nullptr;
            bool listener = false;
            if (object.type() == NdkObjectTypeListener) {
                auto &l = static_cast<VListener &>(object);
                if (!l.listening || l.id == nullptr)
                    return;
                local = rdma_get_local_addr(l.id);
                listener = true;
            } else if (object.type() == NdkObjectTypeSharedEndpoint) {
                local = reinterpret_cast<const sockaddr *>(
                    &static_cast<VSharedEndpoint &>(object).address);
            }
            if (local == nullptr || object.closing())
                return;
            table.add(inet(local), listener);
        });
    }
    return table.write(buffer, length, written, needed);
}

NDIS_STATUS query_statistics(Miniport &miniport, void *buffer, ULONG length, ULONG *written,
                             ULONG *needed)
{
    NDIS_NDK_PERFORMANCE_COUNTERS counters;
    {
        std::lock_guard lock(miniport.mu);
        counters = miniport.counters; // octets/frames: the device's, not counted here
    }
    return ndis::write_statistics(counters, buffer, length, written, needed);
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
            return NDIS_STATUS_NOT_SUPPORTED;
        if (buffer == nullptr || length != sizeof(BOOLEAN)) {
            if (needed != nullptr)
                *needed = sizeof(BOOLEAN);
            return NDIS_STATUS_INVALID_LENGTH;
        }
        std::lock_guard lock(miniport.mu);
        miniport.enabled = *static_cast<const BOOLEAN *>(buffer) != FALSE;
        if (written != nullptr)
            *written = sizeof(BOOLEAN);
        return NDIS_STATUS_SUCCESS;
    }
    if (oid != OID_NDK_STATISTICS && oid != OID_NDK_CONNECTIONS && oid != OID_NDK_LOCAL_ENDPOINTS)
        return NDIS_STATUS_INVALID_OID;
    if (set)
        return NDIS_STATUS_NOT_SUPPORTED;
    if (oid == OID_NDK_STATISTICS)
        return query_statistics(miniport, buffer, length, written, needed);
    std::lock_guard lock(miniport.adapters_mu); // adapters cannot close meanwhile
    if (oid == OID_NDK_CONNECTIONS)
        return query_connections(miniport, buffer, length, written, needed);
    return query_local_endpoints(miniport, buffer, length, written, needed);
}

} // namespace ndk::verbs
