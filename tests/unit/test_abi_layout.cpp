// The C ABI of core/include/ndk/ndkpi.h against the digest: structure layouts (LP64), dispatch
// table member order (digest 1.1-1.10), constant values (digest 1.0, 2.1-2.6, 3.7) and the
// MDL helpers.
#include "ndk/ndkpi.h"
#include "ndk/provider.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

namespace {

constexpr size_t kPtr = sizeof(void *);

// Member `m` of dispatch table `T` is the `index`-th function pointer.
#define EXPECT_SLOT(T, m, index) EXPECT_EQ(offsetof(T, m), (index)*kPtr) << #T "::" #m

TEST(AbiLayout, ObjectHeaderAndEveryObjectIsHeaderThenDispatch)
{
    EXPECT_EQ(sizeof(NDK_VERSION), 4u);
    EXPECT_EQ(offsetof(NDK_VERSION, Major), 0u);
    EXPECT_EQ(offsetof(NDK_VERSION, Minor), 2u);
    EXPECT_EQ(offsetof(NDK_OBJECT_HEADER, Version), 0u);
    EXPECT_EQ(offsetof(NDK_OBJECT_HEADER, ObjectType), 4u);
    EXPECT_EQ(offsetof(NDK_OBJECT_HEADER, NdkReserved), 8u);
    EXPECT_EQ(sizeof(NDK_OBJECT_HEADER_RESERVED_BLOCK), 4 * kPtr);
    EXPECT_EQ(sizeof(NDK_OBJECT_HEADER), 8 + 4 * kPtr);
#define EXPECT_OBJECT(T)                                                                           \
    do {                                                                                           \
        EXPECT_EQ(offsetof(T, Header), 0u) << #T;                                                  \
        EXPECT_EQ(offsetof(T, Dispatch), sizeof(NDK_OBJECT_HEADER)) << #T;                         \
        EXPECT_EQ(sizeof(T), sizeof(NDK_OBJECT_HEADER) + kPtr) << #T;                              \
    } while (0)
    EXPECT_OBJECT(NDK_ADAPTER);
    EXPECT_OBJECT(NDK_CQ);
    EXPECT_OBJECT(NDK_PD);
    EXPECT_OBJECT(NDK_MR);
    EXPECT_OBJECT(NDK_MW);
    EXPECT_OBJECT(NDK_SRQ);
    EXPECT_OBJECT(NDK_QP);
    EXPECT_OBJECT(NDK_CONNECTOR);
    EXPECT_OBJECT(NDK_LISTENER);
    EXPECT_OBJECT(NDK_SHARED_ENDPOINT);
#undef EXPECT_OBJECT
}

// NDIS_NDK_CAPABILITIES (digest 3.7), which QueryNdkCapabilities fills (ndk/provider.h), and
// the provider entry's revisions: version 2 ends with OidRequest, version 3 adds
// QueryNdkCapabilities after it.
TEST(AbiLayout, NdkCapabilitiesAndTheProviderEntryRevisions)
{
    EXPECT_EQ(offsetof(NDIS_NDK_CAPABILITIES, Flags), 4u);
    EXPECT_EQ(offsetof(NDIS_NDK_CAPABILITIES, MaxQpCount), 8u);
    EXPECT_EQ(offsetof(NDIS_NDK_CAPABILITIES, MaxSrqCount), 36u);
    EXPECT_EQ(offsetof(NDIS_NDK_CAPABILITIES, MissingCounterMask), 40u);
    EXPECT_EQ(offsetof(NDIS_NDK_CAPABILITIES, NdkInfo), 48u);
    EXPECT_EQ(sizeof(NDIS_NDK_CAPABILITIES), 56u);
    EXPECT_EQ(NDK_SIZEOF_HARNESS_PROVIDER_VERSION_2,
              offsetof(NDK_HARNESS_PROVIDER, QueryNdkCapabilities));
    EXPECT_EQ(sizeof(NDK_HARNESS_PROVIDER), NDK_SIZEOF_HARNESS_PROVIDER_VERSION_2 + kPtr);
    EXPECT_EQ(NDK_HARNESS_PROVIDER_VERSION, NDK_HARNESS_PROVIDER_VERSION_3);
}

TEST(AbiLayout, ResultAndResultEx)
{
    EXPECT_EQ(offsetof(NDK_RESULT, Status), 0u);
    EXPECT_EQ(offsetof(NDK_RESULT, BytesTransferred), 4u);
    EXPECT_EQ(offsetof(NDK_RESULT, QPContext), 8u);
    EXPECT_EQ(offsetof(NDK_RESULT, RequestContext), 16u);
    EXPECT_EQ(sizeof(NDK_RESULT), 24u);

    // NDK_RESULT_EX is NDK_RESULT followed by Type; NDKPI 2.1's ProviderErrorCode sits in the
    // LP64 padding after Type (digest 2.3), so the 1.2 offsets are unchanged.
    EXPECT_EQ(offsetof(NDK_RESULT_EX, Status), 0u);
    EXPECT_EQ(offsetof(NDK_RESULT_EX, BytesTransferred), 4u);
    EXPECT_EQ(offsetof(NDK_RESULT_EX, QPContext), 8u);
    EXPECT_EQ(offsetof(NDK_RESULT_EX, RequestContext), 16u);
    EXPECT_EQ(offsetof(NDK_RESULT_EX, Type), 24u);
    EXPECT_EQ(offsetof(NDK_RESULT_EX, ProviderErrorCode), 28u);
    EXPECT_EQ(sizeof(NDK_RESULT_EX::ProviderErrorCode), 4u);
    EXPECT_EQ(offsetof(NDK_RESULT_EX, TypeSpecificCompletionOutput), 32u);
    EXPECT_EQ(sizeof(NDK_RESULT_EX::TypeSpecificCompletionOutput), kPtr);
    EXPECT_EQ(sizeof(NDK_RESULT_EX), 40u);
    EXPECT_EQ(sizeof(NDK_OPERATION_TYPE), 4u);
}

TEST(AbiLayout, AdapterInfoFieldsInDigestOrder)
{
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, Version), 0u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, VendorId), 4u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, DeviceId), 8u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, MaxRegistrationSize), 16u);
    EXPECT_EQ(sizeof(NDK_ADAPTER_INFO::MaxRegistrationSize), sizeof(SIZE_T));
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, MaxWindowSize), 24u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, FRMRPageCount), 32u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, MaxInitiatorRequestSge), 36u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, MaxReceiveRequestSge), 40u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, MaxReadRequestSge), 44u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, MaxTransferLength), 48u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, MaxInlineDataSize), 52u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, MaxInboundReadLimit), 56u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, MaxOutboundReadLimit), 60u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, MaxReceiveQueueDepth), 64u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, MaxInitiatorQueueDepth), 68u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, MaxSrqDepth), 72u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, MaxCqDepth), 76u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, LargeRequestThreshold), 80u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, MaxCallerData), 84u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, MaxCalleeData), 88u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, AdapterFlags), 92u);
    EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, RdmaTechnology), 96u);
    EXPECT_EQ(sizeof(NDK_ADAPTER_INFO), 104u);
}

