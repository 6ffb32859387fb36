#include "mdl.hpp"

#include <string>

namespace ndk::py {

PyMdl make_mdl(const pyb::buffer &buffer,
               std::optional<std::vector<std::pair<size_t, size_t>>> segments, bool writable)
{
    auto info = contiguous_buffer(buffer, writable);
    auto *base = static_cast<unsigned char *>(info->ptr);
    size_t size = static_cast<size_t>(info->size * info->itemsize);
    if (!segments)
        segments = std::vector<std::pair<size_t, size_t>>{{0, size}};
    PyMdl mdl;
    for (auto [offset, length] : *segments) {
        if (offset > size || length > size - offset || length > MAXULONG)
            throw pyb::value_error("MDL segment (" + std::to_string(offset) + ", " +
                                   std::to_string(length) + ") is outside the buffer of " +
                                   std::to_string(size) + " bytes");
        MDL element{};
        NdkInitializeMdl(&element, base + offset, static_cast<ULONG>(length));
        mdl.chain.push_back(element);
        mdl.total += length;
    }
    mdl.writable = !info->readonly;
    mdl.keepalive = keep_alive(std::move(info));
    return mdl;
}

void require_writable(const PyMdl &mdl, const std::string &what)
{
    if (mdl.writable)
        return;
    PyErr_SetString(PyExc_BufferError,
                    ("the Mdl's buffer is not writable, and " + what + " may be written").c_str());
    throw pyb::error_already_set();
}

} // namespace ndk::py
