// ndk.Mdl: an MDL chain over a Python buffer, for NdkRegisterMr and NdkBuildLAM.
#pragma once

#include "py_support.hpp"

#include <optional>
#include <utility>
#include <vector>

namespace ndk::py {

// An MDL chain over a Python buffer: segments (offset, length) of the buffer, in order.
struct PyMdl {
    std::vector<MDL> chain;
    SIZE_T total = 0;
    std::shared_ptr<void> keepalive;
};

// Segments (offset, length) of the buffer, in order; None: the whole buffer.  ValueError for a
// segment outside the buffer, BufferError for a buffer that is not contiguous (or not writable
// when `writable`).
PyMdl make_mdl(const pyb::buffer &buffer,
               std::optional<std::vector<std::pair<size_t, size_t>>> segments,
               bool writable = false);

} // namespace ndk::py