TEST(AbiLayout, SgeAndLogicalAddressMapping)
{
    EXPECT_EQ(offsetof(NDK_SGE, VirtualAddress), 0u);
    EXPECT_EQ(offsetof(NDK_SGE, LogicalAddress), 0u);
    EXPECT_EQ(offsetof(NDK_SGE, Length), 8u);
    EXPECT_EQ(offsetof(NDK_SGE, MemoryRegionToken), 12u);
    EXPECT_EQ(sizeof(NDK_SGE), 16u);
    EXPECT_EQ(sizeof(NDK_LOGICAL_ADDRESS), 8u);
    EXPECT_EQ(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterContext), 0u);
    EXPECT_EQ(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageCount), 8u);
    EXPECT_EQ(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray), 16u);
    EXPECT_EQ(sizeof(NDK_EXTENSION_INTERFACE), kPtr);
}

TEST(AbiLayout, AdapterPdCqMrMwSrqDispatchOrder)
{
    // No close entry: the adapter closes through CLOSE_NDK_ADAPTER_HANDLER (digest 1.1).
    EXPECT_SLOT(NDK_ADAPTER_DISPATCH, NdkQueryExtension, 0);
    EXPECT_SLOT(NDK_ADAPTER_DISPATCH, NdkQueryAdapterInfo, 1);
    EXPECT_SLOT(NDK_ADAPTER_DISPATCH, NdkCreateCq, 2);
    EXPECT_SLOT(NDK_ADAPTER_DISPATCH, NdkCreatePd, 3);
    EXPECT_SLOT(NDK_ADAPTER_DISPATCH, NdkCreateSharedEndpoint, 4);
    EXPECT_SLOT(NDK_ADAPTER_DISPATCH, NdkCreateConnector, 5);
    EXPECT_SLOT(NDK_ADAPTER_DISPATCH, NdkCreateListener, 6);
    EXPECT_SLOT(NDK_ADAPTER_DISPATCH, NdkBuildLAM, 7);
    EXPECT_SLOT(NDK_ADAPTER_DISPATCH, NdkReleaseLAM, 8);
    EXPECT_EQ(sizeof(NDK_ADAPTER_DISPATCH), 9 * kPtr);
    EXPECT_SLOT(NDK_PD_DISPATCH, NdkClosePd, 0);
    EXPECT_SLOT(NDK_PD_DISPATCH, NdkQueryExtension, 1);
    EXPECT_SLOT(NDK_PD_DISPATCH, NdkCreateMr, 2);
    EXPECT_SLOT(NDK_PD_DISPATCH, NdkCreateMw, 3);
    EXPECT_SLOT(NDK_PD_DISPATCH, NdkCreateSrq, 4);
    EXPECT_SLOT(NDK_PD_DISPATCH, NdkCreateQp, 5);
    EXPECT_SLOT(NDK_PD_DISPATCH, NdkCreateQpWithSrq, 6);
    EXPECT_SLOT(NDK_PD_DISPATCH, NdkGetPrivilegedMemoryRegionToken, 7);
    EXPECT_EQ(sizeof(NDK_PD_DISPATCH), 8 * kPtr);

    EXPECT_SLOT(NDK_CQ_DISPATCH, NdkCloseCq, 0);
    EXPECT_SLOT(NDK_CQ_DISPATCH, NdkQueryExtension, 1);
    EXPECT_SLOT(NDK_CQ_DISPATCH, NdkResizeCq, 2);
    EXPECT_SLOT(NDK_CQ_DISPATCH, NdkArmCq, 3);
    EXPECT_SLOT(NDK_CQ_DISPATCH, NdkGetCqResults, 4);
    EXPECT_SLOT(NDK_CQ_DISPATCH, NdkControlCqInterruptModeration, 5);
    EXPECT_SLOT(NDK_CQ_DISPATCH, NdkGetCqResultsEx, 6); // NDKPI 1.2, appended last
    EXPECT_EQ(sizeof(NDK_CQ_DISPATCH), 7 * kPtr);
    EXPECT_SLOT(NDK_MR_DISPATCH, NdkCloseMr, 0);
    EXPECT_SLOT(NDK_MR_DISPATCH, NdkQueryExtension, 1);
    EXPECT_SLOT(NDK_MR_DISPATCH, NdkRegisterMr, 2);
    EXPECT_SLOT(NDK_MR_DISPATCH, NdkDeregisterMr, 3);
    EXPECT_SLOT(NDK_MR_DISPATCH, NdkInitializeFastRegisterMr, 4);
    EXPECT_SLOT(NDK_MR_DISPATCH, NdkGetRemoteTokenFromMr, 5);
    EXPECT_SLOT(NDK_MR_DISPATCH, NdkGetLocalTokenFromMr, 6);
    EXPECT_EQ(sizeof(NDK_MR_DISPATCH), 7 * kPtr);

    EXPECT_SLOT(NDK_MW_DISPATCH, NdkCloseMw, 0);
    EXPECT_SLOT(NDK_MW_DISPATCH, NdkQueryExtension, 1);
    EXPECT_SLOT(NDK_MW_DISPATCH, NdkGetRemoteTokenFromMw, 2);
    EXPECT_EQ(sizeof(NDK_MW_DISPATCH), 3 * kPtr);

    EXPECT_SLOT(NDK_SRQ_DISPATCH, NdkCloseSrq, 0);
    EXPECT_SLOT(NDK_SRQ_DISPATCH, NdkQueryExtension, 1);
    EXPECT_SLOT(NDK_SRQ_DISPATCH, NdkModifySrq, 2);
    EXPECT_SLOT(NDK_SRQ_DISPATCH, NdkSrqReceive, 3);
    EXPECT_EQ(sizeof(NDK_SRQ_DISPATCH), 4 * kPtr);
}

