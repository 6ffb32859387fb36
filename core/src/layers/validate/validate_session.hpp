// One validated miniport: the wrapped provider's miniport, the violations recorded on it, and
// (validate_layer.hpp) the stand-ins of every object opened on it.
#pragma once

#include "ndk/provider.h"
#include "ndk/validation.hpp"

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ndk::validate {

class LayerAdapter;

class ValidatedMiniport : public Session {
public:
    explicit ValidatedMiniport(std::shared_ptr<Provider> inner);
    ~ValidatedMiniport() override;

    // Options for the layer itself (validate_timeout_ms=N), one "key=value" per line.
    NTSTATUS configure(const std::string &options, char *error, ULONG error_length);
    // The wrapped provider's miniport, and the reference that keeps this alive until
    // DestroyMiniport.
    void attach(NDIS_HANDLE inner, std::shared_ptr<ValidatedMiniport> self);
    void release() { self_.reset(); }
    std::shared_ptr<ValidatedMiniport> shared() const { return self_; }

    const NDK_HARNESS_PROVIDER &inner_entry() const;
    NDIS_HANDLE inner_handle() const { return inner_handle_; }

    NDIS_STATUS open_adapter(NDIS_OPEN_NDK_ADAPTER_PARAMETERS *parameters,
                             NDK_ADAPTER **adapter);
    void close_adapter(NDK_ADAPTER *adapter);
    NTSTATUS control(const char *key, const char *value, char *reply, ULONG reply_length);

    // Session
    std::vector<Violation> violations() override;
    void clear() override;

    // Record a violation of `rule` (a Rule::id from validate_rules.cpp).
    void report(const char *rule, const std::string &object, const char *call,
                std::string message);
    std::chrono::milliseconds completion_timeout() const;

private:
    std::shared_ptr<Provider> inner_;
    NDIS_HANDLE inner_handle_ = nullptr;
    std::shared_ptr<ValidatedMiniport> self_;
    std::vector<std::unique_ptr<LayerAdapter>> adapters_; // kept until the miniport goes
    mutable std::mutex mu_;
    std::vector<Violation> log_;
    std::chrono::milliseconds timeout_{5000};
};

} // namespace ndk::validate
