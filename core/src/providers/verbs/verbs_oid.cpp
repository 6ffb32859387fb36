// The miniport's NDIS OID requests (digest 3.7).  iWARP runs over TCP, so on siw the
// connection and endpoint tables list each ND entry followed by its TCP twin (the same
// 4-tuple: siw's TCP connection uses the rdma_cm addresses and ports).
#include "verbs_oid.hpp"

#include "verbs_objects.hpp"

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

template <class Table, class Entry>
NDIS_STATUS write_table(const Table &head, size_t entries_offset, const std::vector<Entry> &entries,
                        void *buffer, ULONG length, ULONG *written, ULONG *needed)
{
    size_t size = entries_offset + entries.size() * sizeof(Entry);
    if (needed != nullptr)
        *needed = static_cast<ULONG>(size);
    if (buffer == nullptr || length < size)
        return NDIS_STATUS_BUFFER_TOO_SHORT;
    std::memset(buffer, 0, size);
    std::memcpy(buffer, &head, entries_offset);
    if (!entries.empty())
        std::memcpy(static_cast<unsigned char *>(buffer) + entries_offset, entries.data(),
                    entries.size() * sizeof(Entry));
    if (written != nullptr)
        *written = static_cast<ULONG>(size);
    return NDIS_STATUS_SUCCESS;
}

USHORT header_size(size_t size) { return static_cast<USHORT>(std::min<size_t>(size, 0xFFFF)); }

NDIS_STATUS query_connections(Miniport &miniport, void *buffer, ULONG length, ULONG *written,
                              ULONG *needed)
{
    bool paired = miniport.device.iwarp;
    std::vector<NDIS_NDK_CONNECTION_ENTRY> entries;
    for (VerbsAdapter *adapter : miniport.adapters) {
        std::lock_guard lock(adapter->mu());
        adapter->for_each_object([&](Object &object) {
            if (object.type() != NdkObjectTypeConnector)
                return;
            auto &c = static_cast<VConnector &>(object);
            if (c.state != VConnector::State::Established || c.id == nullptr)
                return;
            NDIS_NDK_CONNECTION_ENTRY nd{};
            nd.Local = inet(rdma_get_local_addr(c.id));
            nd.Remote = inet(rdma_get_peer_addr(c.id));
            nd.UserModeOwner = FALSE; // an NDK consumer (docs/semantics.md, OID-OWNER)
            nd.OwnerPid = static_cast<ULONG>(getpid());
            entries.push_back(nd);
            if (paired) { // the TCP 4-tuple carries no owner (digest 3.7)
                NDIS_NDK_CONNECTION_ENTRY tcp{};
                tcp.Local = nd.Local;
                tcp.Remote = nd.Remote;
                entries.push_back(tcp);
            }
        });
    }
    NDIS_NDK_CONNECTIONS head{};
    size_t offset = offsetof(NDIS_NDK_CONNECTIONS, Connections);
    head.Header = {NDIS_OBJECT_TYPE_DEFAULT, NDIS_NDK_CONNECTIONS_REVISION_1,
                   header_size(offset + entries.size() * sizeof(NDIS_NDK_CONNECTION_ENTRY))};
    head.Count = static_cast<ULONG>(entries.size());
    head.NDConnectionsMappedtoTCPConnections = paired;
    return write_table(head, offset, entries, buffer, length, written, needed);
}

NDIS_STATUS query_local_endpoints(Miniport &miniport, void *buffer, ULONG length, ULONG *written,
                                  ULONG *needed)
{
    bool paired = miniport.device.iwarp;
    std::vector<NDIS_NDK_LOCAL_ENDPOINT_ENTRY> entries;
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
            NDIS_NDK_LOCAL_ENDPOINT_ENTRY nd{};
            nd.Local = inet(local);
            nd.Listener = listener;
            nd.OwnerPid = static_cast<ULONG>(getpid());
            entries.push_back(nd);
            if (paired) {
                NDIS_NDK_LOCAL_ENDPOINT_ENTRY tcp{};
                tcp.Local = nd.Local;
                tcp.Listener = listener;
                entries.push_back(tcp);
            }
        });
    }
    NDIS_NDK_LOCAL_ENDPOINTS head{};
    size_t offset = offsetof(NDIS_NDK_LOCAL_ENDPOINTS, LocalEndpoints);
    head.Header = {NDIS_OBJECT_TYPE_DEFAULT, NDIS_NDK_LOCAL_ENDPOINTS_REVISION_1,
                   header_size(offset + entries.size() * sizeof(NDIS_NDK_LOCAL_ENDPOINT_ENTRY))};
    head.Count = static_cast<ULONG>(entries.size());
    head.NDLocalEndpointsMappedtoTCPLocalEndpoints = paired;
    return write_table(head, offset, entries, buffer, length, written, needed);
}

NDIS_STATUS query_statistics(Miniport &miniport, void *buffer, ULONG length, ULONG *written,
                             ULONG *needed)
{
    NDIS_NDK_STATISTICS_INFO info{};
    info.Header = {NDIS_OBJECT_TYPE_DEFAULT, NDIS_NDK_STATISTICS_INFO_REVISION_1,
                   static_cast<USHORT>(sizeof info)};
    {
        std::lock_guard lock(miniport.mu);
        info.CounterSet = miniport.counters; // octets/frames: the device's, not counted here
    }
    std::vector<char> none;
    return write_table(info, sizeof info, none, buffer, length, written, needed);
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
