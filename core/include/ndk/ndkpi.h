/*
 * ndkpi.h - the NDK (Network Direct Kernel) provider interface, for Linux.
 *
 * Written from the interface digest (shared/spec/ndkpi.md, cited below as "digest N.N"):
 * every object is { NDK_OBJECT_HEADER Header; const NDK_xxx_DISPATCH *Dispatch; }, every
 * function keeps its documented name, parameter order and parameter names, every constant
 * its documented value.  Windows types map to fixed-width types (ULONG is 32 bits here, never
 * `unsigned long`).  Kernel-only concepts get a user-space stand-in: MDL, GROUP_AFFINITY,
 * logical addresses.  Layouts are pinned with static assertions at the end of the file.
 *
 * The header is C and C++; it has no code beyond a few inline MDL helpers.
 */
#ifndef NDK_NDKPI_H
#define NDK_NDKPI_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Windows base types (digest: ARCHITECTURE "The C ABI") ----------------------------- */

typedef void VOID;
typedef void *PVOID;
typedef uint8_t UCHAR;
typedef uint8_t BOOLEAN;
typedef uint16_t USHORT;
typedef uint32_t ULONG;
typedef int32_t LONG;
typedef uint32_t UINT32;
typedef uint64_t UINT64;
typedef uint64_t ULONG64;
typedef int64_t LONGLONG;
typedef uintptr_t ULONG_PTR;
typedef size_t SIZE_T;
typedef int32_t NTSTATUS;
typedef NTSTATUS NDIS_STATUS;
typedef void *NDIS_HANDLE;
typedef struct sockaddr SOCKADDR, *PSOCKADDR;
typedef uint16_t ADDRESS_FAMILY;
typedef ULONG NDIS_OID;
typedef ULONG NDIS_NIC_SWITCH_ID;
typedef ULONG NDIS_NIC_SWITCH_VPORT_ID;

#ifndef TRUE
#define TRUE 1
#endif
#ifndef FALSE
#define FALSE 0
#endif
#define MAXULONG 0xFFFFFFFFu
#define MAXUSHORT 0xFFFFu
#define NDK_PAGE_SIZE 4096u

typedef union _LARGE_INTEGER {
    struct {
        ULONG LowPart;
        LONG HighPart;
    } u;
    LONGLONG QuadPart;
} LARGE_INTEGER;
typedef LARGE_INTEGER PHYSICAL_ADDRESS;

typedef struct _GUID {
    uint32_t Data1;
    uint16_t Data2;
    uint16_t Data3;
    uint8_t Data4[8];
} GUID;

/* Processor affinity for CQ/SRQ notifications: a stand-in for the kernel's GROUP_AFFINITY. */
typedef struct _GROUP_AFFINITY {
    uint64_t Mask;
    USHORT Group;
    USHORT Reserved[3];
} GROUP_AFFINITY;

/* SOCKADDR_INET: IPv4 or IPv6, distinguished by si_family. */
typedef union _SOCKADDR_INET {
    struct sockaddr_in Ipv4;
    struct sockaddr_in6 Ipv6;
    ADDRESS_FAMILY si_family;
} SOCKADDR_INET;

/*
 * MDL stand-in.  A chain of {Next, StartVa, ByteOffset, ByteCount}: StartVa is page aligned,
 * the described bytes start at StartVa + ByteOffset.  A chain is virtually contiguous when
 * each element's bytes end where the next element's begin; that property is what
 * NdkRegisterMr and NdkBuildLAM check (digest 1.1, 1.4).
 */
typedef struct _MDL {
    struct _MDL *Next;
    PVOID StartVa;
    ULONG ByteOffset;
    ULONG ByteCount;
} MDL;

static inline PVOID MmGetMdlVirtualAddress(const MDL *Mdl)
{
    return (PVOID)((uintptr_t)Mdl->StartVa + Mdl->ByteOffset);
}
static inline ULONG MmGetMdlByteCount(const MDL *Mdl) { return Mdl->ByteCount; }
static inline ULONG MmGetMdlByteOffset(const MDL *Mdl) { return Mdl->ByteOffset; }

/* Describe [Va, Va + Length) with one MDL element. */
static inline void NdkInitializeMdl(MDL *Mdl, PVOID Va, ULONG Length)
{
    uintptr_t va = (uintptr_t)Va;
    Mdl->Next = NULL;
    Mdl->StartVa = (PVOID)(va & ~(uintptr_t)(NDK_PAGE_SIZE - 1));
    Mdl->ByteOffset = (ULONG)(va & (NDK_PAGE_SIZE - 1));
    Mdl->ByteCount = Length;
}

/* ---- Status codes (digest 1.0, 4.1; values from ntstatus.h / ndis.h) -------------------- */

