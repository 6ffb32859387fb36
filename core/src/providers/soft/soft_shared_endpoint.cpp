// Shared endpoint (digest 1.10): a local address:port that several connectors share.
#include "soft_endpoint_address.hpp"
#include "soft_objects.hpp"

namespace ndk::soft {

NTSTATUS create_shared_endpoint(NDK_ADAPTER *ndk_adapter, const PSOCKADDR pAddress,
                                ULONG AddressLength, NDK_FN_CREATE_COMPLETION, PVOID,
                                NDK_SHARED_ENDPOINT **ppNdkSharedEndpoint)
{
    SoftAdapter *adapter = SoftAdapter::from(ndk_adapter);
    Endpoint local;
    if (ppNdkSharedEndpoint == nullptr)
        return STATUS_INVALID_PARAMETER;
    if (NTSTATUS status = resolve_local(*adapter, pAddress, AddressLength, local);
        status != STATUS_SUCCESS)
        return status;
    return adapter->create<SoftSharedEndpoint>(
        ppNdkSharedEndpoint, [&](NTSTATUS &status) -> std::unique_ptr<SoftSharedEndpoint> {
            std::shared_ptr<PortReservation> port;
            // SHARING_VIOLATION when taken, TOO_MANY_ADDRESSES when port 0 finds none free.
            status = Fabric::instance().reserve(local.ip, local.port,
                                                adapter->knobs().ephemeral_ports(), port);
            if (status != STATUS_SUCCESS)
                return nullptr;
            auto se = std::make_unique<SoftSharedEndpoint>(*adapter);
            se->port = std::move(port);
            return se;
        });
}

namespace {

NTSTATUS get_local_address(NDK_SHARED_ENDPOINT *ndk_se, PSOCKADDR pAddress, ULONG *pAddressLength)
{
    SoftSharedEndpoint *se = SoftSharedEndpoint::from(ndk_se);
    std::lock_guard lock(se->adapter().mu());
    if (!se->port)
        return STATUS_INVALID_DEVICE_STATE;
    return se->port->endpoint().to_sockaddr(pAddress, pAddressLength);
}

} // namespace

const NDK_SHARED_ENDPOINT_DISPATCH kSharedEndpointDispatch = {
    .NdkCloseSharedEndpoint = close_object<SoftSharedEndpoint>,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkGetLocalAddress = get_local_address,
};

} // namespace ndk::soft
