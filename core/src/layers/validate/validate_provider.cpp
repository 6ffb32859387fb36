// The validation layer as a provider: an NDK_HARNESS_PROVIDER (ndk_validation_layer) whose
// CreateMiniport loads the provider named by validate_provider= and whose every entry then
// forwards to it, with a ValidatedMiniport (validate_session.hpp) as its miniport context.  Any harness
// can stack it over any provider through its options; ndk::validate::wrap does so.
#include "layers/validate/validate_session.hpp"

#include "ndk/call.hpp"
#include "ndk/registry.hpp"
#include "providers/kit/kit_provider_entry.hpp"

#include <cstring>
#include <sstream>

namespace ndk::validate {

namespace {

ValidatedMiniport &miniport_of(NDIS_HANDLE handle) { return *static_cast<ValidatedMiniport *>(handle); }

NDIS_STATUS open_adapter(NDIS_HANDLE handle, NDIS_OPEN_NDK_ADAPTER_PARAMETERS *parameters,
                         NDK_ADAPTER **adapter)
{
    return miniport_of(handle).open_adapter(parameters, adapter);
}

VOID close_adapter(NDIS_HANDLE handle, NDK_ADAPTER *adapter)
{
    miniport_of(handle).close_adapter(adapter);
}

// Options: validate_provider=NAME names the provider to wrap (a built-in name or a path, as
// ndk::Provider::load takes it); the other validate_* lines are the layer's own
// (ValidatedMiniport::configure); the rest go to the wrapped provider.
NDIS_STATUS create_miniport(const char *options, char *error, ULONG error_length,
                            NDIS_HANDLE *handle)
{
    const std::string kProvider = "validate_provider=";
    std::string own, theirs, inner_name;
    std::istringstream lines(options ? options : "");
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind(kProvider, 0) == 0)
            inner_name = line.substr(kProvider.size());
        else
            (line.rfind("validate_", 0) == 0 ? own : theirs) += line + "\n";
    }
    if (inner_name.empty()) {
        std::snprintf(error, error_length, "the validation layer needs validate_provider=NAME");
        return STATUS_INVALID_PARAMETER;
    }
    std::shared_ptr<Provider> inner;
    try {
        inner = Provider::load(inner_name);
    } catch (const Error &failure) {
        std::snprintf(error, error_length, "%s", failure.what());
        return failure.status();
    }
    const NDK_HARNESS_PROVIDER &entry = inner->entry();
    if (!theirs.empty() && entry.ControlMiniport == nullptr) {
        std::snprintf(error, error_length, "provider '%s' has no knobs", inner_name.c_str());
        return STATUS_NOT_SUPPORTED;
    }
    auto miniport = std::make_shared<ValidatedMiniport>(inner);
    if (NTSTATUS status = miniport->configure(own, error, error_length); status != STATUS_SUCCESS)
        return status;
    NDIS_HANDLE inner_handle = nullptr;
    NDIS_STATUS status = inner->create_miniport(theirs.empty() ? nullptr : theirs.c_str(), error,
                                                error_length, &inner_handle);
    if (status != NDIS_STATUS_SUCCESS)
        return status;
    miniport->attach(inner_handle, miniport);
    *handle = miniport.get();
    return NDIS_STATUS_SUCCESS;
}

VOID destroy_miniport(NDIS_HANDLE handle)
{
    auto *miniport = &miniport_of(handle);
    miniport->inner_entry().DestroyMiniport(miniport->inner_handle());
    miniport->release(); // the session may live on in the consumer's adapter
}

NTSTATUS control_miniport(NDIS_HANDLE handle, const char *key, const char *value, char *reply,
                          ULONG reply_length)
{
    return miniport_of(handle).control(key, value, reply, reply_length);
}

NDIS_STATUS oid_request(ValidatedMiniport &miniport, NDIS_OID oid, bool set, void *buffer,
                        ULONG length, ULONG *written, ULONG *needed)
{
    return kit::forward_oid_request(miniport.inner_entry(), miniport.inner_handle(), oid, set,
                                    buffer, length, written, needed);
}

NDIS_STATUS ndk_capabilities(ValidatedMiniport &miniport, NDIS_NDK_CAPABILITIES &capabilities)
{
    return kit::forward_ndk_capabilities(miniport.inner_entry(), miniport.inner_handle(),
                                         capabilities);
}

const NDK_HARNESS_PROVIDER kLayerEntry =
    kit::make_provider<ValidatedMiniport, oid_request, ndk_capabilities>(
        "validate", open_adapter, close_adapter, create_miniport, destroy_miniport,
        control_miniport);

} // namespace

std::shared_ptr<Provider> wrap(std::shared_ptr<Provider> inner)
{
    return std::make_shared<Provider>(&kLayerEntry, nullptr, inner->name(),
                                      "validate_provider=" + inner->load_name() + "\n" +
                                          inner->options(),
                                      "validate");
}

std::shared_ptr<Session> session_of(const Provider &provider, NDIS_HANDLE miniport)
{
    if (&provider.entry() != &kLayerEntry || miniport == nullptr)
        return nullptr;
    return miniport_of(miniport).shared();
}

} // namespace ndk::validate

extern "C" const NDK_HARNESS_PROVIDER *ndk_validation_layer(void)
{
    return &ndk::validate::kLayerEntry;
}
