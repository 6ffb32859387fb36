// The verbs provider's entry (core/include/ndk/provider.h): a miniport is one RDMA device,
// chosen with the options `device=NAME` or `address=IP` (default: the first device that has
// an IP address); knobs are read-only facts (`device`, `address`, `completes_inline`), since a
// real device has no behaviour to inject.
#include "verbs_provider.h"

#include "verbs_adapter.hpp"
#include "verbs_oid.hpp"
#include "providers/kit/kit_provider_entry.hpp"
#include "providers/kit/kit_reply_text.hpp"

#include <cstring>
#include <memory>
#include <string>

namespace ndk::verbs {
namespace {

// NDK 1.2 and 2.1, negotiated per major as the soft provider does (docs/semantics.md,
// VERSIONS): everything both versions add is implemented here.  The entry has checked the
// arguments (kit::open_adapter_entry).
NDIS_STATUS open_adapter(Miniport &miniport, NDK_VERSION requested, NDK_ADAPTER **ppNdkAdapter)
{
    {
        std::lock_guard lock(miniport.mu);
        if (!miniport.enabled)
            return NDIS_STATUS_ADAPTER_NOT_READY;
    }
    NDK_VERSION version;
    if (NDIS_STATUS status = kit::negotiate_version(
            requested, kit::implemented_minor(requested.Major), version);
        status != NDIS_STATUS_SUCCESS)
        return status;
    auto adapter = std::make_unique<VerbsAdapter>(miniport, version);
    if (!adapter->ok())
        return NDIS_STATUS_RESOURCES;
    *ppNdkAdapter = adapter.release();
    return NDIS_STATUS_SUCCESS;
}

VOID close_adapter(NDIS_HANDLE, NDK_ADAPTER *adapter)
{
    delete VerbsAdapter::from(adapter); // blocking (digest 3.1)
}

NDIS_STATUS create_miniport(const char *options, char *error, ULONG error_length,
                            NDIS_HANDLE *out)
{
    if (out == nullptr)
        return STATUS_INVALID_PARAMETER;
    std::string device, address;
    for (const auto &[key, value] : kit::parse_options(options)) {
        if (key == "device")
            device = value;
        else if (key == "address")
            address = value;
        else {
            copy_reply_text("the verbs provider has no knob '" + key +
                          "' (only device=NAME and address=IP select the RDMA device)",
                      error, error_length);
            return STATUS_NOT_SUPPORTED;
        }
    }
    auto miniport = std::make_unique<Miniport>();
    std::string why;
    NTSTATUS status = select_device(device, address, miniport->device, why);
    if (status != STATUS_SUCCESS) {
        copy_reply_text(why, error, error_length);
        return status;
    }
    *out = miniport.release();
    return STATUS_SUCCESS;
}

VOID destroy_miniport(NDIS_HANDLE context) { delete static_cast<Miniport *>(context); }

NTSTATUS control_miniport(Miniport &miniport, const char *key, const char *value, char *reply,
                          ULONG reply_length)
{
    std::string text;
    if (std::strcmp(key, "address") == 0)
        text = miniport.device.address_text();
    else if (std::strcmp(key, "device") == 0)
        text = miniport.device.name;
    else if (std::strcmp(key, "completes_inline") == 0)
        // Every create returns its object and every close without open successors finishes
        // before it returns (verbs_object.hpp).  Not "request": a refused Connect and a
        // Disconnect wait for rdma_cm's event (verbs_connection.cpp), where the fault layer's
        // request_mode=inline means they complete inline.
        text = "create close";
    else {
        copy_reply_text(std::string("the verbs provider has no knob '") + key + "'", reply, reply_length);
        return STATUS_NOT_SUPPORTED;
    }
    if (value != nullptr) {
        copy_reply_text(std::string("knob ") + key +
                            (std::strcmp(key, "completes_inline") == 0
                                 ? " is read only"
                                 : " is chosen when the adapter is opened"),
                        reply, reply_length);
        return STATUS_INVALID_PARAMETER;
    }
    copy_reply_text(text, reply, reply_length);
    return STATUS_SUCCESS;
}

NDIS_STATUS ndk_capabilities(Miniport &miniport, NDIS_NDK_CAPABILITIES &capabilities)
{
    miniport.device.ndk_capabilities(capabilities);
    return NDIS_STATUS_SUCCESS;
}

constexpr NDK_HARNESS_PROVIDER kVerbsProvider =
    kit::make_provider<Miniport, oid_request, ndk_capabilities>(
        "verbs", kit::open_adapter_entry<Miniport, open_adapter>, close_adapter,
        create_miniport, destroy_miniport, kit::control_entry<Miniport, control_miniport>);

} // namespace
} // namespace ndk::verbs

extern "C" const NDK_HARNESS_PROVIDER *ndk_verbs_provider(void) { return &ndk::verbs::kVerbsProvider; }