#define NDK_STATUS(x) ((NTSTATUS)(x))
#define STATUS_SUCCESS                   NDK_STATUS(0x00000000)
#define STATUS_TIMEOUT                   NDK_STATUS(0x00000102)
#define STATUS_PENDING                   NDK_STATUS(0x00000103)
#define STATUS_BUFFER_OVERFLOW           NDK_STATUS(0x80000005)
#define STATUS_DEVICE_BUSY               NDK_STATUS(0x80000011)
#define STATUS_NO_MORE_ENTRIES           NDK_STATUS(0x8000001A)
#define STATUS_UNSUCCESSFUL              NDK_STATUS(0xC0000001)
#define STATUS_ACCESS_VIOLATION          NDK_STATUS(0xC0000005)
#define STATUS_INVALID_HANDLE            NDK_STATUS(0xC0000008)
#define STATUS_INVALID_PARAMETER         NDK_STATUS(0xC000000D)
#define STATUS_INVALID_DEVICE_REQUEST    NDK_STATUS(0xC0000010)
#define STATUS_NO_MEMORY                 NDK_STATUS(0xC0000017)
#define STATUS_BUFFER_TOO_SMALL          NDK_STATUS(0xC0000023)
#define STATUS_INVALID_PARAMETER_MIX     NDK_STATUS(0xC0000030)
#define STATUS_DATA_OVERRUN              NDK_STATUS(0xC000003C)
#define STATUS_DATA_ERROR                NDK_STATUS(0xC000003E)
#define STATUS_SHARING_VIOLATION         NDK_STATUS(0xC0000043)
#define STATUS_INSUFFICIENT_RESOURCES    NDK_STATUS(0xC000009A)
#define STATUS_DEVICE_NOT_READY          NDK_STATUS(0xC00000A3)
#define STATUS_IO_TIMEOUT                NDK_STATUS(0xC00000B5)
#define STATUS_NOT_SUPPORTED             NDK_STATUS(0xC00000BB)
#define STATUS_BAD_NETWORK_NAME          NDK_STATUS(0xC00000CC)
#define STATUS_INTERNAL_ERROR            NDK_STATUS(0xC00000E5)
#define STATUS_INVALID_PARAMETER_1       NDK_STATUS(0xC00000EF)
#define STATUS_INVALID_PARAMETER_2       NDK_STATUS(0xC00000F0)
#define STATUS_INVALID_PARAMETER_3       NDK_STATUS(0xC00000F1)
#define STATUS_INVALID_PARAMETER_4       NDK_STATUS(0xC00000F2)
#define STATUS_INVALID_PARAMETER_5       NDK_STATUS(0xC00000F3)
#define STATUS_INVALID_PARAMETER_6       NDK_STATUS(0xC00000F4)
#define STATUS_INVALID_PARAMETER_7       NDK_STATUS(0xC00000F5)
#define STATUS_INVALID_PARAMETER_8       NDK_STATUS(0xC00000F6)
#define STATUS_INVALID_PARAMETER_9       NDK_STATUS(0xC00000F7)
#define STATUS_INVALID_PARAMETER_10      NDK_STATUS(0xC00000F8)
#define STATUS_CONNECTION_IN_USE         NDK_STATUS(0xC0000108)
#define STATUS_CANCELLED                 NDK_STATUS(0xC0000120)
#define STATUS_LOCAL_DISCONNECT          NDK_STATUS(0xC000013B)
#define STATUS_REMOTE_DISCONNECT         NDK_STATUS(0xC000013C)
#define STATUS_REMOTE_RESOURCES          NDK_STATUS(0xC000013D)
#define STATUS_INVALID_ADDRESS           NDK_STATUS(0xC0000141)
#define STATUS_INVALID_DEVICE_STATE      NDK_STATUS(0xC0000184)
#define STATUS_INVALID_BUFFER_SIZE       NDK_STATUS(0xC0000206)
#define STATUS_TOO_MANY_ADDRESSES        NDK_STATUS(0xC0000209)
#define STATUS_ADDRESS_ALREADY_EXISTS    NDK_STATUS(0xC000020A)
#define STATUS_CONNECTION_DISCONNECTED   NDK_STATUS(0xC000020C)
#define STATUS_CONNECTION_RESET          NDK_STATUS(0xC000020D)
#define STATUS_CONNECTION_REFUSED        NDK_STATUS(0xC0000236)
#define STATUS_GRACEFUL_DISCONNECT       NDK_STATUS(0xC0000237)
#define STATUS_ADDRESS_ALREADY_ASSOCIATED NDK_STATUS(0xC0000238)
#define STATUS_CONNECTION_INVALID        NDK_STATUS(0xC000023A)
#define STATUS_CONNECTION_ACTIVE         NDK_STATUS(0xC000023B)
#define STATUS_NETWORK_UNREACHABLE       NDK_STATUS(0xC000023C)
#define STATUS_HOST_UNREACHABLE          NDK_STATUS(0xC000023D)
#define STATUS_REQUEST_ABORTED           NDK_STATUS(0xC0000240)
#define STATUS_CONNECTION_ABORTED        NDK_STATUS(0xC0000241)
#define STATUS_DEVICE_REMOVED            NDK_STATUS(0xC00002B6)
#define STATUS_IMPLEMENTATION_LIMIT      NDK_STATUS(0xC000042B)

#define NDIS_STATUS_SUCCESS              STATUS_SUCCESS
#define NDIS_STATUS_RESOURCES            STATUS_INSUFFICIENT_RESOURCES
#define NDIS_STATUS_BAD_VERSION          NDK_STATUS(0xC0010004)
#define NDIS_STATUS_ADAPTER_NOT_READY    NDK_STATUS(0xC0010011)
#define NDIS_STATUS_INVALID_LENGTH       NDK_STATUS(0xC0010014)
#define NDIS_STATUS_BUFFER_TOO_SHORT     NDK_STATUS(0xC0010016)
#define NDIS_STATUS_INVALID_OID          NDK_STATUS(0xC0010017)
#define NDIS_STATUS_NOT_SUPPORTED        STATUS_NOT_SUPPORTED

/* ND_* codes equal their NTSTATUS twins (digest 4.1). */
#define ND_SUCCESS                 STATUS_SUCCESS
#define ND_TIMEOUT                 STATUS_TIMEOUT
#define ND_PENDING                 STATUS_PENDING
#define ND_BUFFER_OVERFLOW         STATUS_BUFFER_OVERFLOW
#define ND_DEVICE_BUSY             STATUS_DEVICE_BUSY
#define ND_NO_MORE_ENTRIES         STATUS_NO_MORE_ENTRIES
#define ND_UNSUCCESSFUL            STATUS_UNSUCCESSFUL
#define ND_ACCESS_VIOLATION        STATUS_ACCESS_VIOLATION
#define ND_INVALID_HANDLE          STATUS_INVALID_HANDLE
#define ND_INVALID_PARAMETER       STATUS_INVALID_PARAMETER
#define ND_INVALID_DEVICE_REQUEST  STATUS_INVALID_DEVICE_REQUEST
#define ND_NO_MEMORY               STATUS_NO_MEMORY
#define ND_INVALID_PARAMETER_MIX   STATUS_INVALID_PARAMETER_MIX
#define ND_DATA_OVERRUN            STATUS_DATA_OVERRUN
#define ND_SHARING_VIOLATION       STATUS_SHARING_VIOLATION
#define ND_INSUFFICIENT_RESOURCES  STATUS_INSUFFICIENT_RESOURCES
#define ND_DEVICE_NOT_READY        STATUS_DEVICE_NOT_READY
#define ND_IO_TIMEOUT              STATUS_IO_TIMEOUT
#define ND_NOT_SUPPORTED           STATUS_NOT_SUPPORTED
#define ND_INTERNAL_ERROR          STATUS_INTERNAL_ERROR
#define ND_INVALID_PARAMETER_1     STATUS_INVALID_PARAMETER_1
#define ND_INVALID_PARAMETER_2     STATUS_INVALID_PARAMETER_2
#define ND_INVALID_PARAMETER_3     STATUS_INVALID_PARAMETER_3
#define ND_INVALID_PARAMETER_4     STATUS_INVALID_PARAMETER_4
#define ND_INVALID_PARAMETER_5     STATUS_INVALID_PARAMETER_5
#define ND_INVALID_PARAMETER_6     STATUS_INVALID_PARAMETER_6
#define ND_INVALID_PARAMETER_7     STATUS_INVALID_PARAMETER_7
#define ND_INVALID_PARAMETER_8     STATUS_INVALID_PARAMETER_8
#define ND_INVALID_PARAMETER_9     STATUS_INVALID_PARAMETER_9
#define ND_INVALID_PARAMETER_10    STATUS_INVALID_PARAMETER_10
#define ND_CANCELED                STATUS_CANCELLED
#define ND_REMOTE_ERROR            STATUS_REMOTE_RESOURCES
#define ND_INVALID_ADDRESS         STATUS_INVALID_ADDRESS
#define ND_INVALID_DEVICE_STATE    STATUS_INVALID_DEVICE_STATE
#define ND_INVALID_BUFFER_SIZE     STATUS_INVALID_BUFFER_SIZE
#define ND_TOO_MANY_ADDRESSES      STATUS_TOO_MANY_ADDRESSES
#define ND_ADDRESS_ALREADY_EXISTS  STATUS_ADDRESS_ALREADY_EXISTS
#define ND_CONNECTION_REFUSED      STATUS_CONNECTION_REFUSED
#define ND_CONNECTION_INVALID      STATUS_CONNECTION_INVALID
#define ND_CONNECTION_ACTIVE       STATUS_CONNECTION_ACTIVE
#define ND_NETWORK_UNREACHABLE     STATUS_NETWORK_UNREACHABLE
#define ND_HOST_UNREACHABLE        STATUS_HOST_UNREACHABLE
#define ND_CONNECTION_ABORTED      STATUS_CONNECTION_ABORTED
#define ND_DEVICE_REMOVED          STATUS_DEVICE_REMOVED
/* v1 aliases kept by ndspi.h (digest 4.1). */
#define ND_LOCAL_LENGTH            ND_DATA_OVERRUN
#define ND_INVALIDATION_ERROR      ND_INVALID_DEVICE_REQUEST

