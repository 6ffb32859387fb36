// The validation layer as a provider: an NDK_HARNESS_PROVIDER whose every entry forwards to the
// wrapped provider's, with a ValidatedMiniport (session.hpp) as its miniport context.
#include "layers/validate/session.hpp"

#include "ndk/registry.hpp"

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

NDIS_STATUS create_miniport_unused(const char *, char *error, ULONG length, NDIS_HANDLE *)
{
    // Never called: LayerProvider::create_miniport knows the wrapped provider.
    std::snprintf(error, length, "the validation layer is created through ndk::validate::wrap");
    return STATUS_NOT_SUPPORTED;
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

NDIS_STATUS oid_request(NDIS_HANDLE handle, NDIS_OID oid, BOOLEAN set, PVOID buffer,
                        ULONG length, ULONG *written, ULONG *needed)
{
    ValidatedMiniport &miniport = miniport_of(handle);
    if (miniport.inner_entry().OidRequest == nullptr)
        return NDIS_STATUS_INVALID_OID;
    return miniport.inner_entry().OidRequest(miniport.inner_handle(), oid, set, buffer, length,
                                             written, needed);
}

const NDK_HARNESS_PROVIDER kLayerEntry = {
    sizeof(NDK_HARNESS_PROVIDER),
    NDK_HARNESS_PROVIDER_VERSION,
    "validate",
    {{}, 0, open_adapter, close_adapter},
    create_miniport_unused,
    destroy_miniport,
    control_miniport,
    oid_request,
};

class LayerProvider : public Provider {
public:
    explicit LayerProvider(std::shared_ptr<Provider> inner)
        : Provider(&kLayerEntry, nullptr, inner->name()), inner_(std::move(inner))
    {
    }

    NDIS_STATUS create_miniport(const char *options, char *error, ULONG error_length,
                                NDIS_HANDLE *handle) const override
    {
        // The layer's own options (validate_*) are taken out; the rest is the provider's.
        std::string own, theirs;
        std::istringstream lines(options ? options : "");
        for (std::string line; std::getline(lines, line);)
            (line.rfind("validate_", 0) == 0 ? own : theirs) += line + "\n";
        const NDK_HARNESS_PROVIDER &entry = inner_->entry();
        if (!theirs.empty() && entry.ControlMiniport == nullptr) {
            std::snprintf(error, error_length, "provider '%s' has no knobs", name().c_str());
            return STATUS_NOT_SUPPORTED;
        }
        auto miniport = std::make_shared<ValidatedMiniport>(inner_);
        if (NTSTATUS status = miniport->configure(own, error, error_length);
            status != STATUS_SUCCESS)
            return status;
        NDIS_HANDLE inner_handle = nullptr;
        NDIS_STATUS status = inner_->create_miniport(theirs.empty() ? nullptr : theirs.c_str(),
                                                     error, error_length, &inner_handle);
        if (status != NDIS_STATUS_SUCCESS)
            return status;
        miniport->attach(inner_handle, miniport);
        *handle = miniport.get();
        return NDIS_STATUS_SUCCESS;
    }

private:
    std::shared_ptr<Provider> inner_;
};

} // namespace

std::shared_ptr<Provider> wrap(std::shared_ptr<Provider> inner)
{
    return std::make_shared<LayerProvider>(std::move(inner));
}

std::shared_ptr<Session> session_of(const Provider &provider, NDIS_HANDLE miniport)
{
    if (&provider.entry() != &kLayerEntry || miniport == nullptr)
        return nullptr;
    return miniport_of(miniport).shared();
}

} // namespace ndk::validate
