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
/* The entry's revisions; each adds members at the end, and the harness loads every one of
 * them (an entry of an older revision is shorter: its Size says so). */
#define NDK_HARNESS_PROVIDER_VERSION_2 2 /* OidRequest */
#define NDK_HARNESS_PROVIDER_VERSION_3 3 /* QueryNdkCapabilities */
#define NDK_HARNESS_PROVIDER_VERSION NDK_HARNESS_PROVIDER_VERSION_3

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
    /* Version 3.  The miniport's NDIS_NDK_CAPABILITIES, which NDIS has from MiniportInitializeEx
     * (digest 3.7): fill *Capabilities whole - Header {NDIS_OBJECT_TYPE_DEFAULT,
     * NDIS_NDK_CAPABILITIES_REVISION_1, sizeof(NDIS_NDK_CAPABILITIES)}, Flags 0, the
     * Max*Count of each object kind the miniport can hold at once across all its adapters
     * (MAXULONG: no count of its own), MaxSrqCount 0 without SRQs, the read limits (0: none
     * adapter-wide), MissingCounterMask, and NdkInfo NULL (the adapter's NDK_ADAPTER_INFO is
     * NdkQueryAdapterInfo's).  Returns NDIS_STATUS_SUCCESS or the failure.  May be NULL: the
     * provider does not report them, and scenarios about the counts are skipped.
     * docs/providers.md. */
    NDIS_STATUS (*QueryNdkCapabilities)(NDIS_HANDLE MiniportAdapterContext,
                                        NDIS_NDK_CAPABILITIES *Capabilities);
} NDK_HARNESS_PROVIDER;

/* The size of an entry of revision 2 (without QueryNdkCapabilities), which still loads. */
#define NDK_SIZEOF_HARNESS_PROVIDER_VERSION_2 \
    (offsetof(NDK_HARNESS_PROVIDER, OidRequest) + sizeof(((NDK_HARNESS_PROVIDER *)0)->OidRequest))

typedef const NDK_HARNESS_PROVIDER *(*NDK_HARNESS_GET_PROVIDER)(void);

/* Whether an entry has QueryNdkCapabilities (version 3, long enough, not NULL): a layer or a
 * consumer reads the member only then, since an entry of version 2 ends before it. */
static inline BOOLEAN NdkHarnessReportsCapabilities(const NDK_HARNESS_PROVIDER *Entry)
{
    return Entry->Version == NDK_HARNESS_PROVIDER_VERSION_3 &&
           Entry->Size >= sizeof(NDK_HARNESS_PROVIDER) && Entry->QueryNdkCapabilities != NULL;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NDK_PROVIDER_H */
