// Host memory a transfer reads or writes: the spans a token + address range resolve to
// (soft_memory.hpp).
#pragma once

#include <cstddef>
#include <vector>

namespace ndk::soft {

struct Span {
    unsigned char *host;
    size_t length;
};
using Spans = std::vector<Span>;

} // namespace ndk::soft
