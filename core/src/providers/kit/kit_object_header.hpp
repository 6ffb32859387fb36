// What every NDK object of every provider starts with: the NDK_OBJECT_HEADER (digest 1.0) and
// the extension query that no standard interface answers yet (digest 1.1).
#pragma once

#include "ndk/ndkpi.h"

namespace ndk::kit {

// Initialize an NDK object header as digest 1.0 requires: the negotiated version, the type,
// and the reserved block zeroed for the consumer.
void init_header(NDK_OBJECT_HEADER &header, NDK_OBJECT_TYPE type, NDK_VERSION version);

// NdkQueryExtension of every dispatch table.
NTSTATUS query_extension_not_supported(NDK_OBJECT_HEADER *object, GUID *id, NDK_VERSION version,
                                       NDK_EXTENSION_INTERFACE *out);

} // namespace ndk::kit
