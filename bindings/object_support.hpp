// What the files binding NDK object handles share: the class helper, the repr, and waiting on
// a status event queue (CQ and SRQ notifications).
#pragma once

#include "py_support.hpp"

#include "ndk/objects.hpp"

#include <string>

namespace ndk::py {

// "<ndk.Cq open>", "<ndk.Mr fast_register ... closed>"
inline std::string object_repr(const Object &o, const std::string &name,
                               const std::string &details = {})
{
    return "<ndk." + name + (details.empty() ? "" : " " + details) +
           (o.is_open() ? " open>" : " closed>");
}

template <class T>
pyb::class_<T, Object, std::shared_ptr<T>> object_class(pyb::module_ &m, const char *name,
                                                        const char *doc)
{
    return pyb::class_<T, Object, std::shared_ptr<T>>(m, name, doc);
}

// The next status of `queue` as an ndk.Status, or None after `timeout` seconds (None: wait);
// ObjectClosedError once `owner` is closed (pop_released).
inline pyb::object wait_status_event(const Object &owner, EventQueue<NTSTATUS> &queue,
                                     const pyb::object &timeout)
{
    if (auto status = pop_released(owner, queue, timeout))
        return pyb::cast(Status{*status});
    return pyb::none();
}

} // namespace ndk::py
