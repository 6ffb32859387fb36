// The NDIS control-plane answers every provider gives the same way (digest 3.7):
// OID_NDK_CONNECTIONS and OID_NDK_LOCAL_ENDPOINTS tables (on iWARP each ND entry is followed
// by its TCP twin, which carries no owner), OID_NDK_STATISTICS, the NDIS_OBJECT_HEADER Size
// rule and the NDIS_STATUS_BUFFER_TOO_SHORT negotiation.  A provider collects its entries;
// this writes them.
#pragma once

#include "ndk/ndkpi.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace ndk::ndis {

// Write the fixed part of a table up to its first entry, then the entries.  Too small a
// buffer gets NDIS_STATUS_BUFFER_TOO_SHORT, *written 0 and the size needed.
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

// Header.Size is a USHORT: the table's size, capped.
inline USHORT header_size(size_t size)
{
    return static_cast<USHORT>(std::min<size_t>(size, 0xFFFF));
}

class ConnectionsTable {
public:
    explicit ConnectionsTable(bool mapped_to_tcp) : paired_(mapped_to_tcp) {}

    void add(const SOCKADDR_INET &local, const SOCKADDR_INET &remote)
    {
        NDIS_NDK_CONNECTION_ENTRY nd{};
        nd.Local = local;
        nd.Remote = remote;
        nd.UserModeOwner = FALSE; // an NDK (kernel-mode) consumer (docs/semantics.md, OID-OWNER)
        nd.OwnerPid = static_cast<ULONG>(getpid());
        entries_.push_back(nd);
        if (paired_) {
            NDIS_NDK_CONNECTION_ENTRY tcp{};
            tcp.Local = local;
            tcp.Remote = remote;
            entries_.push_back(tcp);
        }
    }

    NDIS_STATUS write(void *buffer, ULONG length, ULONG *written, ULONG *needed) const
    {
        NDIS_NDK_CONNECTIONS head{};
        size_t offset = offsetof(NDIS_NDK_CONNECTIONS, Connections);
        head.Header = {NDIS_OBJECT_TYPE_DEFAULT, NDIS_NDK_CONNECTIONS_REVISION_1,
                       header_size(offset + entries_.size() * sizeof(NDIS_NDK_CONNECTION_ENTRY))};
        head.Count = static_cast<ULONG>(entries_.size());
        head.NDConnectionsMappedtoTCPConnections = paired_;
        return write_table(head, offset, entries_, buffer, length, written, needed);
    }

private:
    bool paired_;
    std::vector<NDIS_NDK_CONNECTION_ENTRY> entries_;
};

class LocalEndpointsTable {
public:
    explicit LocalEndpointsTable(bool mapped_to_tcp) : paired_(mapped_to_tcp) {}

    void add(const SOCKADDR_INET &local, bool listener)
    {
        NDIS_NDK_LOCAL_ENDPOINT_ENTRY nd{};
        nd.Local = local;
        nd.Listener = listener;
        nd.OwnerPid = static_cast<ULONG>(getpid());
        entries_.push_back(nd);
        if (paired_) {
            NDIS_NDK_LOCAL_ENDPOINT_ENTRY tcp{};
            tcp.Local = local;
            tcp.Listener = listener;
            entries_.push_back(tcp);
        }
    }

    NDIS_STATUS write(void *buffer, ULONG length, ULONG *written, ULONG *needed) const
    {
        NDIS_NDK_LOCAL_ENDPOINTS head{};
        size_t offset = offsetof(NDIS_NDK_LOCAL_ENDPOINTS, LocalEndpoints);
        head.Header = {
            NDIS_OBJECT_TYPE_DEFAULT, NDIS_NDK_LOCAL_ENDPOINTS_REVISION_1,
            header_size(offset + entries_.size() * sizeof(NDIS_NDK_LOCAL_ENDPOINT_ENTRY))};
        head.Count = static_cast<ULONG>(entries_.size());
        head.NDLocalEndpointsMappedtoTCPLocalEndpoints = paired_;
        return write_table(head, offset, entries_, buffer, length, written, needed);
    }

private:
    bool paired_;
    std::vector<NDIS_NDK_LOCAL_ENDPOINT_ENTRY> entries_;
};

// OID_NDK_STATISTICS: the counter set; Reserved01..20 stay 0.
inline NDIS_STATUS write_statistics(const NDIS_NDK_PERFORMANCE_COUNTERS &counters, void *buffer,
                                    ULONG length, ULONG *written, ULONG *needed)
{
    NDIS_NDK_STATISTICS_INFO info{};
    info.Header = {NDIS_OBJECT_TYPE_DEFAULT, NDIS_NDK_STATISTICS_INFO_REVISION_1,
                   static_cast<USHORT>(sizeof info)};
    info.CounterSet = counters;
    return write_table(info, sizeof info, std::vector<char>{}, buffer, length, written, needed);
}

} // namespace ndk::ndis