TEST(AbiLayout, QpConnectorListenerSharedEndpointDispatchOrder)
{
    EXPECT_SLOT(NDK_QP_DISPATCH, NdkCloseQp, 0);
    EXPECT_SLOT(NDK_QP_DISPATCH, NdkQueryExtension, 1);
    EXPECT_SLOT(NDK_QP_DISPATCH, NdkFlush, 2);
    EXPECT_SLOT(NDK_QP_DISPATCH, NdkSend, 3);
    EXPECT_SLOT(NDK_QP_DISPATCH, NdkReceive, 4);
    EXPECT_SLOT(NDK_QP_DISPATCH, NdkBind, 5);
    EXPECT_SLOT(NDK_QP_DISPATCH, NdkFastRegister, 6);
    EXPECT_SLOT(NDK_QP_DISPATCH, NdkInvalidate, 7);
    EXPECT_SLOT(NDK_QP_DISPATCH, NdkRead, 8);
    EXPECT_SLOT(NDK_QP_DISPATCH, NdkWrite, 9);
    EXPECT_SLOT(NDK_QP_DISPATCH, NdkSendAndInvalidate, 10); // NDKPI 1.2, appended last
    EXPECT_EQ(sizeof(NDK_QP_DISPATCH), 11 * kPtr);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, NdkCloseConnector, 0);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, NdkQueryExtension, 1);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, NdkConnect, 2);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, NdkConnectWithSharedEndpoint, 3);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, NdkCompleteConnect, 4);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, NdkAccept, 5);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, NdkReject, 6);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, NdkGetConnectionData, 7);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, NdkGetLocalAddress, 8);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, NdkGetPeerAddress, 9);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, NdkDisconnect, 10);
    // The NDKPI 2.1 members come after the 11 base members (digest 1.8).
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, NdkCompleteConnectEx, 11);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, NdkAcceptEx, 12);
    EXPECT_EQ(sizeof(NDK_CONNECTOR_DISPATCH), 13 * kPtr);

    EXPECT_SLOT(NDK_LISTENER_DISPATCH, NdkCloseListener, 0);
    EXPECT_SLOT(NDK_LISTENER_DISPATCH, NdkQueryExtension, 1);
    EXPECT_SLOT(NDK_LISTENER_DISPATCH, NdkListen, 2);
    EXPECT_SLOT(NDK_LISTENER_DISPATCH, NdkGetLocalAddress, 3);
    EXPECT_SLOT(NDK_LISTENER_DISPATCH, NdkControlConnectEvents, 4);
    EXPECT_EQ(sizeof(NDK_LISTENER_DISPATCH), 5 * kPtr);

    EXPECT_SLOT(NDK_SHARED_ENDPOINT_DISPATCH, NdkCloseSharedEndpoint, 0);
    EXPECT_SLOT(NDK_SHARED_ENDPOINT_DISPATCH, NdkQueryExtension, 1);
    EXPECT_SLOT(NDK_SHARED_ENDPOINT_DISPATCH, NdkGetLocalAddress, 2);
    EXPECT_EQ(sizeof(NDK_SHARED_ENDPOINT_DISPATCH), 3 * kPtr);
}

