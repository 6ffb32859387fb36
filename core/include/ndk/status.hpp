// NTSTATUS names: one table, read by the C++ API, the soft provider's knobs and the Python
// binding (ndk.Status is built from it), so a status is spelled the same way everywhere.
#pragma once

#include "ndk/ndkpi.h"

#include <optional>
#include <stdexcept>
#include <span>
#include <string>
#include <string_view>

namespace ndk {

struct StatusName {
    NTSTATUS value;
    const char *name; // full NDK name, e.g. "STATUS_PENDING", "NDIS_STATUS_BAD_VERSION"
};

std::span<const StatusName> status_table();
// "STATUS_PENDING"; an unknown value gives "0xC0DE0001".
std::string status_name(NTSTATUS status);
// "STATUS_PENDING (0x00000103)"
std::string describe_status(NTSTATUS status);
// Accepts "STATUS_PENDING", "PENDING", "NDIS_STATUS_BAD_VERSION", "BAD_VERSION" or a number
// ("0x103", "259").
std::optional<NTSTATUS> parse_status(std::string_view text);

// An NDK call failed; status() is the NTSTATUS, what() its describe_status with the context.
// Thrown by the registry, the layers and the consumer API alike (the kit, which they all link,
// defines it in status.cpp).
class Error : public std::runtime_error {
public:
    explicit Error(NTSTATUS status, const std::string &context = {});
    NTSTATUS status() const { return status_; }

private:
    NTSTATUS status_;
};

} // namespace ndk
