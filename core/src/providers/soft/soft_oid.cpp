#include "soft_oid.hpp"

#include "soft_objects.hpp"

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

// Write a table: the fixed part up to the first entry, then the entries.  NDIS query rules:
// too small a buffer gets NDIS_STATUS_BUFFER_TOO_SHORT and the size needed.
template <class Table, class Entry>
NDIS_STATUS write_table(const Table &head, size_t entries_offset, const std::vector<Entry> &entries,
                        void *buffer, ULONG length, ULONG *written, ULONG *needed)
{
    size_t size = entries_offset + entries.size() * sizeof(Entry);
    if (needed != nullptr)
        *needed = static_cast<ULONG>(size);
    if (buffer == nullptr || length < size) {
        if (written != nullptr)
            *written = 0;
        return NDIS_STATUS_BUFFER_TOO_SHORT;
    }
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
    bool paired = mapped_to_tcp(miniport);
    std::vector<NDIS_NDK_CONNECTION_ENTRY> entries;
    for (SoftAdapter *adapter : miniport.adapters) {
        adapter->for_each_object([&](SoftObject &object) {
            if (object.type() != NdkObjectTypeConnector)
                return;
            auto &c = static_cast<SoftConnector &>(object);
            if (c.state != SoftConnector::State::Connected)
                return;
            NDIS_NDK_CONNECTION_ENTRY nd{};
            nd.Local = sockaddr_inet(c.local);
            nd.Remote = sockaddr_inet(c.remote);
            nd.UserModeOwner = FALSE; // an NDK (kernel-mode) consumer
            nd.OwnerPid = static_cast<ULONG>(getpid()); // docs/semantics.md, OID-OWNER
            entries.push_back(nd);
            if (paired) { // the TCP 4-tuple; only ND entries carry the owner (digest 3.7)
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
    bool paired = mapped_to_tcp(miniport);
    std::vector<NDIS_NDK_LOCAL_ENDPOINT_ENTRY> entries;
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
            NDIS_NDK_LOCAL_ENDPOINT_ENTRY nd{};
            nd.Local = sockaddr_inet((*port)->endpoint());
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
    info.CounterSet = miniport.counters; // Reserved01..20 stay 0 (digest 3.7)
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
