/*
 * provider.h - how a provider plugs into the harness.
 *
 * A provider is a built-in or a shared object exporting
 *
 *     const NDK_HARNESS_PROVIDER *NdkHarnessGetProvider(void);
 *
 * The harness creates a miniport (one virtual or real RNIC) with CreateMiniport, opens NDK
 * adapters on it through Characteristics.OpenNDKAdapterHandler exactly as NDIS would
 * (OPEN_NDK_ADAPTER_HANDLER, with its version negotiation, digest 1.1), and closes them with
 * CloseNDKAdapterHandler.  Options and run-time knobs are text key/value pairs, so a provider
 * decides which knobs it supports; ControlMiniport returns STATUS_NOT_SUPPORTED for a key it
 * does not know.  See docs/providers.md.
 */
#ifndef NDK_PROVIDER_H
#define NDK_PROVIDER_H

#include "ndk/ndkpi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NDK_HARNESS_PROVIDER_SYMBOL "NdkHarnessGetProvider"
#define NDK_HARNESS_PROVIDER_VERSION 2 /* 2: OidRequest */

typedef struct _NDK_HARNESS_PROVIDER {
    ULONG Size;    /* sizeof(NDK_HARNESS_PROVIDER) */
    ULONG Version; /* NDK_HARNESS_PROVIDER_VERSION */
    const char *Name;
    NDIS_NDK_PROVIDER_CHARACTERISTICS Characteristics;
    /* Create a miniport.  Options: "key=value" lines, or NULL.  On failure, returns the NDIS
     * status and writes a reason into Error (NUL-terminated, at most ErrorLength bytes). */
    NDIS_STATUS (*CreateMiniport)(const char *Options, char *Error, ULONG ErrorLength,
                                  NDIS_HANDLE *pMiniportAdapterContext);
    /* Destroy a miniport whose adapters are all closed. */
    VOID (*DestroyMiniport)(NDIS_HANDLE MiniportAdapterContext);
    /* Set a knob (Value != NULL) or read it (Value == NULL) into Reply.  Returns
     * STATUS_SUCCESS, STATUS_NOT_SUPPORTED (unknown key) or STATUS_INVALID_PARAMETER (bad
     * value, reason in Reply).  May be NULL: the provider has no knobs. */
    NTSTATUS (*ControlMiniport)(NDIS_HANDLE MiniportAdapterContext, const char *Key,
                                const char *Value, char *Reply, ULONG ReplyLength);
    /* An NDIS OID request on the miniport, as MiniportOidRequest receives it (digest 3.7).
     * Query (Set == FALSE): write the answer into Buffer and its size into *BytesWritten; when
     * BufferLength is too small, write the size needed into *BytesNeeded and return
     * NDIS_STATUS_BUFFER_TOO_SHORT.  Set: read BufferLength bytes of Buffer.  Returns
     * NDIS_STATUS_SUCCESS, NDIS_STATUS_BUFFER_TOO_SHORT, NDIS_STATUS_INVALID_LENGTH (a set of
     * the wrong size) or NDIS_STATUS_INVALID_OID (not supported).  May be NULL: no OIDs. */
    NDIS_STATUS (*OidRequest)(NDIS_HANDLE MiniportAdapterContext, NDIS_OID Oid, BOOLEAN Set,
                              PVOID Buffer, ULONG BufferLength, ULONG *BytesWritten,
                              ULONG *BytesNeeded);
} NDK_HARNESS_PROVIDER;

typedef const NDK_HARNESS_PROVIDER *(*NDK_HARNESS_GET_PROVIDER)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NDK_PROVIDER_H */
