// ndk.Mdl: an MDL chain over a Python buffer, for NdkRegisterMr and NdkBuildLAM.
#pragma once

#include "py_support.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ndk::py {

// An MDL chain over a Python buffer: segments (offset, length) of the buffer, in order.
struct PyMdl {
    std::vector<MDL> chain;
    SIZE_T total = 0;
    std::shared_ptr<void> keepalive;
    bool writable = false; // the buffer may be written (not bytes, not a read-only mmap)
};

// Segments (offset, length) of the buffer, in order; None: the whole buffer.  ValueError for a
// segment outside the buffer, BufferError for a buffer that is not contiguous (or not writable
// when `writable`).
PyMdl make_mdl(const pyb::buffer &buffer,
               std::optional<std::vector<std::pair<size_t, size_t>>> segments,
               bool writable = false);

// BufferError unless the Mdl's buffer is writable, for `what` (a registration whose flags allow
// writes, kit::mr_flags_allow_writes; a LAM, which the privileged token lets be written).  The
// binding's side of MR-WRITABLE (docs/semantics.md): Python marks immutable memory (bytes, a
// read-only memoryview or mmap) that the kernel maps writable, so the provider cannot see it.
void require_writable(const PyMdl &mdl, const std::string &what);

} // namespace ndk::py