TEST(AbiLayout, NdisStructures)
{
    EXPECT_EQ(sizeof(NDIS_OBJECT_HEADER), 4u);
    EXPECT_EQ(offsetof(NDIS_OPEN_NDK_ADAPTER_PARAMETERS, Version), 0u);
    EXPECT_EQ(offsetof(NDIS_OPEN_NDK_ADAPTER_PARAMETERS, SwitchId), 4u);
    EXPECT_EQ(offsetof(NDIS_OPEN_NDK_ADAPTER_PARAMETERS, VPortId), 8u);
    EXPECT_EQ(offsetof(NDIS_NDK_PROVIDER_CHARACTERISTICS, Header), 0u);
    EXPECT_EQ(offsetof(NDIS_NDK_PROVIDER_CHARACTERISTICS, Flags), 4u);
    EXPECT_EQ(offsetof(NDIS_NDK_PROVIDER_CHARACTERISTICS, OpenNDKAdapterHandler), 8u);
    EXPECT_EQ(offsetof(NDIS_NDK_PROVIDER_CHARACTERISTICS, CloseNDKAdapterHandler), 16u);
    EXPECT_EQ(sizeof(NDIS_NDK_PERFORMANCE_COUNTERS), 30 * sizeof(ULONG64));
    EXPECT_EQ(offsetof(NDIS_NDK_PERFORMANCE_COUNTERS, CQError), 25 * sizeof(ULONG64));
    EXPECT_EQ(offsetof(NDIS_NDK_STATISTICS_INFO, CounterSet), 8u);
    EXPECT_EQ(sizeof(SOCKADDR_INET), 28u);
    EXPECT_EQ(sizeof(NDIS_NDK_CONNECTION_ENTRY), 64u);
    EXPECT_EQ(offsetof(NDIS_NDK_CONNECTIONS, Connections), 16u);
    EXPECT_EQ(sizeof(NDIS_NDK_LOCAL_ENDPOINT_ENTRY), 36u);
    EXPECT_EQ(offsetof(NDIS_NDK_LOCAL_ENDPOINTS, LocalEndpoints), 16u);
}

