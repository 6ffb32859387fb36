// What every NDK object of every provider starts with: the NDK_OBJECT_HEADER (digest 1.0) and
// the extension query that no standard interface answers yet (digest 1.1); and the adapter's
// NdkQueryAdapterInfo, whose buffer-size rule is the same for every provider (digest 1.1).
#pragma once

#include "ndk/ndkpi.h"

namespace ndk::kit {

// Initialize an NDK object header as digest 1.0 requires: the negotiated version, the type,
// and the reserved block zeroed for the consumer.
void init_header(NDK_OBJECT_HEADER &header, NDK_OBJECT_TYPE type, NDK_VERSION version);

// NdkQueryExtension of every dispatch table.
NTSTATUS query_extension_not_supported(NDK_OBJECT_HEADER *object, GUID *id, NDK_VERSION version,
                                       NDK_EXTENSION_INTERFACE *out);

// An NDK object as digest 1.0 lays it out, over the provider's object class `Base` (a
// kit::AdapterObject, constructed from the adapter and the type): the NDK structure `Ndk`
// ({Header; Dispatch}) first, its header initialized with the adapter's negotiated version
// and its Dispatch set before the provider hands the object out.
template <class Ndk, class Base>
struct NdkObject : Ndk, Base {
    template <class Adapter>
    NdkObject(Adapter &adapter, NDK_OBJECT_TYPE type, const void *dispatch)
        : Ndk{}, Base(adapter, type)
    {
        init_header(this->Header, type, adapter.version());
        this->Dispatch = static_cast<decltype(this->Dispatch)>(dispatch);
    }
    NDK_OBJECT_HEADER &header() override { return this->Header; }
    // The object whose header a dispatch function is given (NDK_FN_CLOSE_OBJECT,
    // NDK_FN_QUERY_EXTENSION_INTERFACE).
    template <class Self>
    static Self *from_header(NDK_OBJECT_HEADER *header)
    {
        return static_cast<Self *>(reinterpret_cast<Ndk *>(header));
    }
};

// NdkQueryAdapterInfo (digest 1.1) answering `info`: a NULL pBufferSize is
// STATUS_INVALID_PARAMETER; a buffer smaller than NDK_ADAPTER_INFO is STATUS_BUFFER_TOO_SMALL
// with *pBufferSize set to the size required (the sizing call passes NULL and 0); a NULL pInfo
// with room claimed for it is STATUS_INVALID_PARAMETER; otherwise the info is copied and
// *pBufferSize is the size written.
NTSTATUS query_adapter_info(const NDK_ADAPTER_INFO &info, NDK_ADAPTER_INFO *pInfo,
                            ULONG *pBufferSize);

} // namespace ndk::kit