/* ---- Versions and adapter information (digest 2.1, 2.7) -------------------------------- */

typedef struct _NDK_VERSION {
    USHORT Major;
    USHORT Minor;
} NDK_VERSION;

typedef enum _NDK_RDMA_TECHNOLOGY {
    NdkUndefined = 0,
    NdkiWarp = 1,
    NdkInfiniBand = 2,
    NdkRoCE = 3,
    NdkRoCEv2 = 4,
    NdkMaxTechnology = 5
} NDK_RDMA_TECHNOLOGY;

#define NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED               0x00000001
#define NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED          0x00000002
#define NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED    0x00000004
#define NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED               0x00000008
#define NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED 0x00000010
#define NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED                  0x00000100
#define NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED       0x00010000

typedef struct _NDK_ADAPTER_INFO {
    NDK_VERSION Version;
    UINT32 VendorId;
    UINT32 DeviceId;
    SIZE_T MaxRegistrationSize;
    SIZE_T MaxWindowSize;
    ULONG FRMRPageCount;
    ULONG MaxInitiatorRequestSge;
    ULONG MaxReceiveRequestSge;
    ULONG MaxReadRequestSge;
    ULONG MaxTransferLength;
    ULONG MaxInlineDataSize;
    ULONG MaxInboundReadLimit;
    ULONG MaxOutboundReadLimit;
    ULONG MaxReceiveQueueDepth;
    ULONG MaxInitiatorQueueDepth;
    ULONG MaxSrqDepth;
    ULONG MaxCqDepth;
    ULONG LargeRequestThreshold;
    ULONG MaxCallerData;
    ULONG MaxCalleeData;
    ULONG AdapterFlags;
    NDK_RDMA_TECHNOLOGY RdmaTechnology;
} NDK_ADAPTER_INFO;

/* ---- Object header (digest 1.0) --------------------------------------------------------- */

typedef enum _NDK_OBJECT_TYPE {
    NdkObjectTypeUndefined = 0,
    NdkObjectTypeAdapter = 1,
    NdkObjectTypeQp = 2,
    NdkObjectTypeCq = 3,
    NdkObjectTypeMr = 4,
    NdkObjectTypeMw = 5,
    NdkObjectTypePd = 6,
    NdkObjectTypeSharedEndpoint = 7,
    NdkObjectTypeConnector = 8,
    NdkObjectTypeListener = 9,
    NdkObjectTypeSrq = 10,
    NdkObjectTypeMax = 11
} NDK_OBJECT_TYPE;

typedef struct _NDK_OBJECT_HEADER_RESERVED_BLOCK {
    PVOID rf[4];
} NDK_OBJECT_HEADER_RESERVED_BLOCK;

typedef struct _NDK_OBJECT_HEADER {
    NDK_VERSION Version;
    NDK_OBJECT_TYPE ObjectType;
    NDK_OBJECT_HEADER_RESERVED_BLOCK NdkReserved;
} NDK_OBJECT_HEADER;

/* ---- Results (digest 2.2, 2.3) ---------------------------------------------------------- */

typedef struct _NDK_RESULT {
    NTSTATUS Status;
    ULONG BytesTransferred;
    PVOID QPContext;
    PVOID RequestContext;
} NDK_RESULT;

typedef enum _NDK_OPERATION_TYPE {
    NdkOperationTypeReceive = 1,
    NdkOperationTypeReceiveAndInvalidate = 32769,
    NdkOperationTypeSend = 2,
    NdkOperationTypeFastRegister = 4,
    NdkOperationTypeBind = 8,
    NdkOperationTypeInvalidate = 16,
    NdkOperationTypeRead = 32,
    NdkOperationTypeWrite = 64
} NDK_OPERATION_TYPE;

/* NDKPI 2.1 layout: ProviderErrorCode sits in the LP64 padding after Type. */
typedef struct _NDK_RESULT_EX {
    NTSTATUS Status;
    ULONG BytesTransferred;
    PVOID QPContext;
    PVOID RequestContext;
    NDK_OPERATION_TYPE Type;
    ULONG ProviderErrorCode;
    ULONG_PTR TypeSpecificCompletionOutput;
} NDK_RESULT_EX;

/* ---- SGE and logical addresses (digest 2.4) --------------------------------------------- */

typedef PHYSICAL_ADDRESS NDK_LOGICAL_ADDRESS;

typedef struct _NDK_LOGICAL_ADDRESS_MAPPING {
    PVOID AdapterContext;
    ULONG AdapterPageCount;
    NDK_LOGICAL_ADDRESS AdapterPageArray[1];
} NDK_LOGICAL_ADDRESS_MAPPING;

typedef struct _NDK_SGE {
    union {
        PVOID VirtualAddress;
        NDK_LOGICAL_ADDRESS LogicalAddress;
    };
    ULONG Length;
    UINT32 MemoryRegionToken;
} NDK_SGE;

/* ---- Request and MR flags (digest 2.5, 2.6) --------------------------------------------- */

#define NDK_OP_FLAG_SILENT_SUCCESS             0x00000001
#define NDK_OP_FLAG_READ_FENCE                 0x00000002
#define NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT     0x00000004
#define NDK_OP_FLAG_ALLOW_REMOTE_READ          0x00000008
#define NDK_OP_FLAG_ALLOW_LOCAL_WRITE          0x00000010
#define NDK_OP_FLAG_ALLOW_REMOTE_WRITE         0x00000030
#define NDK_OP_FLAG_INLINE                     0x00000040
#define NDK_OP_FLAG_RDMA_READ_SINK             0x00000080
#define NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE 0x00000100
#define NDK_OP_FLAG_DEFER                      0x00000200

#define NDK_MR_FLAG_ALLOW_LOCAL_READ   0x00000000
#define NDK_MR_FLAG_ALLOW_LOCAL_WRITE  0x00000001
#define NDK_MR_FLAG_ALLOW_REMOTE_READ  0x00000002
#define NDK_MR_FLAG_ALLOW_REMOTE_WRITE 0x00000005
#define NDK_MR_FLAG_RDMA_READ_SINK     0x00000008

#define NDK_CQ_NOTIFY_ERRORS    0
#define NDK_CQ_NOTIFY_ANY       1
#define NDK_CQ_NOTIFY_SOLICITED 2

