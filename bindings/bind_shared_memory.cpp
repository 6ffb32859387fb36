// ndk.SharedBuffer (made by ndk.alloc): memory another process can map, for zero-copy transfers
// between processes (core/include/ndk/shared_memory.hpp; docs/transport.md, "Zero-copy").  A
// writable buffer like a bytearray; a registration of it holds it as it holds any buffer.
#include "py_support.hpp"

#include "ndk/shared_memory.hpp"

#include <cerrno>
#include <string>
#include <system_error>

namespace ndk::py {

void bind_shared_memory(pyb::module_ &m)
{
    pyb::class_<SharedMemory>(m, "SharedBuffer", pyb::buffer_protocol(), R"doc(
`size` bytes, zero-filled, that a peer process can map: a sealed memfd mapped shared here
(ndk.alloc(size) makes one).  Register it as any buffer; soft's shm transport then moves a
transfer from or into it with memcpy through the peer's mapping rather than with
process_vm_readv/writev.  Writable, as a bytearray: memoryview(buf), numpy.frombuffer(buf).
)doc")
        .def(pyb::init([](size_t size) {
                 try {
                     return new SharedMemory(size);
                 } catch (const std::system_error &e) {
                     errno = e.code().value();
                     PyErr_SetFromErrnoWithFilename(PyExc_OSError, "ndk.alloc");
                     throw pyb::error_already_set();
                 }
             }),
             pyb::arg("size"))
        .def_buffer([](SharedMemory &memory) {
            return pyb::buffer_info(memory.data(), 1, pyb::format_descriptor<unsigned char>::format(),
                                    1, {static_cast<pyb::ssize_t>(memory.size())}, {1});
        })
        .def("__len__", &SharedMemory::size)
        .def("__repr__", [](const SharedMemory &memory) {
            return "<ndk.SharedBuffer size=" + std::to_string(memory.size()) +
                   " fd=" + std::to_string(memory.range().fd) + ">";
        });
}

} // namespace ndk::py
