// The soft provider's entry: miniports, knobs, and adapter open/close with the version
// negotiation of OPEN_NDK_ADAPTER_HANDLER (digest 1.1).
#include "soft_provider.h"

#include "soft_adapter.hpp"

#include <cstring>
#include <string>

namespace ndk::soft {
namespace {

void copy_text(const std::string &text, char *out, ULONG length)
{
    if (out == nullptr || length == 0)
        return;
    size_t n = std::min<size_t>(text.size(), length - 1);
    std::memcpy(out, text.data(), n);
    out[n] = '\0';
}

NDIS_STATUS open_adapter(NDIS_HANDLE context, PNDIS_OPEN_NDK_ADAPTER_PARAMETERS parameters,
                         NDK_ADAPTER **ppNdkAdapter)
{
    auto *miniport = static_cast<Miniport *>(context);
    if (miniport == nullptr || parameters == nullptr || ppNdkAdapter == nullptr)
        return STATUS_INVALID_PARAMETER;
    if (miniport->knobs.adapter_not_ready())
        return NDIS_STATUS_ADAPTER_NOT_READY; // NDK functionality is not enabled
    // An unknown major fails; a requested minor above ours fails; otherwise we use and
    // report our highest minor of that major (digest 1.1).
    NDK_VERSION requested = parameters->Version;
    auto highest = miniport->knobs.highest_minor(requested.Major);
    if (!highest || requested.Minor > *highest)
        return NDIS_STATUS_BAD_VERSION;
    *ppNdkAdapter = new SoftAdapter(*miniport, NDK_VERSION{requested.Major, *highest});
    return NDIS_STATUS_SUCCESS;
}

VOID close_adapter(NDIS_HANDLE, NDK_ADAPTER *adapter)
{
    // Blocking: returns when every callback on every descendant has returned (digest 3.1).
    delete SoftAdapter::from(adapter);
}

NDIS_STATUS create_miniport(const char *options, char *error, ULONG error_length,
                            NDIS_HANDLE *out)
{
    if (out == nullptr)
        return STATUS_INVALID_PARAMETER;
    auto miniport = std::make_unique<Miniport>();
    std::string why;
    NTSTATUS status = miniport->knobs.apply(options ? options : "", why);
    if (status != STATUS_SUCCESS) {
        copy_text(why, error, error_length);
        return status;
    }
    status = Fabric::instance().attach(miniport.get(), miniport->knobs.addresses(),
                                       miniport->addresses);
    if (status != STATUS_SUCCESS) {
        copy_text(status == STATUS_ADDRESS_ALREADY_EXISTS
                      ? "address already owned by another soft adapter: " +
                            miniport->knobs.addresses()
                      : "not an IPv4 or IPv6 address: " + miniport->knobs.addresses(),
                  error, error_length);
        return status;
    }
    *out = miniport.release();
    return STATUS_SUCCESS;
}

VOID destroy_miniport(NDIS_HANDLE context)
{
    auto *miniport = static_cast<Miniport *>(context);
    Fabric::instance().detach(miniport);
    delete miniport;
}

NTSTATUS control_miniport(NDIS_HANDLE context, const char *key, const char *value, char *reply,
                          ULONG reply_length)
{
    auto *miniport = static_cast<Miniport *>(context);
    if (miniport == nullptr || key == nullptr)
        return STATUS_INVALID_PARAMETER;
    std::string text;
    if (value == nullptr) {
        if (std::strcmp(key, "address") == 0) {
            for (const auto &ip : miniport->addresses)
                text += (text.empty() ? "" : ",") + ip.to_string();
            copy_text(text, reply, reply_length);
            return STATUS_SUCCESS;
        }
        NTSTATUS status = miniport->knobs.get(key, text);
        copy_text(text, reply, reply_length);
        return status;
    }
    if (std::strcmp(key, "address") == 0) {
        copy_text("the address is set when the adapter is opened", reply, reply_length);
        return STATUS_INVALID_PARAMETER;
    }
    NTSTATUS status = miniport->knobs.set(key, value, text);
    copy_text(text, reply, reply_length);
    return status;
}

const NDK_HARNESS_PROVIDER kSoftProvider = {
    sizeof(NDK_HARNESS_PROVIDER),
    NDK_HARNESS_PROVIDER_VERSION,
    "soft",
    {{NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS, NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1,
      sizeof(NDIS_NDK_PROVIDER_CHARACTERISTICS)},
     0,
     open_adapter,
     close_adapter},
    create_miniport,
    destroy_miniport,
    control_miniport,
};

} // namespace
} // namespace ndk::soft

extern "C" const NDK_HARNESS_PROVIDER *ndk_soft_provider(void) { return &ndk::soft::kSoftProvider; }