TEST(AbiConstants, StatusValues)
{
    // digest 1.0 "Status values used below" and 1.1 (NDIS statuses).
    EXPECT_EQ(STATUS_SUCCESS, 0x00000000);
    EXPECT_EQ(STATUS_PENDING, 0x00000103);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_INVALID_PARAMETER), 0xC000000Du);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_INSUFFICIENT_RESOURCES), 0xC000009Au);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_BUFFER_TOO_SMALL), 0xC0000023u);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_NOT_SUPPORTED), 0xC00000BBu);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_INVALID_PARAMETER_MIX), 0xC0000030u);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_SHARING_VIOLATION), 0xC0000043u);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_TOO_MANY_ADDRESSES), 0xC0000209u);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_INVALID_ADDRESS), 0xC0000141u);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_ADDRESS_ALREADY_EXISTS), 0xC000020Au);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_NETWORK_UNREACHABLE), 0xC000023Cu);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_HOST_UNREACHABLE), 0xC000023Du);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_CONNECTION_REFUSED), 0xC0000236u);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_CONNECTION_INVALID), 0xC000023Au);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_CONNECTION_ABORTED), 0xC0000241u);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_IO_TIMEOUT), 0xC00000B5u);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_ACCESS_VIOLATION), 0xC0000005u);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_REMOTE_RESOURCES), 0xC000013Du);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_IMPLEMENTATION_LIMIT), 0xC000042Bu);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_CANCELLED), 0xC0000120u);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_BUFFER_OVERFLOW), 0x80000005u);
    EXPECT_EQ(static_cast<uint32_t>(STATUS_INTERNAL_ERROR), 0xC00000E5u);
    EXPECT_EQ(static_cast<uint32_t>(NDIS_STATUS_BAD_VERSION), 0xC0010004u);
    EXPECT_EQ(static_cast<uint32_t>(NDIS_STATUS_ADAPTER_NOT_READY), 0xC0010011u);
    EXPECT_EQ(NDIS_STATUS_RESOURCES, STATUS_INSUFFICIENT_RESOURCES);
    EXPECT_EQ(NDIS_STATUS_SUCCESS, STATUS_SUCCESS);
    // ND_* equal their NTSTATUS twins (digest 4.1), including the v1 aliases.
    EXPECT_EQ(ND_CANCELED, STATUS_CANCELLED);
    EXPECT_EQ(ND_REMOTE_ERROR, STATUS_REMOTE_RESOURCES);
    EXPECT_EQ(ND_LOCAL_LENGTH, STATUS_DATA_OVERRUN);
    EXPECT_EQ(ND_INVALIDATION_ERROR, STATUS_INVALID_DEVICE_REQUEST);
    // Error statuses are negative as NTSTATUS; PENDING is a success code.
    EXPECT_LT(STATUS_INVALID_PARAMETER, 0);
    EXPECT_GT(STATUS_PENDING, 0);
}

