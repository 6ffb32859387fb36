#include "soft_knobs.hpp"

#include "ndk/status.hpp"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstring>
#include <sstream>
#include <vector>

namespace ndk::soft {
namespace {

// NDK_ADAPTER_INFO fields a knob may override, by their snake_case names.
struct InfoField {
    const char *name;
    size_t offset;
    size_t size;
};
#define NDK_INFO_FIELD(knob, member) \
    InfoField { knob, offsetof(NDK_ADAPTER_INFO, member), sizeof(NDK_ADAPTER_INFO::member) }
const InfoField kInfoFields[] = {
    NDK_INFO_FIELD("vendor_id", VendorId),
    NDK_INFO_FIELD("device_id", DeviceId),
    NDK_INFO_FIELD("max_registration_size", MaxRegistrationSize),
    NDK_INFO_FIELD("max_window_size", MaxWindowSize),
    NDK_INFO_FIELD("frmr_page_count", FRMRPageCount),
    NDK_INFO_FIELD("max_initiator_request_sge", MaxInitiatorRequestSge),
    NDK_INFO_FIELD("max_receive_request_sge", MaxReceiveRequestSge),
    NDK_INFO_FIELD("max_read_request_sge", MaxReadRequestSge),
    NDK_INFO_FIELD("max_transfer_length", MaxTransferLength),
    NDK_INFO_FIELD("max_inline_data_size", MaxInlineDataSize),
    NDK_INFO_FIELD("max_inbound_read_limit", MaxInboundReadLimit),
    NDK_INFO_FIELD("max_outbound_read_limit", MaxOutboundReadLimit),
    NDK_INFO_FIELD("max_receive_queue_depth", MaxReceiveQueueDepth),
    NDK_INFO_FIELD("max_initiator_queue_depth", MaxInitiatorQueueDepth),
    NDK_INFO_FIELD("max_srq_depth", MaxSrqDepth),
    NDK_INFO_FIELD("max_cq_depth", MaxCqDepth),
    NDK_INFO_FIELD("large_request_threshold", LargeRequestThreshold),
    NDK_INFO_FIELD("max_caller_data", MaxCallerData),
    NDK_INFO_FIELD("max_callee_data", MaxCalleeData),
    NDK_INFO_FIELD("adapter_flags", AdapterFlags),
    NDK_INFO_FIELD("rdma_technology", RdmaTechnology),
};
#undef NDK_INFO_FIELD

const char *const kFallible[] = {
    "NdkQueryExtension", "NdkQueryAdapterInfo", "NdkCreateCq", "NdkCreatePd",
    "NdkCreateSharedEndpoint", "NdkCreateConnector", "NdkCreateListener", "NdkBuildLAM",
    "NdkCreateMr", "NdkCreateMw", "NdkCreateSrq", "NdkCreateQp", "NdkCreateQpWithSrq",
    "NdkResizeCq", "NdkControlCqInterruptModeration", "NdkRegisterMr", "NdkDeregisterMr",
    "NdkInitializeFastRegisterMr", "NdkModifySrq", "NdkListen", "NdkConnect",
    "NdkConnectWithSharedEndpoint", "NdkCompleteConnect", "NdkCompleteConnectEx", "NdkAccept",
    "NdkAcceptEx", "NdkReject", "NdkGetConnectionData", "NdkDisconnect", "NdkSend",
    "NdkSendAndInvalidate", "NdkReceive", "NdkSrqReceive", "NdkRead", "NdkWrite", "NdkBind",
    "NdkFastRegister", "NdkInvalidate",
};

// Object caps (NDIS_NDK_CAPABILITIES counts) a knob may set, by name.
struct Cap {
    const char *name;
    ULONG ObjectCaps::*member;
};
const Cap kCaps[] = {
    {"max_qp_count", &ObjectCaps::max_qp}, {"max_cq_count", &ObjectCaps::max_cq},
    {"max_mr_count", &ObjectCaps::max_mr}, {"max_pd_count", &ObjectCaps::max_pd},
    {"max_mw_count", &ObjectCaps::max_mw}, {"max_srq_count", &ObjectCaps::max_srq},
};

// Functions whose failure can only be reported inline (no completion callback exists).
bool is_inline_only(std::string_view name)
{
    return name == "NdkQueryExtension" || name == "NdkQueryAdapterInfo" ||
           name == "NdkControlCqInterruptModeration" || name == "NdkReject" ||
           name == "NdkGetConnectionData" || name == "NdkSend" || name == "NdkSendAndInvalidate" ||
           name == "NdkReceive" || name == "NdkSrqReceive" || name == "NdkRead" ||
           name == "NdkWrite" || name == "NdkBind" || name == "NdkFastRegister" ||
           name == "NdkInvalidate";
}

std::optional<uint64_t> parse_number(std::string_view text)
{
    int base = 10;
    if (text.starts_with("0x") || text.starts_with("0X")) {
        text.remove_prefix(2);
        base = 16;
    }
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
        return std::nullopt;
    return value;
}

std::optional<CompletionMode> parse_mode(const std::string &text)
{
    if (text == "inline")
        return CompletionMode::Inline;
    if (text == "pending")
        return CompletionMode::Pending;
    if (text == "random")
        return CompletionMode::Random;
    return std::nullopt;
}

const char *mode_name(CompletionMode mode)
{
    switch (mode) {
    case CompletionMode::Inline: return "inline";
    case CompletionMode::Pending: return "pending";
    case CompletionMode::Random: return "random";
    }
    return "?";
}

std::vector<std::string> split_words(const std::string &text)
{
    std::istringstream in(text);
    std::vector<std::string> words;
    for (std::string word; in >> word;)
        words.push_back(word);
    return words;
}

NDK_ADAPTER_INFO default_info()
{
    NDK_ADAPTER_INFO info{};
    info.VendorId = 0;
    info.DeviceId = 0x50F7; // "soft"
    info.MaxRegistrationSize = size_t{1} << 32;
    info.MaxWindowSize = size_t{1} << 32;
    info.FRMRPageCount = 256;
    info.MaxInitiatorRequestSge = 16;
    info.MaxReceiveRequestSge = 16;
    info.MaxReadRequestSge = 16;
    info.MaxTransferLength = 1u << 30;
    info.MaxInlineDataSize = 256;
    info.MaxInboundReadLimit = 16;
    info.MaxOutboundReadLimit = 16;
    info.MaxReceiveQueueDepth = 16384;
    info.MaxInitiatorQueueDepth = 16384;
    info.MaxSrqDepth = 16384;
    info.MaxCqDepth = 1u << 22;
    info.LargeRequestThreshold = 4096;
    info.MaxCallerData = 56;
    info.MaxCalleeData = 148;
    info.AdapterFlags = NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED |
                        NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED |
                        NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED |
                        NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED |
                        NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED |
                        NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED;
    info.RdmaTechnology = NdkiWarp;
    return info;
}

} // namespace

bool is_fallible_function(const std::string &name)
{
    return std::any_of(std::begin(kFallible), std::end(kFallible),
                       [&](const char *f) { return name == f; });
}

Knobs::Knobs() : rng_(0), info_(default_info()) {}

std::vector<std::string> Knobs::names()
{
    std::vector<std::string> names = {"create_mode", "request_mode", "close_mode", "seed",
                                      "fail", "clear_failures"};
    for (const auto &field : kInfoFields)
        names.push_back(field.name);
    for (const auto &cap : kCaps)
        names.push_back(cap.name);
    for (const char *name : {"provider_version", "adapter_not_ready", "address", "progress",
                             "rnr_timeout_ms", "connect_timeout_ms", "ephemeral_ports",
                             "misbehave"})
        names.push_back(name);
    return names;
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
    std::lock_guard lock(mu_);
    auto bad = [&](const std::string &why) {
        error = "knob " + key + "=" + value + ": " + why;
        return STATUS_INVALID_PARAMETER;
    };
    if (key == "create_mode" || key == "request_mode" || key == "close_mode") {
        auto mode = parse_mode(value);
        if (!mode)
            return bad("expected inline, pending or random");
        (key == "create_mode" ? create_mode_ : key == "request_mode" ? request_mode_ : close_mode_) =
            *mode;
        return STATUS_SUCCESS;
    }
    if (key == "seed") {
        auto n = parse_number(value);
        if (!n)
            return bad("expected an integer");
        seed_ = *n;
        rng_.seed(seed_);
        return STATUS_SUCCESS;
    }
    if (key == "fail") {
        // "<NdkFunction> <status> [inline|async] [count]"; count -1 means every call.
        auto words = split_words(value);
        if (words.size() < 2 || words.size() > 4)
            return bad("expected '<NdkFunction> <status> [inline|async] [count]'");
        if (!is_fallible_function(words[0]))
            return bad("'" + words[0] + "' is not an NDK function that returns a status");
        auto status = parse_status(words[1]);
        if (!status)
            return bad("unknown status '" + words[1] + "'");
        if (*status == STATUS_SUCCESS || *status == STATUS_PENDING)
            return bad("a failure status must not be SUCCESS or PENDING");
        bool async = words.size() > 2 && words[2] == "async";
        if (words.size() > 2 && words[2] != "async" && words[2] != "inline")
            return bad("mode must be inline or async");
        if (async && is_inline_only(words[0]))
            return bad(words[0] + " completes inline only, it cannot fail asynchronously");
        long count = 1;
        if (words.size() > 3) {
            char *end = nullptr;
            count = std::strtol(words[3].c_str(), &end, 10);
            if (*end != '\0' || count == 0 || count < -1)
                return bad("count must be a positive integer or -1 (every call)");
        }
        failures_[words[0]] = ArmedFailure{{*status, async}, static_cast<int>(count)};
        return STATUS_SUCCESS;
    }
    if (key == "clear_failures") {
        failures_.clear();
        return STATUS_SUCCESS;
    }
    if (key == "provider_version") {
        unsigned major = 0, minor = 0;
        char dot = 0;
        std::istringstream in(value);
        if (!(in >> major >> dot >> minor) || dot != '.' || major == 0 || major > 0xFFFF ||
            minor > 0xFFFF || !(in >> std::ws).eof())
            return bad("expected MAJOR.MINOR");
        provider_version_ = NDK_VERSION{static_cast<USHORT>(major), static_cast<USHORT>(minor)};
        return STATUS_SUCCESS;
    }
    if (key == "adapter_not_ready") {
        if (value == "1" || value == "true" || value == "True")
            adapter_not_ready_ = true;
        else if (value == "0" || value == "false" || value == "False")
            adapter_not_ready_ = false;
        else
            return bad("expected 1/true or 0/false");
        return STATUS_SUCCESS;
    }
    if (key == "ephemeral_ports") {
        unsigned lo = 0, hi = 0;
        char dash = 0;
        std::istringstream in(value);
        if (!(in >> lo >> dash >> hi) || dash != '-' || lo == 0 || hi > 65535 || lo > hi ||
            !(in >> std::ws).eof())
            return bad("expected LOW-HIGH within 1-65535");
        ephemeral_ = {static_cast<uint16_t>(lo), static_cast<uint16_t>(hi)};
        return STATUS_SUCCESS;
    }
    if (key == "address") {
        addresses_ = value;
        return STATUS_SUCCESS;
    }
    if (key == "progress") {
        if (value != "auto" && value != "manual")
            return bad("expected auto or manual");
        manual_progress_ = value == "manual";
        return STATUS_SUCCESS;
    }
    if (key == "misbehave") {
        auto mode = parse_misbehave(value);
        if (!mode)
            return bad("expected one of " + misbehave_names());
        misbehave_.store(*mode, std::memory_order_relaxed);
        return STATUS_SUCCESS;
    }
    if (key == "rnr_timeout_ms" || key == "connect_timeout_ms") {
        auto n = parse_number(value);
        if (!n || *n > 3600u * 1000u)
            return bad("expected milliseconds (at most one hour)");
        (key == "rnr_timeout_ms" ? rnr_timeout_ms_ : connect_timeout_ms_) =
            static_cast<uint32_t>(*n);
        return STATUS_SUCCESS;
    }
    for (const auto &cap : kCaps) {
        if (key == cap.name) {
            auto n = parse_number(value);
            if (!n || *n > MAXULONG)
                return bad("expected a count (0 = no cap)");
            caps_.*cap.member = static_cast<ULONG>(*n);
            return STATUS_SUCCESS;
        }
    }
    for (const auto &field : kInfoFields) {
        if (key == field.name) {
            auto n = parse_number(value);
            if (!n || (field.size == 4 && *n > MAXULONG))
                return bad("expected an unsigned integer");
            auto *base = reinterpret_cast<unsigned char *>(&info_) + field.offset;
            if (field.size == 8) {
                uint64_t v = *n;
                std::memcpy(base, &v, 8);
            } else {
                uint32_t v = static_cast<uint32_t>(*n);
                std::memcpy(base, &v, 4);
            }
            return STATUS_SUCCESS;
        }
    }
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS Knobs::get(const std::string &key, std::string &value) const
{
    std::lock_guard lock(mu_);
    if (key == "create_mode")
        value = mode_name(create_mode_);
    else if (key == "request_mode")
        value = mode_name(request_mode_);
    else if (key == "close_mode")
        value = mode_name(close_mode_);
    else if (key == "seed")
        value = std::to_string(seed_);
    else if (key == "address")
        value = addresses_;
    else if (key == "ephemeral_ports")
        value = std::to_string(ephemeral_.first) + "-" + std::to_string(ephemeral_.second);
    else if (key == "progress")
        value = manual_progress_ ? "manual" : "auto";
    else if (key == "rnr_timeout_ms")
        value = std::to_string(rnr_timeout_ms_);
    else if (key == "connect_timeout_ms")
        value = std::to_string(connect_timeout_ms_);
    else if (key == "adapter_not_ready")
        value = adapter_not_ready_ ? "1" : "0";
    else if (key == "misbehave")
        value = misbehave_name(misbehave());
    else if (key == "provider_version")
        value = provider_version_ ? std::to_string(provider_version_->Major) + "." +
                                        std::to_string(provider_version_->Minor)
                                  : "";
    else if (key == "fail") {
        value.clear();
        for (const auto &[fn, armed] : failures_)
            value += fn + " " + status_name(armed.failure.status) + " " +
                     (armed.failure.async ? "async" : "inline") + " " +
                     std::to_string(armed.remaining) + "\n";
    } else {
        for (const auto &cap : kCaps) {
            if (key == cap.name) {
                value = std::to_string(caps_.*cap.member);
                return STATUS_SUCCESS;
            }
        }
        for (const auto &field : kInfoFields) {
            if (key == field.name) {
                const auto *base = reinterpret_cast<const unsigned char *>(&info_) + field.offset;
                uint64_t v = 0;
                if (field.size == 8) {
                    std::memcpy(&v, base, 8);
                } else {
                    uint32_t v32 = 0;
                    std::memcpy(&v32, base, 4);
                    v = v32;
                }
                value = std::to_string(v);
                return STATUS_SUCCESS;
            }
        }
        return STATUS_NOT_SUPPORTED;
    }
    return STATUS_SUCCESS;
}

bool Knobs::decide(CompletionMode mode)
{
    switch (mode) {
    case CompletionMode::Inline: return false;
    case CompletionMode::Pending: return true;
    case CompletionMode::Random: return (rng_() & 1) != 0;
    }
    return false;
}

bool Knobs::should_pend(CallKind kind)
{
    std::lock_guard lock(mu_);
    switch (kind) {
    case CallKind::Create: return decide(create_mode_);
    case CallKind::Request: return decide(request_mode_);
    case CallKind::Close: return decide(close_mode_);
    }
    return false;
}

std::optional<InjectedFailure> Knobs::take_failure(const char *function)
{
    std::lock_guard lock(mu_);
    if (failures_.empty())
        return std::nullopt;
    auto it = failures_.find(std::string_view(function));
    if (it == failures_.end())
        return std::nullopt;
    InjectedFailure failure = it->second.failure;
    if (it->second.remaining > 0 && --it->second.remaining == 0)
        failures_.erase(it);
    return failure;
}

NDK_ADAPTER_INFO Knobs::adapter_info(NDK_VERSION reported) const
{
    std::lock_guard lock(mu_);
    NDK_ADAPTER_INFO info = info_;
    info.Version = reported;
    return info;
}

ObjectCaps Knobs::caps() const
{
    std::lock_guard lock(mu_);
    return caps_;
}

std::optional<USHORT> Knobs::highest_minor(USHORT major) const
{
    std::lock_guard lock(mu_);
    if (provider_version_)
        return major == provider_version_->Major ? std::optional<USHORT>(provider_version_->Minor)
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
    return adapter_not_ready_;
}

std::pair<uint16_t, uint16_t> Knobs::ephemeral_ports() const
{
    std::lock_guard lock(mu_);
    return ephemeral_;
}

bool Knobs::manual_progress() const
{
    std::lock_guard lock(mu_);
    return manual_progress_;
}

std::chrono::milliseconds Knobs::rnr_timeout() const
{
    std::lock_guard lock(mu_);
    return std::chrono::milliseconds(rnr_timeout_ms_);
}

std::chrono::milliseconds Knobs::connect_timeout() const
{
    std::lock_guard lock(mu_);
    return std::chrono::milliseconds(connect_timeout_ms_);
}

std::string Knobs::addresses() const
{
    std::lock_guard lock(mu_);
    return addresses_;
}

} // namespace ndk::soft
