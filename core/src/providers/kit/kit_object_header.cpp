#include "kit_object_header.hpp"

namespace ndk::kit {

void init_header(NDK_OBJECT_HEADER &header, NDK_OBJECT_TYPE type, NDK_VERSION version)
{
    header.Version = version;
    header.ObjectType = type;
    header.NdkReserved = NDK_OBJECT_HEADER_RESERVED_BLOCK{};
}

NTSTATUS query_extension_not_supported(NDK_OBJECT_HEADER *, GUID *, NDK_VERSION,
                                       NDK_EXTENSION_INTERFACE *)
{
    // "There are currently no standard extended interfaces defined." (digest 1.1)
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS query_adapter_info(const NDK_ADAPTER_INFO &info, NDK_ADAPTER_INFO *pInfo,
                            ULONG *pBufferSize)
{
    if (pBufferSize == nullptr)
        return STATUS_INVALID_PARAMETER;
    if (*pBufferSize < sizeof(NDK_ADAPTER_INFO)) {
        *pBufferSize = sizeof(NDK_ADAPTER_INFO); // the required size (digest 1.1)
        return STATUS_BUFFER_TOO_SMALL;
    }
    if (pInfo == nullptr) // room claimed for a structure that is not there
        return STATUS_INVALID_PARAMETER;
    *pInfo = info;
    *pBufferSize = sizeof(NDK_ADAPTER_INFO);
    return STATUS_SUCCESS;
}

} // namespace ndk::kit
