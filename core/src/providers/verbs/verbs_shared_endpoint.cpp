// Shared endpoint (digest 1.10): an rdma_cm id bound to the address:port with REUSEADDR and
// never connected, so the port stays held while connectors bound the same way (REUSEADDR,
// verbs_connector.cpp) connect from it.  REUSEADDR would also let a second shared endpoint
// bind the same address:port, which NDK refuses (SHARING_VIOLATION, digest 1.1): the
// endpoints of this process are kept in a table for that check.
#include "verbs_objects.hpp"

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

namespace ndk::verbs {
namespace {

std::mutex g_endpoints_mu;
std::set<std::string> g_endpoints; // "address port" of every live shared endpoint

std::string endpoint_key(const sockaddr_storage &address)
{
    const auto *a = reinterpret_cast<const sockaddr *>(&address);
    return address_to_text(a) + " " + std::to_string(port_of(a));
}

} // namespace

VSharedEndpoint::VSharedEndpoint(VerbsAdapter &adapter)
    : NdkObject(adapter, kType, &kSharedEndpointDispatch)
{
}

void VSharedEndpoint::destroy_resources()
{
    if (id != nullptr) {
        // Only now is the port free: the endpoint's close waited for its connectors.
        std::lock_guard lock(g_endpoints_mu);
        g_endpoints.erase(endpoint_key(address));
        rdma_destroy_id(id);
    }
    id = nullptr;
}

NTSTATUS create_shared_endpoint(NDK_ADAPTER *ndk_adapter, const PSOCKADDR pAddress,
                                ULONG AddressLength, NDK_FN_CREATE_COMPLETION, PVOID,
                                NDK_SHARED_ENDPOINT **ppNdkSharedEndpoint)
{
    VerbsAdapter *adapter = VerbsAdapter::from(ndk_adapter);
    sockaddr_storage address;
    if (ppNdkSharedEndpoint == nullptr || !read_address(pAddress, AddressLength, address))
        return STATUS_INVALID_PARAMETER;
    if (!own_address(*adapter, address))
        return STATUS_INVALID_ADDRESS;
    std::lock_guard lock(g_endpoints_mu);
    if (port_of(reinterpret_cast<const sockaddr *>(&address)) != 0 &&
        g_endpoints.count(endpoint_key(address)) != 0)
        return STATUS_SHARING_VIOLATION; // another shared endpoint holds it
    auto *endpoint = new VSharedEndpoint(*adapter);
    int one = 1;
    if (rdma_create_id(adapter->cm(), &endpoint->id, static_cast<Object *>(endpoint),
                       RDMA_PS_TCP) != 0) {
        NTSTATUS status = errno_status(errno);
        delete endpoint;
        return status;
    }
    if (rdma_set_option(endpoint->id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof one) !=
            0 ||
        rdma_bind_addr(endpoint->id, reinterpret_cast<sockaddr *>(&address)) != 0) {
        int error = errno;
        rdma_destroy_id(endpoint->id);
        delete endpoint;
        return error == EADDRINUSE ? STATUS_SHARING_VIOLATION : errno_status(error);
    }
    const sockaddr *bound = rdma_get_local_addr(endpoint->id);
    std::memcpy(&endpoint->address, bound, length_of(bound)); // with the port picked for 0
    g_endpoints.insert(endpoint_key(endpoint->address));
    return adapter->created(endpoint, ppNdkSharedEndpoint);
}

namespace {

NTSTATUS get_local_address(NDK_SHARED_ENDPOINT *ndk_endpoint, PSOCKADDR pAddress,
                           ULONG *pAddressLength)
{
    VSharedEndpoint *endpoint = VSharedEndpoint::from(ndk_endpoint);
    return write_address(reinterpret_cast<const sockaddr *>(&endpoint->address), pAddress,
                         pAddressLength);
}

NTSTATUS close_endpoint(NDK_OBJECT_HEADER *header, NDK_FN_CLOSE_COMPLETION completion,
                        PVOID context)
{
    return VSharedEndpoint::from(reinterpret_cast<NDK_SHARED_ENDPOINT *>(header))
        ->close(completion, context);
}

} // namespace

const NDK_SHARED_ENDPOINT_DISPATCH kSharedEndpointDispatch = {
    .NdkCloseSharedEndpoint = close_endpoint,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkGetLocalAddress = get_local_address,
};

} // namespace ndk::verbs
