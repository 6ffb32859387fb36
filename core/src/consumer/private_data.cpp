#include "ndk/private_data.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ndk {

PrivateData::PrivateData(std::vector<uint8_t> bytes) { *this = of(std::move(bytes)); }

PrivateData PrivateData::raw(const void *data, ULONG length)
{
    PrivateData p;
    p.length_ = length;
    if (data != nullptr) {
        const auto *bytes = static_cast<const uint8_t *>(data);
        p.bytes_ = std::make_shared<std::vector<uint8_t>>(bytes, bytes + length);
        p.bytes_->resize(std::max<size_t>(length, 1)); // a non-NULL pointer even for 0 bytes
    }
    return p;
}

PrivateData PrivateData::of(std::optional<std::vector<uint8_t>> bytes, std::optional<ULONG> length)
{
    PrivateData p;
    if (bytes && !length && bytes->size() > MAXULONG)
        throw std::invalid_argument("private data of " + std::to_string(bytes->size()) +
                                    " bytes does not fit PrivateDataLength (a ULONG)");
    p.length_ = length ? *length : bytes ? static_cast<ULONG>(bytes->size()) : 0;
    if (bytes) {
        // Zero-padded to the length passed, so a length beyond the bytes cannot make the
        // provider read past our copy; at least one byte, so empty data is still not NULL.
        bytes->resize(std::max<size_t>({bytes->size(), p.length_, 1}));
        p.bytes_ = std::make_shared<std::vector<uint8_t>>(std::move(*bytes));
    }
    return p;
}

} // namespace ndk