/* ---- Callbacks and functions common to every object (digest 1.0, 1.11) ------------------ */

typedef VOID (*NDK_FN_CLOSE_COMPLETION)(PVOID Context);
typedef VOID (*NDK_FN_REQUEST_COMPLETION)(PVOID Context, NTSTATUS Status);
typedef VOID (*NDK_FN_CREATE_COMPLETION)(PVOID Context, NTSTATUS Status,
                                         NDK_OBJECT_HEADER *pNdkObject);
typedef NTSTATUS (*NDK_FN_CLOSE_OBJECT)(NDK_OBJECT_HEADER *pNdkObject,
                                        NDK_FN_CLOSE_COMPLETION CloseCompletion,
                                        PVOID RequestContext);

typedef struct _NDK_EXTENSION_INTERFACE {
    const VOID *Dispatch;
} NDK_EXTENSION_INTERFACE;

typedef NTSTATUS (*NDK_FN_QUERY_EXTENSION_INTERFACE)(NDK_OBJECT_HEADER *pNdkObject,
                                                     GUID *ExtensionInterfaceID,
                                                     NDK_VERSION ExtensionInterfaceVersion,
                                                     NDK_EXTENSION_INTERFACE *pExtensionInterface);

/* ---- CQ (digest 1.3) -------------------------------------------------------------------- */

typedef struct _NDK_CQ NDK_CQ;

typedef NTSTATUS (*NDK_FN_RESIZE_CQ)(NDK_CQ *pNdkCq, ULONG CqDepth,
                                     NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                     PVOID RequestContext);
typedef VOID (*NDK_FN_CQ_NOTIFICATION_CALLBACK)(PVOID CqNotificationContext, NTSTATUS CqStatus);
typedef VOID (*NDK_FN_ARM_CQ)(NDK_CQ *pNdkCq, ULONG Type);
typedef ULONG (*NDK_FN_GET_CQ_RESULTS)(NDK_CQ *pNdkCq, NDK_RESULT Results[], ULONG nResults);
typedef NTSTATUS (*NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION)(NDK_CQ *pNdkCq,
                                                           ULONG ModerationInterval,
                                                           ULONG ModerationCount);
typedef ULONG (*NDK_FN_GET_CQ_RESULTS_EX)(NDK_CQ *pNdkCq, NDK_RESULT_EX Results[],
                                          ULONG nResults);

typedef struct _NDK_CQ_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseCq;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_RESIZE_CQ NdkResizeCq;
    NDK_FN_ARM_CQ NdkArmCq;
    NDK_FN_GET_CQ_RESULTS NdkGetCqResults;
    NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION NdkControlCqInterruptModeration;
    NDK_FN_GET_CQ_RESULTS_EX NdkGetCqResultsEx;
} NDK_CQ_DISPATCH;

struct _NDK_CQ {
    NDK_OBJECT_HEADER Header;
    const NDK_CQ_DISPATCH *Dispatch;
};

/* ---- MR (digest 1.4) -------------------------------------------------------------------- */

typedef struct _NDK_MR NDK_MR;

typedef NTSTATUS (*NDK_FN_REGISTER_MR)(NDK_MR *pNdkMr, MDL *Mdl, SIZE_T Length, ULONG Flags,
                                       NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                       PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_DEREGISTER_MR)(NDK_MR *pNdkMr,
                                         NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                         PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_INITIALIZE_FAST_REGISTER_MR)(NDK_MR *pNdkMr, ULONG AdapterPageCount,
                                                       BOOLEAN RemoteAccess,
                                                       NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                                       PVOID RequestContext);
typedef UINT32 (*NDK_FN_GET_REMOTE_TOKEN_FROM_MR)(NDK_MR *pNdkMr);
typedef UINT32 (*NDK_FN_GET_LOCAL_TOKEN_FROM_MR)(NDK_MR *pNdkMr);

typedef struct _NDK_MR_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseMr;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_REGISTER_MR NdkRegisterMr;
    NDK_FN_DEREGISTER_MR NdkDeregisterMr;
    NDK_FN_INITIALIZE_FAST_REGISTER_MR NdkInitializeFastRegisterMr;
    NDK_FN_GET_REMOTE_TOKEN_FROM_MR NdkGetRemoteTokenFromMr;
    NDK_FN_GET_LOCAL_TOKEN_FROM_MR NdkGetLocalTokenFromMr;
} NDK_MR_DISPATCH;

struct _NDK_MR {
    NDK_OBJECT_HEADER Header;
    const NDK_MR_DISPATCH *Dispatch;
};

/* ---- MW (digest 1.5) -------------------------------------------------------------------- */

typedef struct _NDK_MW NDK_MW;

typedef UINT32 (*NDK_FN_GET_REMOTE_TOKEN_FROM_MW)(NDK_MW *pNdkMw);

typedef struct _NDK_MW_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseMw;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_GET_REMOTE_TOKEN_FROM_MW NdkGetRemoteTokenFromMw;
} NDK_MW_DISPATCH;

struct _NDK_MW {
    NDK_OBJECT_HEADER Header;
    const NDK_MW_DISPATCH *Dispatch;
};

/* ---- SRQ (digest 1.6) ------------------------------------------------------------------- */

typedef struct _NDK_SRQ NDK_SRQ;

typedef NTSTATUS (*NDK_FN_MODIFY_SRQ)(NDK_SRQ *pNdkSrq, ULONG SrqDepth, ULONG NotifyThreshold,
                                      NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                      PVOID RequestContext);
typedef VOID (*NDK_FN_SRQ_NOTIFICATION_CALLBACK)(PVOID SrqNotificationContext,
                                                 NTSTATUS SrqStatus);
typedef NTSTATUS (*NDK_FN_SRQ_RECEIVE)(NDK_SRQ *pNdkSrq, PVOID RequestContext,
                                       const NDK_SGE *pSgl, ULONG nSge);

typedef struct _NDK_SRQ_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseSrq;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_MODIFY_SRQ NdkModifySrq;
    NDK_FN_SRQ_RECEIVE NdkSrqReceive;
} NDK_SRQ_DISPATCH;

struct _NDK_SRQ {
    NDK_OBJECT_HEADER Header;
    const NDK_SRQ_DISPATCH *Dispatch;
};

/* ---- QP (digest 1.7) -------------------------------------------------------------------- */

typedef struct _NDK_QP NDK_QP;

typedef VOID (*NDK_FN_FLUSH)(NDK_QP *pNdkQp);
typedef NTSTATUS (*NDK_FN_SEND)(NDK_QP *pNdkQp, PVOID RequestContext, const NDK_SGE *pSgl,
                                ULONG nSge, ULONG Flags);
typedef NTSTATUS (*NDK_FN_RECEIVE)(NDK_QP *pNdkQp, PVOID RequestContext, const NDK_SGE *pSgl,
                                   ULONG nSge);
typedef NTSTATUS (*NDK_FN_BIND)(NDK_QP *pNdkQp, PVOID RequestContext, NDK_MR *pMr, NDK_MW *pMw,
                                PVOID VirtualAddress, SIZE_T Length, ULONG Flags);
