// The NDIS OID requests every NDK miniport answers (digest 3.7): OID_NDK_SET_STATE (set only,
// one BOOLEAN) and the queries OID_NDK_STATISTICS, OID_NDK_CONNECTIONS and
// OID_NDK_LOCAL_ENDPOINTS, with the NDIS conventions of docs/semantics.md (OID-SIZE).  A
// provider supplies the answers; oid_request routes and checks.
#pragma once

#include "kit_ndis_tables.hpp"

namespace ndk::kit {

// What a provider knows; the kit writes the tables from it (kit_ndis_tables.hpp).  Each call
// takes whatever lock keeps the provider's objects still while it lists them.
class OidAnswers {
public:
    virtual ~OidAnswers() = default;
    // OID_NDK_SET_STATE: FALSE disables NDK (new opens fail; open adapters stay), TRUE enables.
    virtual void set_enabled(bool enabled) = 0;
    // iWARP: ND connections run on TCP connections, so each table entry is followed by its TCP
    // twin (digest 3.7).
    virtual bool mapped_to_tcp() = 0;
    virtual NDIS_NDK_PERFORMANCE_COUNTERS counters() = 0;
    // Each established connection: add(local, remote).
    virtual void list_connections(ndis::ConnectionsTable &table) = 0;
    // Each listening listener and each shared endpoint: add(local, is_listener).
    virtual void list_local_endpoints(ndis::LocalEndpointsTable &table) = 0;
};

NDIS_STATUS oid_request(OidAnswers &answers, NDIS_OID oid, bool set, void *buffer, ULONG length,
                        ULONG *written, ULONG *needed);

} // namespace ndk::kit
