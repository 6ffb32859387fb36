// The text a harness provider entry hands back (CreateMiniport's error, ControlMiniport's
// reply): copied into the caller's buffer of `length` bytes, truncated and always terminated.
#pragma once

#include "ndk/ndkpi.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace ndk {

inline void copy_reply_text(const std::string &text, char *out, ULONG length)
{
    if (out == nullptr || length == 0)
        return;
    size_t n = std::min<size_t>(text.size(), length - 1);
    std::memcpy(out, text.data(), n);
    out[n] = '\0';
}

} // namespace ndk
