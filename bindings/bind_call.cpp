// ndk.Call: the record of one asynchronous NDK call, and the exception translation.
#include "package_types.hpp"
#include "py_support.hpp"

#include "ndk/objects.hpp"
#include "ndk/status.hpp"

#include <pybind11/stl.h>

namespace ndk::py {
namespace {

double seconds_of(const pyb::object &timeout) { return timeout.is_none() ? -1.0 : timeout_of(timeout).count(); }

// TimeoutError unless the call completes within `timeout` seconds (None: wait forever).
void await_call(const pyb::object &self, const Call &call, const pyb::object &timeout)
{
    release_deferred();
    bool done = wait_released(self, call, seconds_of(timeout));
    release_deferred(); // what the completion let go of on the provider's thread
    if (!done)
        raise_call_timeout(self, timeout);
}

std::string call_repr(const Call &call)
{
    std::string text = "<ndk.Call status=" + status_name(call.status());
    text += " completions=" + std::to_string(call.completions());
    if (auto status = call.completion_status())
        text += " completion_status=" + status_name(*status);
    if (auto object = call.object())
        text += " object=yes";
    return text + ">";
}

} // namespace

void bind_call(pyb::module_ &m)
{
    pyb::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p)
                std::rethrow_exception(p);
        } catch (const KnobError &e) {
            auto cls = package_attr("ndk._errors", "KnobsNotSupported");
            PyErr_SetObject(cls.ptr(), pyb::str(e.what()).ptr());
        } catch (const Error &e) {
            auto cls = package_attr("ndk._errors", "NdkError");
            pyb::object error = cls(static_cast<uint32_t>(e.status()), e.what());
            PyErr_SetObject(cls.ptr(), error.ptr());
        } catch (const InheritedError &e) {
            auto cls = package_attr("ndk._errors", "InheritedAdapterError");
            PyErr_SetObject(cls.ptr(), pyb::str(e.what()).ptr());
        } catch (const ClosedError &e) {
            auto cls = package_attr("ndk._errors", "ObjectClosedError");
            PyErr_SetObject(cls.ptr(), pyb::str(e.what()).ptr());
        }
    });

    pyb::class_<Call>(m, "Call", pyb::dynamic_attr(), R"doc(
The record of one asynchronous NDK call (digest 1.0, "Three ways a call can complete").

status             the inline return (STATUS_PENDING when the completion comes later)
completions        how many times the provider called the completion (0 or 1 if it conforms)
completion_status  the status the completion reported, or None before it fired
wait(timeout)      wait for the call to finish; returns the final status
get(timeout)       wait, and return the created object (None for a request), or raise
                   ndk.NdkError naming the call and its final status
)doc")
        .def_property_readonly("status", [](const Call &c) { return Status{c.status()}; },
                               "The inline status the NDK function returned.")
        .def_property_readonly("completions", &Call::completions,
                               "How many times the completion callback fired.")
        .def_property_readonly(
            "completion_status",
            [](const Call &c) -> pyb::object {
                if (auto s = c.completion_status())
                    return pyb::cast(Status{*s});
                return pyb::none();
            },
            "The status the completion reported, or None if it has not fired.")
        .def_property_readonly("done", &Call::done,
                               "True once the call returned inline or its completion fired.")
        .def_property_readonly("object", &Call::object,
                               "The created object, once there is one (creates only).")
        .def(
            "wait",
            [](const pyb::object &self, pyb::object timeout) {
                const Call &c = self.cast<const Call &>();
                await_call(self, c, timeout);
                return Status{c.result()};
            },
            pyb::arg("timeout") = pyb::none(),
            "Wait until the call completes (at most `timeout` seconds; TimeoutError after) and "
            "return its final status: the inline status, or the completion's after "
            "STATUS_PENDING.")
        .def(
            "get",
            [](const pyb::object &self, pyb::object timeout) -> std::shared_ptr<Object> {
                const Call &c = self.cast<const Call &>();
                await_call(self, c, timeout);
                NTSTATUS status = c.result();
                if (status != STATUS_SUCCESS) // "NdkCreateCq: STATUS_..." with .status
                    throw Error(status, call_function(self));
                return c.object();
            },
            pyb::arg("timeout") = pyb::none(),
            "Wait (TimeoutError after `timeout` seconds), then return the created object (None "
            "for a request) or raise ndk.NdkError with the final status (.status), its message "
            "naming the NDK function, e.g. 'NdkCreateCq: STATUS_INVALID_PARAMETER (0xC000000D)'.")
        .def("__repr__", &call_repr);
}

} // namespace ndk::py
