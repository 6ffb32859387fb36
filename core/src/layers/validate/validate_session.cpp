#include "layers/validate/validate_session.hpp"

#include "layers/validate/validate_layer.hpp"
#include "ndk/registry.hpp"

#include <cstdio>
#include <sstream>

namespace ndk::validate {

ValidatedMiniport::ValidatedMiniport(std::shared_ptr<Provider> inner) : inner_(std::move(inner)) {}

ValidatedMiniport::~ValidatedMiniport() = default;

const NDK_HARNESS_PROVIDER &ValidatedMiniport::inner_entry() const { return inner_->entry(); }

NTSTATUS ValidatedMiniport::configure(const std::string &options, char *error, ULONG error_length)
{
    std::istringstream lines(options);
    for (std::string line; std::getline(lines, line);) {
        auto eq = line.find('=');
        std::string key = line.substr(0, eq);
        std::string value = eq == std::string::npos ? "" : line.substr(eq + 1);
        char reply[256] = {};
        NTSTATUS status = control(key.c_str(), value.c_str(), reply, sizeof reply);
        if (status != STATUS_SUCCESS) {
            std::snprintf(error, error_length, "%s", reply);
            return status;
        }
    }
    return STATUS_SUCCESS;
}

void ValidatedMiniport::attach(NDIS_HANDLE inner, std::shared_ptr<ValidatedMiniport> self)
{
    inner_handle_ = inner;
    self_ = std::move(self);
}

NTSTATUS ValidatedMiniport::control(const char *key, const char *value, char *reply,
                                    ULONG reply_length)
{
    std::string name = key ? key : "";
    if (name == "validate_timeout_ms") {
        std::lock_guard lock(mu_);
        if (value == nullptr) {
            std::snprintf(reply, reply_length, "%lld", static_cast<long long>(timeout_.count()));
            return STATUS_SUCCESS;
        }
        char *end = nullptr;
        long long ms = std::strtoll(value, &end, 10);
        if (end == value || *end != '\0' || ms < 0) {
            std::snprintf(reply, reply_length, "validate_timeout_ms: '%s' is not a count of "
                                               "milliseconds", value);
            return STATUS_INVALID_PARAMETER;
        }
        timeout_ = std::chrono::milliseconds(ms);
        return STATUS_SUCCESS;
    }
    if (name.rfind("validate_", 0) == 0) {
        std::snprintf(reply, reply_length, "no validation option '%s'", name.c_str());
        return STATUS_NOT_SUPPORTED;
    }
    if (inner_entry().ControlMiniport == nullptr)
        return STATUS_NOT_SUPPORTED;
    return inner_entry().ControlMiniport(inner_handle_, key, value, reply, reply_length);
}

std::chrono::milliseconds ValidatedMiniport::completion_timeout() const
{
    std::lock_guard lock(mu_);
    return timeout_;
}

void ValidatedMiniport::report(const char *rule_id, const std::string &object, const char *call,
                               std::string message)
{
    const Rule *rule = find_rule(rule_id);
    Violation v;
    v.rule = rule_id;
    v.object = object;
    v.call = call;
    v.message = std::move(message);
    if (rule != nullptr) {
        v.section = rule->section;
        v.side = rule->side;
        v.severity = rule->severity;
    }
    std::lock_guard lock(mu_);
    log_.push_back(std::move(v));
}

std::vector<Violation> ValidatedMiniport::violations()
{
    std::vector<LayerAdapter *> adapters;
    {
        std::lock_guard lock(mu_);
        for (auto &adapter : adapters_)
            adapters.push_back(adapter.get());
    }
    for (LayerAdapter *adapter : adapters)
        adapter->judge_overdue();
    std::lock_guard lock(mu_);
    return log_;
}

void ValidatedMiniport::clear()
{
    std::lock_guard lock(mu_);
    log_.clear();
}

NDIS_STATUS ValidatedMiniport::open_adapter(NDIS_OPEN_NDK_ADAPTER_PARAMETERS *parameters,
                                            NDK_ADAPTER **adapter)
{
    NDK_ADAPTER *real = nullptr;
    NDIS_STATUS status =
        inner_entry().Characteristics.OpenNDKAdapterHandler(inner_handle_, parameters, &real);
    if (status != NDIS_STATUS_SUCCESS)
        return status;
    auto layer = std::make_unique<LayerAdapter>(*this, real);
    *adapter = layer->face();
    std::lock_guard lock(mu_);
    adapters_.push_back(std::move(layer));
    return status;
}

void ValidatedMiniport::close_adapter(NDK_ADAPTER *adapter)
{
    LayerAdapter *found = nullptr;
    {
        std::lock_guard lock(mu_);
        for (auto &a : adapters_)
            if (a->face() == adapter)
                found = a.get();
    }
    if (found == nullptr) // not an adapter of this miniport: nothing of ours to close
        return;
    LayerAdapter &layer = *found;
    layer.closing();
    inner_entry().Characteristics.CloseNDKAdapterHandler(inner_handle_, layer.real());
    layer.closed();
}

} // namespace ndk::validate
