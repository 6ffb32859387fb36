// An NDK adapter opened through a provider's harness entry as NDIS would open it: the provider
// behind the fault layer, which acts the test knobs (docs/knobs.md), optionally behind the
// validation layer too, as ndk::Adapter::open stacks them; CreateMiniport, OpenNDKAdapterHandler; the blocking
// CloseNDKAdapterHandler and DestroyMiniport at the end.  Only the raw C ABI of
// core/include/ndk/ndkpi.h, never the C++ consumer API, so what goes through it is what a
// kernel consumer of the provider would do.  The GoogleTest suites (tests/unit/support.hpp)
// and the benchmarks (bench/raw_support.hpp) each add their own completion recorders on top.
#pragma once

#include "ndk/call.hpp"
#include "ndk/fault.hpp"
#include "ndk/ndkpi.h"
#include "ndk/provider.h"
#include "ndk/registry.hpp"
#include "ndk/status.hpp"
#include "ndk/validation.hpp"

#include <memory>
#include <string>

namespace ndk {

class RawAdapter {
public:
    // Throws ndk::Error with the provider's status when the miniport or the adapter cannot be
    // opened.  `validate`: the provider behind the validation layer.
    explicit RawAdapter(const std::string &options = "", NDK_VERSION version = {2, 0},
                        const std::string &provider = "soft", bool validate = false)
        : provider_(validate ? validate::wrap(fault::wrap(Provider::load(provider)))
                             : fault::wrap(Provider::load(provider)))
    {
        char error[512] = {};
        NDIS_STATUS status = provider_->create_miniport(
            options.empty() ? nullptr : options.c_str(), error, sizeof error, &miniport_);
        if (status != STATUS_SUCCESS)
            throw Error(status, std::string("CreateMiniport: ") + error);
        NDIS_OPEN_NDK_ADAPTER_PARAMETERS parameters{};
        parameters.Version = version;
        status = entry().Characteristics.OpenNDKAdapterHandler(miniport_, &parameters, &adapter_);
        if (status != NDIS_STATUS_SUCCESS) {
            entry().DestroyMiniport(miniport_);
            miniport_ = nullptr;
            throw Error(status, "OpenNDKAdapterHandler");
        }
    }
    virtual ~RawAdapter() { close_adapter(); }
    RawAdapter(const RawAdapter &) = delete;
    RawAdapter &operator=(const RawAdapter &) = delete;

    const NDK_HARNESS_PROVIDER &entry() const { return provider_->entry(); }
    const Provider &provider() const { return *provider_; }
    NDIS_HANDLE miniport() const { return miniport_; }
    NDK_ADAPTER *get() const { return adapter_; }
    const NDK_ADAPTER_DISPATCH &d() const { return *adapter_->Dispatch; }
    bool is_open() const { return adapter_ != nullptr; }

    // ControlMiniport: set a knob (`value` non-NULL) or read it; the provider's reply text.
    NTSTATUS control(const std::string &key, const char *value, std::string &reply) const
    {
        char text[4096] = {};
        NTSTATUS status =
            entry().ControlMiniport(miniport_, key.c_str(), value, text, sizeof text);
        reply = text;
        return status;
    }

protected:
    // CLOSE_NDK_ADAPTER_HANDLER (it blocks until no callback can follow), then the miniport.
    // Idempotent.
    void close_adapter()
    {
        if (adapter_ != nullptr) {
            entry().Characteristics.CloseNDKAdapterHandler(miniport_, adapter_);
            adapter_ = nullptr;
        }
        if (miniport_ != nullptr) {
            entry().DestroyMiniport(miniport_);
            miniport_ = nullptr;
        }
    }

    NDK_ADAPTER *adapter_ = nullptr;

private:
    std::shared_ptr<Provider> provider_;
    NDIS_HANDLE miniport_ = nullptr;
};

} // namespace ndk
