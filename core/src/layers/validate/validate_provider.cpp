// The validation layer as a provider stacked over the one it is handed (ndk::validate::wrap):
// its miniport is a ValidatedMiniport (validate_session.hpp) over one of that provider's, and
// its every entry forwards to that provider's.
#include "layers/validate/validate_session.hpp"

#include "ndk/status.hpp"
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

// Options: the validate_* lines are the layer's own (ValidatedMiniport::configure); the rest go
// to the provider beneath.
NDIS_STATUS create_miniport(const std::shared_ptr<Provider> &inner, const char *options,
                            char *error, ULONG error_length, NDIS_HANDLE *handle)
{
    std::string own, theirs;
    std::istringstream lines(options ? options : "");
    for (std::string line; std::getline(lines, line);)
        (line.rfind("validate_", 0) == 0 ? own : theirs) += line + "\n";
    const NDK_HARNESS_PROVIDER &entry = inner->entry();
    if (!theirs.empty() && entry.ControlMiniport == nullptr) {
        std::snprintf(error, error_length, "provider '%s' has no knobs", inner->name().c_str());
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

// The layer's CreateMiniport is wrap()'s, over the provider it is handed; the entry's own has
// no provider beneath it.
NDIS_STATUS create_unstacked(const char *, char *error, ULONG error_length, NDIS_HANDLE *)
{
    std::snprintf(error, error_length,
                  "the validation layer is stacked over a provider with ndk::validate::wrap");
    return STATUS_INVALID_PARAMETER;
}

const NDK_HARNESS_PROVIDER kLayerEntry =
    kit::make_provider<ValidatedMiniport, oid_request, ndk_capabilities>(
        "validate", open_adapter, close_adapter, create_unstacked, destroy_miniport,
        control_miniport);

} // namespace

std::shared_ptr<Provider> wrap(std::shared_ptr<Provider> inner)
{
    return std::make_shared<Provider>(&kLayerEntry, std::move(inner), create_miniport);
}

std::shared_ptr<Session> session_of(const Provider &provider, NDIS_HANDLE miniport)
{
    if (&provider.entry() != &kLayerEntry || miniport == nullptr)
        return nullptr;
    return miniport_of(miniport).shared();
}

} // namespace ndk::validate
