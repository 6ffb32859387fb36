// Knobs: set and read through the knob table (soft_knob_table.cpp), and what the provider
// asks of them on its paths.
#include "soft_knobs.hpp"

#include <algorithm>
#include <sstream>

namespace ndk::soft {

Knobs::Knobs()
{
    v_.info = default_adapter_info();
    publish();
}

NTSTATUS Knobs::apply(const std::string &options, std::string &error)
{
    std::string normalized = options;
    std::replace(normalized.begin(), normalized.end(), ';', '\n');
    std::istringstream in(normalized);
    for (std::string line; std::getline(in, line);) {
        if (line.find_first_not_of(" \t") == std::string::npos)
            continue;
        auto eq = line.find('=');
        if (eq == std::string::npos) {
            error = "knob '" + line + "' has no '='";
            return STATUS_INVALID_PARAMETER;
        }
        NTSTATUS status = set(line.substr(0, eq), line.substr(eq + 1), error);
        if (status != STATUS_SUCCESS) {
            if (status == STATUS_NOT_SUPPORTED)
                error = "unknown knob '" + line.substr(0, eq) + "'";
            return status;
        }
    }
    return STATUS_SUCCESS;
}

NTSTATUS Knobs::set(const std::string &key, const std::string &value, std::string &error)
{
    for (const KnobSpec &spec : knob_table()) {
        if (spec.set == nullptr || !covers(spec, key))
            continue;
        std::lock_guard lock(mu_);
        std::string why = spec.set(v_, key, value);
        publish(); // a refused value may have set part of a multi-field knob
        if (why.empty())
            return STATUS_SUCCESS;
        error = "knob " + key + "=" + value + ": " + why;
        return STATUS_INVALID_PARAMETER;
    }
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS Knobs::get(const std::string &key, std::string &value) const
{
    for (const KnobSpec &spec : knob_table()) {
        if (spec.get == nullptr || !covers(spec, key))
            continue;
        std::lock_guard lock(mu_);
        value = spec.get(v_, key);
        return STATUS_SUCCESS;
    }
    return STATUS_NOT_SUPPORTED;
}

NDK_ADAPTER_INFO Knobs::adapter_info(NDK_VERSION reported) const
{
    std::lock_guard lock(mu_);
    NDK_ADAPTER_INFO info = v_.info;
    info.Version = reported;
    return info;
}

ObjectCaps Knobs::caps() const
{
    std::lock_guard lock(mu_);
    return v_.caps;
}

std::optional<USHORT> Knobs::highest_minor(USHORT major) const
{
    std::lock_guard lock(mu_);
    if (v_.provider_version)
        return major == v_.provider_version->Major ? std::optional<USHORT>(v_.provider_version->Minor)
                                                 : std::nullopt;
    // NDKPI 1.2 (WS2012 R2) and 2.1 (WS2022): the surfaces this provider implements.
    if (major == 1)
        return USHORT{2};
    if (major == 2)
        return USHORT{1};
    return std::nullopt;
}

bool Knobs::adapter_not_ready() const
{
    std::lock_guard lock(mu_);
    return v_.adapter_not_ready;
}

std::pair<uint16_t, uint16_t> Knobs::ephemeral_ports() const
{
    std::lock_guard lock(mu_);
    return v_.ephemeral;
}

void Knobs::publish()
{
    constexpr auto relaxed = std::memory_order_relaxed;
    data_path_.max_transfer_length.store(v_.info.MaxTransferLength, relaxed);
    data_path_.max_read_request_sge.store(v_.info.MaxReadRequestSge, relaxed);
    data_path_.max_window_size.store(v_.info.MaxWindowSize, relaxed);
    data_path_.adapter_flags.store(v_.info.AdapterFlags, relaxed);
    data_path_.manual_progress.store(v_.manual_progress, relaxed);
    data_path_.rnr_timeout_ms.store(v_.rnr_timeout_ms, relaxed);
}

bool Knobs::manual_progress() const
{
    return data_path_.manual_progress.load(std::memory_order_relaxed);
}

std::chrono::milliseconds Knobs::rnr_timeout() const
{
    return std::chrono::milliseconds(data_path_.rnr_timeout_ms.load(std::memory_order_relaxed));
}

std::chrono::milliseconds Knobs::connect_timeout() const
{
    std::lock_guard lock(mu_);
    return std::chrono::milliseconds(v_.connect_timeout_ms);
}

std::chrono::milliseconds Knobs::mpa_request_timeout() const
{
    std::lock_guard lock(mu_);
    return std::chrono::milliseconds(v_.mpa_request_timeout_ms);
}

std::string Knobs::addresses() const
{
    std::lock_guard lock(mu_);
    return v_.addresses;
}

bool Knobs::shm_transport() const
{
    std::lock_guard lock(mu_);
    return v_.transport == TransportKind::shm;
}

bool Knobs::tcp_transport() const
{
    std::lock_guard lock(mu_);
    return v_.transport == TransportKind::tcp;
}

bool Knobs::inproc_transport() const
{
    std::lock_guard lock(mu_);
    return v_.transport == TransportKind::inproc;
}

bool Knobs::mpa_crc() const
{
    std::lock_guard lock(mu_);
    return v_.mpa_crc;
}

std::string Knobs::shm_fabric() const
{
    std::lock_guard lock(mu_);
    return v_.shm_fabric;
}

} // namespace ndk::soft
