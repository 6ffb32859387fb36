#include "ndk/status.hpp"

#include <charconv>
#include <cstdio>

namespace ndk {
namespace {

#define NDK_STATUS_ENTRY(s) {s, #s}
constexpr StatusName kStatuses[] = {
    NDK_STATUS_ENTRY(STATUS_SUCCESS),
    NDK_STATUS_ENTRY(STATUS_TIMEOUT),
    NDK_STATUS_ENTRY(STATUS_PENDING),
    NDK_STATUS_ENTRY(STATUS_BUFFER_OVERFLOW),
    NDK_STATUS_ENTRY(STATUS_DEVICE_BUSY),
    NDK_STATUS_ENTRY(STATUS_NO_MORE_ENTRIES),
    NDK_STATUS_ENTRY(STATUS_UNSUCCESSFUL),
    NDK_STATUS_ENTRY(STATUS_ACCESS_VIOLATION),
    NDK_STATUS_ENTRY(STATUS_INVALID_HANDLE),
    NDK_STATUS_ENTRY(STATUS_INVALID_PARAMETER),
    NDK_STATUS_ENTRY(STATUS_INVALID_DEVICE_REQUEST),
    NDK_STATUS_ENTRY(STATUS_NO_MEMORY),
    NDK_STATUS_ENTRY(STATUS_BUFFER_TOO_SMALL),
    NDK_STATUS_ENTRY(STATUS_INVALID_PARAMETER_MIX),
    NDK_STATUS_ENTRY(STATUS_DATA_OVERRUN),
    NDK_STATUS_ENTRY(STATUS_DATA_ERROR),
    NDK_STATUS_ENTRY(STATUS_SHARING_VIOLATION),
    NDK_STATUS_ENTRY(STATUS_INSUFFICIENT_RESOURCES),
    NDK_STATUS_ENTRY(STATUS_DEVICE_NOT_READY),
    NDK_STATUS_ENTRY(STATUS_IO_TIMEOUT),
    NDK_STATUS_ENTRY(STATUS_NOT_SUPPORTED),
    NDK_STATUS_ENTRY(STATUS_BAD_NETWORK_NAME),
    NDK_STATUS_ENTRY(STATUS_INTERNAL_ERROR),
    NDK_STATUS_ENTRY(STATUS_INVALID_PARAMETER_1),
    NDK_STATUS_ENTRY(STATUS_INVALID_PARAMETER_2),
    NDK_STATUS_ENTRY(STATUS_INVALID_PARAMETER_3),
    NDK_STATUS_ENTRY(STATUS_INVALID_PARAMETER_4),
    NDK_STATUS_ENTRY(STATUS_INVALID_PARAMETER_5),
    NDK_STATUS_ENTRY(STATUS_INVALID_PARAMETER_6),
    NDK_STATUS_ENTRY(STATUS_INVALID_PARAMETER_7),
    NDK_STATUS_ENTRY(STATUS_INVALID_PARAMETER_8),
    NDK_STATUS_ENTRY(STATUS_INVALID_PARAMETER_9),
    NDK_STATUS_ENTRY(STATUS_INVALID_PARAMETER_10),
    NDK_STATUS_ENTRY(STATUS_CONNECTION_IN_USE),
    NDK_STATUS_ENTRY(STATUS_CANCELLED),
    NDK_STATUS_ENTRY(STATUS_LOCAL_DISCONNECT),
    NDK_STATUS_ENTRY(STATUS_REMOTE_DISCONNECT),
    NDK_STATUS_ENTRY(STATUS_REMOTE_RESOURCES),
    NDK_STATUS_ENTRY(STATUS_INVALID_ADDRESS),
    NDK_STATUS_ENTRY(STATUS_INVALID_DEVICE_STATE),
    NDK_STATUS_ENTRY(STATUS_INVALID_BUFFER_SIZE),
    NDK_STATUS_ENTRY(STATUS_TOO_MANY_ADDRESSES),
    NDK_STATUS_ENTRY(STATUS_ADDRESS_ALREADY_EXISTS),
    NDK_STATUS_ENTRY(STATUS_CONNECTION_DISCONNECTED),
    NDK_STATUS_ENTRY(STATUS_CONNECTION_RESET),
    NDK_STATUS_ENTRY(STATUS_CONNECTION_REFUSED),
    NDK_STATUS_ENTRY(STATUS_GRACEFUL_DISCONNECT),
    NDK_STATUS_ENTRY(STATUS_ADDRESS_ALREADY_ASSOCIATED),
    NDK_STATUS_ENTRY(STATUS_CONNECTION_INVALID),
    NDK_STATUS_ENTRY(STATUS_CONNECTION_ACTIVE),
    NDK_STATUS_ENTRY(STATUS_NETWORK_UNREACHABLE),
    NDK_STATUS_ENTRY(STATUS_HOST_UNREACHABLE),
    NDK_STATUS_ENTRY(STATUS_REQUEST_ABORTED),
    NDK_STATUS_ENTRY(STATUS_CONNECTION_ABORTED),
    NDK_STATUS_ENTRY(STATUS_DEVICE_REMOVED),
    NDK_STATUS_ENTRY(STATUS_IMPLEMENTATION_LIMIT),
    NDK_STATUS_ENTRY(NDIS_STATUS_BAD_VERSION),
    NDK_STATUS_ENTRY(NDIS_STATUS_ADAPTER_NOT_READY),
    NDK_STATUS_ENTRY(NDIS_STATUS_INVALID_LENGTH),
    NDK_STATUS_ENTRY(NDIS_STATUS_BUFFER_TOO_SHORT),
    NDK_STATUS_ENTRY(NDIS_STATUS_INVALID_OID),
};
#undef NDK_STATUS_ENTRY

std::string_view short_name(std::string_view full)
{
    for (std::string_view prefix : {"NDIS_STATUS_", "STATUS_"})
        if (full.starts_with(prefix))
            return full.substr(prefix.size());
    return full;
}

} // namespace

std::span<const StatusName> status_table() { return kStatuses; }

std::string status_name(NTSTATUS status)
{
    for (const auto &entry : kStatuses)
        if (entry.value == status)
            return entry.name;
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08X", static_cast<unsigned>(status));
    return buf;
}

std::string describe_status(NTSTATUS status)
{
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08X", static_cast<unsigned>(status));
    return status_name(status) + " (" + buf + ")";
}

std::optional<NTSTATUS> parse_status(std::string_view text)
{
    for (const auto &entry : kStatuses)
        if (text == entry.name || text == short_name(entry.name))
            return entry.value;
    int base = 10;
    if (text.starts_with("0x") || text.starts_with("0X")) {
        text.remove_prefix(2);
        base = 16;
    }
    uint32_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty())
        return std::nullopt;
    return static_cast<NTSTATUS>(value);
}

Error::Error(NTSTATUS status, const std::string &context)
    : std::runtime_error(context.empty() ? describe_status(status)
                                         : context + ": " + describe_status(status)),
      status_(status)
{
}

} // namespace ndk