typedef NTSTATUS (*NDK_FN_FAST_REGISTER)(NDK_QP *pNdkQp, PVOID RequestContext, NDK_MR *pMr,
                                         ULONG AdapterPageCount,
                                         const NDK_LOGICAL_ADDRESS *AdapterPageArray, ULONG FBO,
                                         SIZE_T Length, PVOID BaseVirtualAddress, ULONG Flags);
typedef NTSTATUS (*NDK_FN_INVALIDATE)(NDK_QP *pNdkQp, PVOID RequestContext,
                                      NDK_OBJECT_HEADER *pNdkMrOrMw, ULONG Flags);
typedef NTSTATUS (*NDK_FN_READ)(NDK_QP *pNdkQp, PVOID RequestContext, const NDK_SGE *pSgl,
                                ULONG nSge, UINT64 RemoteAddress, UINT32 RemoteToken,
                                ULONG Flags);
typedef NTSTATUS (*NDK_FN_WRITE)(NDK_QP *pNdkQp, PVOID RequestContext, const NDK_SGE *pSgl,
                                 ULONG nSge, UINT64 RemoteAddress, UINT32 RemoteToken,
                                 ULONG Flags);
typedef NTSTATUS (*NDK_FN_SEND_AND_INVALIDATE)(NDK_QP *pNdkQp, PVOID RequestContext,
                                               const NDK_SGE *pSgl, ULONG nSge, ULONG Flags,
                                               UINT32 RemoteToken);

typedef struct _NDK_QP_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseQp;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_FLUSH NdkFlush;
    NDK_FN_SEND NdkSend;
    NDK_FN_RECEIVE NdkReceive;
    NDK_FN_BIND NdkBind;
    NDK_FN_FAST_REGISTER NdkFastRegister;
    NDK_FN_INVALIDATE NdkInvalidate;
    NDK_FN_READ NdkRead;
    NDK_FN_WRITE NdkWrite;
    NDK_FN_SEND_AND_INVALIDATE NdkSendAndInvalidate;
} NDK_QP_DISPATCH;

struct _NDK_QP {
    NDK_OBJECT_HEADER Header;
    const NDK_QP_DISPATCH *Dispatch;
};

/* ---- PD (digest 1.2) -------------------------------------------------------------------- */

typedef struct _NDK_PD NDK_PD;

typedef NTSTATUS (*NDK_FN_CREATE_MR)(NDK_PD *pNdkPd, BOOLEAN FastRegister,
                                     NDK_FN_CREATE_COMPLETION CreateCompletion,
                                     PVOID RequestContext, NDK_MR **ppNdkMr);
typedef NTSTATUS (*NDK_FN_CREATE_MW)(NDK_PD *pNdkPd, NDK_FN_CREATE_COMPLETION CreateCompletion,
                                     PVOID RequestContext, NDK_MW **ppNdkMw);
typedef NTSTATUS (*NDK_FN_CREATE_SRQ)(NDK_PD *pNdkPd, ULONG SrqDepth, ULONG MaxReceiveRequestSge,
                                      ULONG NotifyThreshold,
                                      NDK_FN_SRQ_NOTIFICATION_CALLBACK SrqNotification,
                                      PVOID SrqNotificationContext, GROUP_AFFINITY *Affinity,
                                      NDK_FN_CREATE_COMPLETION CreateCompletion,
                                      PVOID RequestContext, NDK_SRQ **ppNdkSrq);
typedef NTSTATUS (*NDK_FN_CREATE_QP)(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq,
                                     PVOID QPContext, ULONG ReceiveQueueDepth,
                                     ULONG InitiatorQueueDepth, ULONG MaxReceiveRequestSge,
                                     ULONG MaxInitiatorRequestSge, ULONG InlineDataSize,
                                     NDK_FN_CREATE_COMPLETION CreateCompletion,
                                     PVOID RequestContext, NDK_QP **ppNdkQp);
typedef NTSTATUS (*NDK_FN_CREATE_QP_WITH_SRQ)(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq,
                                              NDK_CQ *pInitiatorCq, NDK_SRQ *pSrq,
                                              PVOID QPContext, ULONG InitiatorQueueDepth,
                                              ULONG MaxInitiatorRequestSge, ULONG InlineDataSize,
                                              NDK_FN_CREATE_COMPLETION CreateCompletion,
                                              PVOID RequestContext, NDK_QP **ppNdkQp);
typedef VOID (*NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN)(NDK_PD *pNdkPd, UINT32 *pToken);

typedef struct _NDK_PD_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkClosePd;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_CREATE_MR NdkCreateMr;
    NDK_FN_CREATE_MW NdkCreateMw;
    NDK_FN_CREATE_SRQ NdkCreateSrq;
    NDK_FN_CREATE_QP NdkCreateQp;
    NDK_FN_CREATE_QP_WITH_SRQ NdkCreateQpWithSrq;
    NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN NdkGetPrivilegedMemoryRegionToken;
} NDK_PD_DISPATCH;

struct _NDK_PD {
    NDK_OBJECT_HEADER Header;
    const NDK_PD_DISPATCH *Dispatch;
};

/* ---- Shared endpoint (digest 1.10) ------------------------------------------------------ */

typedef struct _NDK_SHARED_ENDPOINT NDK_SHARED_ENDPOINT;

typedef NTSTATUS (*NDK_FN_GET_SHARED_ENDPOINT_LOCAL_ADDRESS)(
    NDK_SHARED_ENDPOINT *pNdkSharedEndpoint, PSOCKADDR pAddress, ULONG *pAddressLength);

typedef struct _NDK_SHARED_ENDPOINT_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseSharedEndpoint;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_GET_SHARED_ENDPOINT_LOCAL_ADDRESS NdkGetLocalAddress;
} NDK_SHARED_ENDPOINT_DISPATCH;

struct _NDK_SHARED_ENDPOINT {
    NDK_OBJECT_HEADER Header;
    const NDK_SHARED_ENDPOINT_DISPATCH *Dispatch;
};

/* ---- Connector (digest 1.8) ------------------------------------------------------------- */

typedef struct _NDK_CONNECTOR NDK_CONNECTOR;

typedef NTSTATUS (*NDK_FN_CONNECT)(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
                                   const PSOCKADDR pSrcAddress, ULONG SrcAddressLength,
                                   const PSOCKADDR pDestAddress, ULONG DestAddressLength,
                                   ULONG InboundReadLimit, ULONG OutboundReadLimit,
                                   const PVOID pPrivateData, ULONG PrivateDataLength,
                                   NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                   PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_CONNECT_WITH_SHARED_ENDPOINT)(
    NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp, NDK_SHARED_ENDPOINT *pNdkSharedEndpoint,
    const PSOCKADDR pDestAddress, ULONG DestAddressLength, ULONG InboundReadLimit,
    ULONG OutboundReadLimit, const PVOID pPrivateData, ULONG PrivateDataLength,
    NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);
typedef VOID (*NDK_FN_DISCONNECT_EVENT_CALLBACK)(PVOID DisconnectEventContext);
typedef VOID (*NDK_FN_DISCONNECT_EVENT_CALLBACK_EX)(PVOID DisconnectEventContext,
                                                    ULONG ProviderDisconnectReason);
