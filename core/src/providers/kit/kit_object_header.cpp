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

} // namespace ndk::kit
