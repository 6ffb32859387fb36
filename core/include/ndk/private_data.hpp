// Private data as NdkConnect, NdkConnectWithSharedEndpoint, NdkAccept and NdkReject take it
// (pPrivateData, PrivateDataLength; digest 1.8).  The bytes are copied, so the caller's buffer
// may go at once while the handle keeps the copy until the call completes (a provider may read
// it until then).  Misuse must stay expressible: a NULL pointer with a non-zero length, or a
// length beyond the bytes given (the copy is zero-padded to the length, so the provider never
// reads past it).
#pragma once

#include "ndk/ndkpi.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace ndk {

class PrivateData {
public:
    PrivateData() = default; // pPrivateData NULL, PrivateDataLength 0
    // The bytes, with their size as the length.
    explicit PrivateData(std::vector<uint8_t> bytes);
    // `length` bytes at `data` (copied), or NULL with `length` when `data` is NULL.
    static PrivateData raw(const void *data, ULONG length);
    // `bytes` (NULL when nullopt) with `length` (default: the bytes' size).  Throws
    // std::invalid_argument when no length fits in a ULONG.
    static PrivateData of(std::optional<std::vector<uint8_t>> bytes,
                          std::optional<ULONG> length = std::nullopt);

    PVOID data() const { return bytes_ ? bytes_->data() : nullptr; }
    ULONG length() const { return length_; }

private:
    std::shared_ptr<std::vector<uint8_t>> bytes_; // null: pPrivateData is NULL
    ULONG length_ = 0;
};

} // namespace ndk