typedef NTSTATUS (*NDK_FN_COMPLETE_CONNECT)(NDK_CONNECTOR *pNdkConnector,
                                            NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
                                            PVOID DisconnectEventContext,
                                            NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                            PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_COMPLETE_CONNECT_EX)(NDK_CONNECTOR *pNdkConnector,
                                               NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
                                               PVOID DisconnectEventContext,
                                               NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                               PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_ACCEPT)(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
                                  ULONG InboundReadLimit, ULONG OutboundReadLimit,
                                  const PVOID pPrivateData, ULONG PrivateDataLength,
                                  NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
                                  PVOID DisconnectEventContext,
                                  NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                  PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_ACCEPT_EX)(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
                                     ULONG InboundReadLimit, ULONG OutboundReadLimit,
                                     const PVOID pPrivateData, ULONG PrivateDataLength,
                                     NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
                                     PVOID DisconnectEventContext,
                                     NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                     PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_REJECT)(NDK_CONNECTOR *pNdkConnector, const PVOID pPrivateData,
                                  ULONG PrivateDataLength);
typedef NTSTATUS (*NDK_FN_GET_CONNECTION_DATA)(NDK_CONNECTOR *pNdkConnector,
                                               ULONG *pInboundReadLimit,
                                               ULONG *pOutboundReadLimit, PVOID pPrivateData,
                                               ULONG *pPrivateDataLength);
typedef NTSTATUS (*NDK_FN_GET_LOCAL_ADDRESS)(NDK_CONNECTOR *pNdkConnector, PSOCKADDR pAddress,
                                             ULONG *pAddressLength);
typedef NTSTATUS (*NDK_FN_GET_PEER_ADDRESS)(NDK_CONNECTOR *pNdkConnector, PSOCKADDR pAddress,
                                            ULONG *pAddressLength);
typedef NTSTATUS (*NDK_FN_DISCONNECT)(NDK_CONNECTOR *pNdkConnector,
                                      NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                      PVOID RequestContext);
/* Header-only in the WDK, in no dispatch table, undocumented (digest 1.8). */
typedef NTSTATUS (*NDK_FN_DISCONNECT_EX)(NDK_CONNECTOR *pNdkConnector, BOOLEAN Abortive,
                                         NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                         PVOID RequestContext);

typedef struct _NDK_CONNECTOR_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseConnector;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_CONNECT NdkConnect;
    NDK_FN_CONNECT_WITH_SHARED_ENDPOINT NdkConnectWithSharedEndpoint;
    NDK_FN_COMPLETE_CONNECT NdkCompleteConnect;
    NDK_FN_ACCEPT NdkAccept;
    NDK_FN_REJECT NdkReject;
    NDK_FN_GET_CONNECTION_DATA NdkGetConnectionData;
    NDK_FN_GET_LOCAL_ADDRESS NdkGetLocalAddress;
    NDK_FN_GET_PEER_ADDRESS NdkGetPeerAddress;
    NDK_FN_DISCONNECT NdkDisconnect;
    /* NDKPI 2.1 */
    NDK_FN_COMPLETE_CONNECT_EX NdkCompleteConnectEx;
    NDK_FN_ACCEPT_EX NdkAcceptEx;
} NDK_CONNECTOR_DISPATCH;

struct _NDK_CONNECTOR {
    NDK_OBJECT_HEADER Header;
    const NDK_CONNECTOR_DISPATCH *Dispatch;
};

/* ---- Listener (digest 1.9) -------------------------------------------------------------- */

typedef struct _NDK_LISTENER NDK_LISTENER;

typedef VOID (*NDK_FN_CONNECT_EVENT_CALLBACK)(PVOID ConnectEventContext,
                                              NDK_CONNECTOR *pNdkConnector);
typedef VOID (*NDK_FN_CONTROL_CONNECT_EVENTS)(NDK_LISTENER *pNdkListener, BOOLEAN Pause);
typedef NTSTATUS (*NDK_FN_LISTEN)(NDK_LISTENER *pNdkListener, const PSOCKADDR pAddress,
                                  ULONG AddressLength,
                                  NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                  PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_GET_LISTENER_LOCAL_ADDRESS)(NDK_LISTENER *pNdkListener,
                                                      PSOCKADDR pAddress, ULONG *pAddressLength);

typedef struct _NDK_LISTENER_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseListener;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_LISTEN NdkListen;
    NDK_FN_GET_LISTENER_LOCAL_ADDRESS NdkGetLocalAddress;
    NDK_FN_CONTROL_CONNECT_EVENTS NdkControlConnectEvents;
} NDK_LISTENER_DISPATCH;

struct _NDK_LISTENER {
    NDK_OBJECT_HEADER Header;
    const NDK_LISTENER_DISPATCH *Dispatch;
};

/* ---- Adapter (digest 1.1) --------------------------------------------------------------- */

typedef struct _NDK_ADAPTER NDK_ADAPTER;

typedef NTSTATUS (*NDK_FN_QUERY_ADAPTER_INFO)(NDK_ADAPTER *pNdkAdapter, NDK_ADAPTER_INFO *pInfo,
                                              ULONG *pBufferSize);
/* Header-only in the WDK, in no dispatch table, undocumented (digest 1.1). */
typedef NTSTATUS (*NDK_FN_QUERY_ADAPTER_INFO_EX)(NDK_ADAPTER *pNdkAdapter, NDK_VERSION Version,
                                                 NDK_ADAPTER_INFO *pInfo, ULONG *pBufferSize);
typedef NTSTATUS (*NDK_FN_CREATE_CQ)(NDK_ADAPTER *pNdkAdapter, ULONG CqDepth,
                                     NDK_FN_CQ_NOTIFICATION_CALLBACK CqNotification,
                                     PVOID CqNotificationContext, GROUP_AFFINITY *Affinity,
                                     NDK_FN_CREATE_COMPLETION CreateCompletion,
                                     PVOID RequestContext, NDK_CQ **ppNdkCq);
typedef NTSTATUS (*NDK_FN_CREATE_PD)(NDK_ADAPTER *pNdkAdapter,
                                     NDK_FN_CREATE_COMPLETION CreateCompletion,
                                     PVOID RequestContext, NDK_PD **ppNdkPd);
typedef NTSTATUS (*NDK_FN_CREATE_SHARED_ENDPOINT)(NDK_ADAPTER *pNdkAdapter,
                                                  const PSOCKADDR pAddress, ULONG AddressLength,
                                                  NDK_FN_CREATE_COMPLETION CreateCompletion,
                                                  PVOID RequestContext,
                                                  NDK_SHARED_ENDPOINT **ppNdkSharedEndpoint);
typedef NTSTATUS (*NDK_FN_CREATE_CONNECTOR)(NDK_ADAPTER *pNdkAdapter,
                                            NDK_FN_CREATE_COMPLETION CreateCompletion,
                                            PVOID RequestContext,
                                            NDK_CONNECTOR **ppNdkConnector);