TEST(AbiConstants, RequestAndMrFlags)
{
    EXPECT_EQ(NDK_OP_FLAG_SILENT_SUCCESS, 0x001);
    EXPECT_EQ(NDK_OP_FLAG_READ_FENCE, 0x002);
    EXPECT_EQ(NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT, 0x004);
    EXPECT_EQ(NDK_OP_FLAG_ALLOW_REMOTE_READ, 0x008);
    EXPECT_EQ(NDK_OP_FLAG_ALLOW_LOCAL_WRITE, 0x010);
    EXPECT_EQ(NDK_OP_FLAG_ALLOW_REMOTE_WRITE, 0x030);
    EXPECT_EQ(NDK_OP_FLAG_ALLOW_REMOTE_WRITE & NDK_OP_FLAG_ALLOW_LOCAL_WRITE,
              NDK_OP_FLAG_ALLOW_LOCAL_WRITE); // remote write includes local write
    EXPECT_EQ(NDK_OP_FLAG_INLINE, 0x040);
    EXPECT_EQ(NDK_OP_FLAG_RDMA_READ_SINK, 0x080);
    EXPECT_EQ(NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE, 0x100);
    EXPECT_EQ(NDK_OP_FLAG_DEFER, 0x200);

    EXPECT_EQ(NDK_MR_FLAG_ALLOW_LOCAL_READ, 0x0);
    EXPECT_EQ(NDK_MR_FLAG_ALLOW_LOCAL_WRITE, 0x1);
    EXPECT_EQ(NDK_MR_FLAG_ALLOW_REMOTE_READ, 0x2);
    EXPECT_EQ(NDK_MR_FLAG_ALLOW_REMOTE_WRITE, 0x5);
    EXPECT_EQ(NDK_MR_FLAG_ALLOW_REMOTE_WRITE & NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
              NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    EXPECT_EQ(NDK_MR_FLAG_RDMA_READ_SINK, 0x8);

    EXPECT_EQ(NDK_CQ_NOTIFY_ERRORS, 0);
    EXPECT_EQ(NDK_CQ_NOTIFY_ANY, 1);
    EXPECT_EQ(NDK_CQ_NOTIFY_SOLICITED, 2);
}

TEST(AbiConstants, AdapterFlagsTechnologyAndEnums)
{
    EXPECT_EQ(NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED, 0x00000001);
    EXPECT_EQ(NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED, 0x00000002);
    EXPECT_EQ(NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED, 0x00000004);
    EXPECT_EQ(NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED, 0x00000008);
    EXPECT_EQ(NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED, 0x00000010);
    EXPECT_EQ(NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED, 0x00000100);
    EXPECT_EQ(NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED, 0x00010000);

    EXPECT_EQ(NdkUndefined, 0);
    EXPECT_EQ(NdkiWarp, 1);
    EXPECT_EQ(NdkInfiniBand, 2);
    EXPECT_EQ(NdkRoCE, 3);
    EXPECT_EQ(NdkRoCEv2, 4);
    EXPECT_EQ(NdkMaxTechnology, 5);

    EXPECT_EQ(NdkObjectTypeUndefined, 0);
    EXPECT_EQ(NdkObjectTypeAdapter, 1);
    EXPECT_EQ(NdkObjectTypeQp, 2);
    EXPECT_EQ(NdkObjectTypeCq, 3);
    EXPECT_EQ(NdkObjectTypeMr, 4);
    EXPECT_EQ(NdkObjectTypeMw, 5);
    EXPECT_EQ(NdkObjectTypePd, 6);
    EXPECT_EQ(NdkObjectTypeSharedEndpoint, 7);
    EXPECT_EQ(NdkObjectTypeConnector, 8);
    EXPECT_EQ(NdkObjectTypeListener, 9);
    EXPECT_EQ(NdkObjectTypeSrq, 10);
    EXPECT_EQ(NdkObjectTypeMax, 11);

    EXPECT_EQ(NdkOperationTypeReceive, 1);
    EXPECT_EQ(NdkOperationTypeSend, 2);
    EXPECT_EQ(NdkOperationTypeFastRegister, 4);
    EXPECT_EQ(NdkOperationTypeBind, 8);
    EXPECT_EQ(NdkOperationTypeInvalidate, 16);
    EXPECT_EQ(NdkOperationTypeRead, 32);
    EXPECT_EQ(NdkOperationTypeWrite, 64);
    EXPECT_EQ(NdkOperationTypeReceiveAndInvalidate, 32769);
    EXPECT_EQ(NdkOperationTypeReceiveAndInvalidate, 0x8001);
}

TEST(AbiConstants, NdisControlPlane)
{
    EXPECT_EQ(OID_NDK_SET_STATE, 0xFC040201u);
    EXPECT_EQ(OID_NDK_STATISTICS, 0xFC040202u);
    EXPECT_EQ(OID_NDK_CONNECTIONS, 0xFC040203u);
    EXPECT_EQ(OID_NDK_LOCAL_ENDPOINTS, 0xFC040204u);
    EXPECT_EQ(NDIS_OBJECT_TYPE_DEFAULT, 0x80);
    EXPECT_EQ(NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS, 0xB2);
    EXPECT_EQ(NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_NDK_ATTRIBUTES, 0xB3);
    EXPECT_EQ(NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1, 1);

    // Bit index = offset / 8 (digest 3.7).
    EXPECT_EQ(NDIS_NDK_PERFORMANCE_COUNTER_MASK(Connect), ULONG64{1} << 0);
    EXPECT_EQ(NDIS_NDK_PERFORMANCE_COUNTER_MASK(Accept), ULONG64{1} << 1);
    EXPECT_EQ(NDIS_NDK_PERFORMANCE_COUNTER_MASK(ActiveConnection), ULONG64{1} << 4);
    EXPECT_EQ(NDIS_NDK_PERFORMANCE_COUNTER_MASK(Reserved01), ULONG64{1} << 5);
    EXPECT_EQ(NDIS_NDK_PERFORMANCE_COUNTER_MASK(Reserved20), ULONG64{1} << 24);
    EXPECT_EQ(NDIS_NDK_PERFORMANCE_COUNTER_MASK(CQError), ULONG64{1} << 25);
    EXPECT_EQ(NDIS_NDK_PERFORMANCE_COUNTER_MASK(RDMAInOctets), ULONG64{1} << 26);
    EXPECT_EQ(NDIS_NDK_PERFORMANCE_COUNTER_MASK(RDMAOutFrames), ULONG64{1} << 29);
}

TEST(AbiMdl, InitializeMdlSplitsAddressIntoPageAndOffset)
{
    MDL mdl;
    const uintptr_t va = 0x7A0000003123;
    NdkInitializeMdl(&mdl, reinterpret_cast<PVOID>(va), 10000);
    EXPECT_EQ(mdl.Next, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(mdl.StartVa), uintptr_t{0x7A0000003000});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(mdl.StartVa) % NDK_PAGE_SIZE, 0u);
    EXPECT_EQ(mdl.ByteOffset, 0x123u);
    EXPECT_EQ(MmGetMdlByteOffset(&mdl), 0x123u);
    EXPECT_EQ(mdl.ByteCount, 10000u);
    EXPECT_EQ(MmGetMdlByteCount(&mdl), 10000u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(MmGetMdlVirtualAddress(&mdl)), va);
    EXPECT_EQ(NDK_PAGE_SIZE, 4096u);
    // A page-aligned address has offset 0.
    MDL aligned;
    NdkInitializeMdl(&aligned, reinterpret_cast<PVOID>(uintptr_t{0x7A0000005000}), 1);
    EXPECT_EQ(aligned.ByteOffset, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(aligned.StartVa), uintptr_t{0x7A0000005000});
    EXPECT_EQ(sizeof(MDL), 24u);
}

} // namespace
