#include "kit_oid.hpp"

namespace ndk::kit {

NDIS_STATUS oid_request(OidAnswers &answers, NDIS_OID oid, bool set, void *buffer, ULONG length,
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
        answers.set_enabled(*static_cast<const BOOLEAN *>(buffer) != FALSE);
        if (written != nullptr)
            *written = sizeof(BOOLEAN);
        return NDIS_STATUS_SUCCESS;
    }
    if (oid != OID_NDK_STATISTICS && oid != OID_NDK_CONNECTIONS && oid != OID_NDK_LOCAL_ENDPOINTS)
        return NDIS_STATUS_INVALID_OID;
    if (set)
        return NDIS_STATUS_NOT_SUPPORTED; // query-only OIDs
    if (oid == OID_NDK_STATISTICS)
        return ndis::write_statistics(answers.counters(), buffer, length, written, needed);
    if (oid == OID_NDK_CONNECTIONS) {
        ndis::ConnectionsTable table(answers.mapped_to_tcp());
        answers.list_connections(table);
        return table.write(buffer, length, written, needed);
    }
    ndis::LocalEndpointsTable table(answers.mapped_to_tcp());
    answers.list_local_endpoints(table);
    return table.write(buffer, length, written, needed);
}

} // namespace ndk::kit