typedef NTSTATUS (*NDK_FN_CREATE_LISTENER)(NDK_ADAPTER *pNdkAdapter,
                                           NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent,
                                           PVOID ConnectEventContext,
                                           NDK_FN_CREATE_COMPLETION CreateCompletion,
                                           PVOID RequestContext, NDK_LISTENER **ppNdkListener);
typedef NTSTATUS (*NDK_FN_BUILD_LAM)(NDK_ADAPTER *pNdkAdapter, MDL *Mdl, SIZE_T Length,
                                     NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                     PVOID RequestContext, NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM,
                                     ULONG *pLAMSize, ULONG *pFBO);
typedef VOID (*NDK_FN_RELEASE_LAM)(NDK_ADAPTER *pNdkAdapter,
                                   NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM);

typedef struct _NDK_ADAPTER_DISPATCH {
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_QUERY_ADAPTER_INFO NdkQueryAdapterInfo;
    NDK_FN_CREATE_CQ NdkCreateCq;
    NDK_FN_CREATE_PD NdkCreatePd;
    NDK_FN_CREATE_SHARED_ENDPOINT NdkCreateSharedEndpoint;
    NDK_FN_CREATE_CONNECTOR NdkCreateConnector;
    NDK_FN_CREATE_LISTENER NdkCreateListener;
    NDK_FN_BUILD_LAM NdkBuildLAM;
    NDK_FN_RELEASE_LAM NdkReleaseLAM;
} NDK_ADAPTER_DISPATCH;

struct _NDK_ADAPTER {
    NDK_OBJECT_HEADER Header;
    const NDK_ADAPTER_DISPATCH *Dispatch;
};

/* ---- NDIS control plane (digest 1.1 registration, 3.7) ---------------------------------- */

typedef struct _NDIS_OBJECT_HEADER {
    UCHAR Type;
    UCHAR Revision;
    USHORT Size;
} NDIS_OBJECT_HEADER;

#define NDIS_OBJECT_TYPE_DEFAULT                         0x80
#define NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS    0xB2
#define NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_NDK_ATTRIBUTES 0xB3

#define OID_NDK_SET_STATE       0xFC040201u
#define OID_NDK_STATISTICS      0xFC040202u
#define OID_NDK_CONNECTIONS     0xFC040203u
#define OID_NDK_LOCAL_ENDPOINTS 0xFC040204u

typedef struct _NDIS_OPEN_NDK_ADAPTER_PARAMETERS {
    NDK_VERSION Version;
    NDIS_NIC_SWITCH_ID SwitchId;
    NDIS_NIC_SWITCH_VPORT_ID VPortId;
} NDIS_OPEN_NDK_ADAPTER_PARAMETERS, *PNDIS_OPEN_NDK_ADAPTER_PARAMETERS;

typedef NDIS_STATUS (*OPEN_NDK_ADAPTER_HANDLER)(NDIS_HANDLE MiniportAdapterContext,
                                                PNDIS_OPEN_NDK_ADAPTER_PARAMETERS Parameters,
                                                NDK_ADAPTER **ppNdkAdapter);
typedef VOID (*CLOSE_NDK_ADAPTER_HANDLER)(NDIS_HANDLE MiniportAdapterContext,
                                          NDK_ADAPTER *pNdkAdapter);

#define NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1 1
typedef struct _NDIS_NDK_PROVIDER_CHARACTERISTICS {
    NDIS_OBJECT_HEADER Header; /* Type 0xB2, Revision 1 */
    ULONG Flags;               /* 0 */
    OPEN_NDK_ADAPTER_HANDLER OpenNDKAdapterHandler;
    CLOSE_NDK_ADAPTER_HANDLER CloseNDKAdapterHandler;
} NDIS_NDK_PROVIDER_CHARACTERISTICS;

typedef struct _NDIS_NDK_PERFORMANCE_COUNTERS {
    ULONG64 Connect;
    ULONG64 Accept;
    ULONG64 ConnectFailure;
    ULONG64 ConnectionError;
    ULONG64 ActiveConnection;
    ULONG64 Reserved01;
    ULONG64 Reserved02;
    ULONG64 Reserved03;
    ULONG64 Reserved04;
    ULONG64 Reserved05;
    ULONG64 Reserved06;
    ULONG64 Reserved07;
    ULONG64 Reserved08;
    ULONG64 Reserved09;
    ULONG64 Reserved10;
    ULONG64 Reserved11;
    ULONG64 Reserved12;
    ULONG64 Reserved13;
    ULONG64 Reserved14;
    ULONG64 Reserved15;
    ULONG64 Reserved16;
    ULONG64 Reserved17;
    ULONG64 Reserved18;
    ULONG64 Reserved19;
    ULONG64 Reserved20;
    ULONG64 CQError;
    ULONG64 RDMAInOctets;
    ULONG64 RDMAOutOctets;
    ULONG64 RDMAInFrames;
    ULONG64 RDMAOutFrames;
} NDIS_NDK_PERFORMANCE_COUNTERS;

#define NDIS_NDK_PERFORMANCE_COUNTER_MASK(field) \
    (((ULONG64)1) << (offsetof(NDIS_NDK_PERFORMANCE_COUNTERS, field) / sizeof(ULONG64)))

#define NDIS_NDK_STATISTICS_INFO_REVISION_1 1
typedef struct _NDIS_NDK_STATISTICS_INFO {
    NDIS_OBJECT_HEADER Header; /* Type DEFAULT, Revision 1 */
    ULONG Flags;
    NDIS_NDK_PERFORMANCE_COUNTERS CounterSet;
} NDIS_NDK_STATISTICS_INFO;

typedef struct _NDIS_NDK_CONNECTION_ENTRY {
    SOCKADDR_INET Local;
    SOCKADDR_INET Remote;
    BOOLEAN UserModeOwner;
    ULONG OwnerPid;
} NDIS_NDK_CONNECTION_ENTRY;

#define NDIS_NDK_CONNECTIONS_REVISION_1 1
/* The digest's layout (3.7, from the WDK's ntddndis.h): a ULONG Flags between Header and Count,
   so Count is at offset 8 and the entries at 16.  The seed's layout has no Flags (Count at 4);
   this header follows the WDK, whose structure Windows miniports fill (docs/semantics.md,
   "Where the header differs from the seed"). */
typedef struct _NDIS_NDK_CONNECTIONS {
    NDIS_OBJECT_HEADER Header; /* Revision 1, Size = min(MAXUSHORT, offset of Connections[n]) */
    ULONG Flags;
    ULONG Count;
    BOOLEAN NDConnectionsMappedtoTCPConnections;
    NDIS_NDK_CONNECTION_ENTRY Connections[1];
} NDIS_NDK_CONNECTIONS;
/* The size of revision 1 the seed names, through the first entry as the WDK defines its
   RTL_SIZEOF_THROUGH_FIELD(NDIS_NDK_CONNECTIONS, Connections): 16 + 64 bytes. */
#define NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1 \
    (offsetof(NDIS_NDK_CONNECTIONS, Connections) + sizeof(NDIS_NDK_CONNECTION_ENTRY))

typedef struct _NDIS_NDK_LOCAL_ENDPOINT_ENTRY {
    SOCKADDR_INET Local;
    BOOLEAN UserModeOwner;
    BOOLEAN Listener; /* FALSE: shared endpoint */
    ULONG OwnerPid;
} NDIS_NDK_LOCAL_ENDPOINT_ENTRY;

#define NDIS_NDK_LOCAL_ENDPOINTS_REVISION_1 1
typedef struct _NDIS_NDK_LOCAL_ENDPOINTS {
    NDIS_OBJECT_HEADER Header;
    ULONG Flags;
    ULONG Count;
    BOOLEAN NDLocalEndpointsMappedtoTCPLocalEndpoints;
    NDIS_NDK_LOCAL_ENDPOINT_ENTRY LocalEndpoints[1];
} NDIS_NDK_LOCAL_ENDPOINTS;

#define NDIS_NDK_CAPABILITIES_REVISION_1 1
typedef struct _NDIS_NDK_CAPABILITIES {
    NDIS_OBJECT_HEADER Header; /* Type DEFAULT, Revision 1 */
    ULONG Flags;               /* 0 */
    ULONG MaxQpCount;
    ULONG MaxCqCount;
    ULONG MaxMrCount;
    ULONG MaxPdCount;
    ULONG MaxInboundReadLimit;  /* 0: no adapter-wide limit */
    ULONG MaxOutboundReadLimit; /* 0: no adapter-wide limit */
    ULONG MaxMwCount;
    ULONG MaxSrqCount; /* 0: no SRQ */
    ULONG64 MissingCounterMask;
    NDK_ADAPTER_INFO *NdkInfo;
} NDIS_NDK_CAPABILITIES;

typedef struct _NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES {
    NDIS_OBJECT_HEADER Header; /* Type 0xB3, Revision 1 */
    BOOLEAN Enabled;
    NDIS_NDK_CAPABILITIES *NdkCapabilities;
} NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES;

/* ---- Layouts, pinned (LP64) ------------------------------------------------------------- */

#ifdef __cplusplus
#define NDK_STATIC_ASSERT static_assert
#else
#define NDK_STATIC_ASSERT _Static_assert
#endif

NDK_STATIC_ASSERT(sizeof(void *) == 8, "the NDK ABI here is LP64");
NDK_STATIC_ASSERT(sizeof(ULONG) == 4, "ULONG is 32 bits");
NDK_STATIC_ASSERT(sizeof(NDK_OBJECT_HEADER) == 40, "object header");
NDK_STATIC_ASSERT(offsetof(NDK_OBJECT_HEADER, ObjectType) == 4, "object header");
NDK_STATIC_ASSERT(offsetof(NDK_OBJECT_HEADER, NdkReserved) == 8, "object header");
NDK_STATIC_ASSERT(sizeof(NDK_CQ) == 48 && offsetof(NDK_CQ, Dispatch) == 40, "object layout");
NDK_STATIC_ASSERT(sizeof(NDK_RESULT) == 24, "NDK_RESULT");
NDK_STATIC_ASSERT(offsetof(NDK_RESULT, QPContext) == 8, "NDK_RESULT");
NDK_STATIC_ASSERT(offsetof(NDK_RESULT, RequestContext) == 16, "NDK_RESULT");
NDK_STATIC_ASSERT(offsetof(NDK_RESULT_EX, Status) == 0, "NDK_RESULT_EX");
NDK_STATIC_ASSERT(offsetof(NDK_RESULT_EX, BytesTransferred) == 4, "NDK_RESULT_EX");
NDK_STATIC_ASSERT(offsetof(NDK_RESULT_EX, QPContext) == 8, "NDK_RESULT_EX");
NDK_STATIC_ASSERT(offsetof(NDK_RESULT_EX, RequestContext) == 16, "NDK_RESULT_EX");
NDK_STATIC_ASSERT(offsetof(NDK_RESULT_EX, Type) == 24, "NDK_RESULT_EX");
NDK_STATIC_ASSERT(offsetof(NDK_RESULT_EX, ProviderErrorCode) == 28, "NDK_RESULT_EX 2.1");
NDK_STATIC_ASSERT(offsetof(NDK_RESULT_EX, TypeSpecificCompletionOutput) == 32, "NDK_RESULT_EX");
NDK_STATIC_ASSERT(sizeof(NDK_RESULT_EX) == 40, "NDK_RESULT_EX");
NDK_STATIC_ASSERT(sizeof(NDK_SGE) == 16 && offsetof(NDK_SGE, Length) == 8, "NDK_SGE");
NDK_STATIC_ASSERT(offsetof(NDK_SGE, MemoryRegionToken) == 12, "NDK_SGE");
NDK_STATIC_ASSERT(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) == 16, "LAM");
NDK_STATIC_ASSERT(offsetof(NDK_ADAPTER_INFO, MaxRegistrationSize) == 16, "NDK_ADAPTER_INFO");
NDK_STATIC_ASSERT(offsetof(NDK_ADAPTER_INFO, FRMRPageCount) == 32, "NDK_ADAPTER_INFO");
NDK_STATIC_ASSERT(offsetof(NDK_ADAPTER_INFO, AdapterFlags) == 92, "NDK_ADAPTER_INFO");
NDK_STATIC_ASSERT(offsetof(NDK_ADAPTER_INFO, RdmaTechnology) == 96, "NDK_ADAPTER_INFO");
NDK_STATIC_ASSERT(sizeof(NDK_ADAPTER_INFO) == 104, "NDK_ADAPTER_INFO");
NDK_STATIC_ASSERT(sizeof(SOCKADDR_INET) == 28, "SOCKADDR_INET");
NDK_STATIC_ASSERT(sizeof(NDIS_OBJECT_HEADER) == 4, "NDIS_OBJECT_HEADER");
NDK_STATIC_ASSERT(sizeof(NDIS_NDK_CONNECTION_ENTRY) == 64, "connection entry");
NDK_STATIC_ASSERT(offsetof(NDIS_NDK_CONNECTIONS, Connections) == 16, "connections");
NDK_STATIC_ASSERT(offsetof(NDIS_NDK_CONNECTIONS, Count) == 8, "Count after Flags (WDK layout)");
NDK_STATIC_ASSERT(NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1 == 80, "revision 1 size");
NDK_STATIC_ASSERT(sizeof(NDIS_NDK_LOCAL_ENDPOINT_ENTRY) == 36, "local endpoint entry");
NDK_STATIC_ASSERT(offsetof(NDIS_NDK_LOCAL_ENDPOINTS, LocalEndpoints) == 16, "local endpoints");
NDK_STATIC_ASSERT(sizeof(NDIS_NDK_PERFORMANCE_COUNTERS) == 30 * 8, "30 counters");
NDK_STATIC_ASSERT(offsetof(NDIS_NDK_PERFORMANCE_COUNTERS, CQError) == 25 * 8, "CQError bit 25");
NDK_STATIC_ASSERT(offsetof(NDIS_NDK_STATISTICS_INFO, CounterSet) == 8, "statistics info");
NDK_STATIC_ASSERT(sizeof(MDL) == 24, "MDL stand-in");

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NDK_NDKPI_H */
