// ndk.Cq, and the results it returns: ndk.Result, ndk.ResultEx (digest 1.3, 2.3, 3.2).
#include "object_support.hpp"

#include "ndk/status.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <thread>
#include <vector>

namespace ndk::py {
namespace {

const char *op_type_name(NDK_OPERATION_TYPE type)
{
    switch (type) {
    case NdkOperationTypeReceive: return "RECEIVE";
    case NdkOperationTypeReceiveAndInvalidate: return "RECEIVE_AND_INVALIDATE";
    case NdkOperationTypeSend: return "SEND";
    case NdkOperationTypeFastRegister: return "FAST_REGISTER";
    case NdkOperationTypeBind: return "BIND";
    case NdkOperationTypeInvalidate: return "INVALIDATE";
    case NdkOperationTypeRead: return "READ";
    case NdkOperationTypeWrite: return "WRITE";
    }
    return nullptr;
}

std::string result_repr(const NDK_RESULT &r)
{
    return "<ndk.Result " + status_name(r.Status) + " bytes=" + std::to_string(r.BytesTransferred) +
           " request_context=" + std::to_string(context_value(r.RequestContext)) + ">";
}

std::string result_ex_repr(const NDK_RESULT_EX &r)
{
    const char *type = op_type_name(r.Type);
    std::string text = "<ndk.ResultEx " + status_name(r.Status) + " type=" +
                       (type ? type : std::to_string(r.Type)) + " bytes=" +
                       std::to_string(r.BytesTransferred) + " request_context=" +
                       std::to_string(context_value(r.RequestContext));
    if (r.ProviderErrorCode != 0)
        text += " provider_error_code=" + std::to_string(r.ProviderErrorCode);
    return text + ">";
}

// Take `n` results, polling with the GIL released: a short spin (results usually follow a post
// within microseconds), then sleeps of ~30 us.  On timeout, TimeoutError names how many came
// and carries them as .results, since they are gone from the CQ.
template <class R, class Poll>
std::vector<R> wait_for_results(ULONG n, const pyb::object &timeout, const char *what, Poll poll)
{
    using Clock = std::chrono::steady_clock;
    auto limit = timeout_of(timeout);
    std::vector<R> got;
    got.reserve(std::min<ULONG>(n, 4096));
    {
        pyb::gil_scoped_release release;
        auto start = Clock::now();
        auto deadline = start + std::chrono::duration_cast<Clock::duration>(limit);
        auto next_signal_check = start + std::chrono::milliseconds(100);
        for (unsigned polls = 0; got.size() < n; ++polls) {
            if (poll(got, static_cast<ULONG>(n - got.size())) > 0)
                continue;
            auto now = Clock::now();
            if (now >= deadline)
                break;
            if (now >= next_signal_check) { // Ctrl-C must still reach a long wait
                pyb::gil_scoped_acquire acquire;
                if (PyErr_CheckSignals() != 0)
                    throw pyb::error_already_set();
                next_signal_check = now + std::chrono::milliseconds(100);
            }
            if (polls < 200)
                std::this_thread::yield();
            else
                std::this_thread::sleep_for(std::chrono::microseconds(30));
        }
    }
    if (got.size() < n) {
        pyb::list arrived = pyb::cast(got);
        std::string listing;
        for (auto item : arrived)
            listing += (listing.empty() ? "" : ", ") + pyb::repr(item).cast<std::string>();
        std::string message = std::string(what) + ": " + std::to_string(got.size()) + " of " +
                              std::to_string(n) + " results arrived within " +
                              pyb::str(timeout).cast<std::string>() + " s: [" + listing + "]";
        pyb::object error = pyb::reinterpret_borrow<pyb::object>(PyExc_TimeoutError)(message);
        error.attr("results") = arrived;
        PyErr_SetObject(PyExc_TimeoutError, error.ptr());
        throw pyb::error_already_set();
    }
    return got;
}

pyb::object wait_results(Cq &cq, ULONG n, const pyb::object &timeout, bool ex)
{
    if (ex)
        return pyb::cast(wait_for_results<NDK_RESULT_EX>(
            n, timeout, "wait_results", [&cq](std::vector<NDK_RESULT_EX> &got, ULONG want) {
                NDK_RESULT_EX batch[64];
                ULONG k = cq.get_results_into(std::span(batch, std::min<ULONG>(want, 64)));
                got.insert(got.end(), batch, batch + k);
                return k;
            }));
    return pyb::cast(wait_for_results<NDK_RESULT>(
        n, timeout, "wait_results", [&cq](std::vector<NDK_RESULT> &got, ULONG want) {
            auto batch = cq.get_results(std::min<ULONG>(want, 64));
            got.insert(got.end(), batch.begin(), batch.end());
            return static_cast<ULONG>(batch.size());
        }));
}

} // namespace

void bind_cq(pyb::module_ &m)
{
    pyb::class_<NDK_RESULT>(m, "Result", "NDK_RESULT (digest 2.3).")
        .def_property_readonly("status", [](const NDK_RESULT &r) { return Status{r.Status}; })
        .def_readonly("bytes_transferred", &NDK_RESULT::BytesTransferred)
        .def_property_readonly("qp_context", [](const NDK_RESULT &r) { return context_value(r.QPContext); })
        .def_property_readonly("request_context",
                               [](const NDK_RESULT &r) { return context_value(r.RequestContext); })
        .def("__repr__", &result_repr);

    pyb::class_<NDK_RESULT_EX>(m, "ResultEx", "NDK_RESULT_EX (digest 2.3, NDKPI 2.1 layout).")
        .def_property_readonly("status", [](const NDK_RESULT_EX &r) { return Status{r.Status}; })
        .def_readonly("bytes_transferred", &NDK_RESULT_EX::BytesTransferred)
        .def_property_readonly("qp_context",
                               [](const NDK_RESULT_EX &r) { return context_value(r.QPContext); })
        .def_property_readonly("request_context",
                               [](const NDK_RESULT_EX &r) { return context_value(r.RequestContext); })
        .def_property_readonly(
            "type", [](const NDK_RESULT_EX &r) { return enum_of("OpType", r.Type); },
            "An ndk.OpType (a plain int if the provider reported no NDK_OPERATION_TYPE).")
        .def_readonly("provider_error_code", &NDK_RESULT_EX::ProviderErrorCode)
        .def_readonly("type_specific_completion_output",
                      &NDK_RESULT_EX::TypeSpecificCompletionOutput)
        .def("__repr__", &result_ex_repr);

    object_class<Cq>(m, "Cq", "NDK_CQ: a completion queue (digest 1.3).")
        .def("resize_cq", &Cq::resize, pyb::arg("cq_depth"),
             "NdkResizeCq -> Call.  Documented: SUCCESS; PENDING; INVALID_PARAMETER (cq_depth > "
             "MaxCqDepth); INSUFFICIENT_RESOURCES.  Needs NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED.")
        // The GIL is released around the provider calls: another Python thread runs while one
        // is in the provider (blocked there, e.g. by the soft provider's knob hold).
        .def("arm_cq", &Cq::arm, pyb::arg("type"), pyb::call_guard<pyb::gil_scoped_release>(),
             "NdkArmCq(NDK_CQ_NOTIFY_ERRORS / ANY / SOLICITED).")
        .def("arm", &Cq::arm, pyb::arg("type"), pyb::call_guard<pyb::gil_scoped_release>(),
             "Alias of arm_cq.")
        .def("get_cq_results", &Cq::get_results, pyb::arg("n") = 1,
             pyb::call_guard<pyb::gil_scoped_release>(),
             "NdkGetCqResults: up to n NDK_RESULTs (non-blocking).")
        .def("get_results", &Cq::get_results, pyb::arg("n") = 1,
             pyb::call_guard<pyb::gil_scoped_release>(), "Alias of get_cq_results.")
        .def("get_cq_results_ex", &Cq::get_results_ex, pyb::arg("n") = 1,
             pyb::call_guard<pyb::gil_scoped_release>(),
             "NdkGetCqResultsEx: up to n NDK_RESULT_EXs (non-blocking).")
        .def("get_results_ex", &Cq::get_results_ex, pyb::arg("n") = 1,
             pyb::call_guard<pyb::gil_scoped_release>(), "Alias of get_cq_results_ex.")
        .def("wait_results", &wait_results, pyb::arg("n"), pyb::arg("timeout") = 1.0,
             pyb::arg("ex") = true,
             "Exactly n results: polls NdkGetCqResultsEx (NdkGetCqResults with ex=False) with "
             "the GIL released until n arrived, and returns them as ndk.ResultEx (ndk.Result).  "
             "After `timeout` seconds (None: no limit) raises TimeoutError saying how many "
             "arrived; they are listed in the message and in its .results.")
        .def(
            "control_cq_interrupt_moderation",
            [](Cq &cq, ULONG moderation_interval, ULONG moderation_count) {
                return Status{cq.control_interrupt_moderation(moderation_interval, moderation_count)};
            },
            pyb::arg("moderation_interval"), pyb::arg("moderation_count"),
            "NdkControlCqInterruptModeration -> Status (never PENDING).  Documented: SUCCESS; "
            "INSUFFICIENT_RESOURCES; NOT_SUPPORTED (adapter flag not set); INVALID_PARAMETER_MIX.")
        .def("wait_notification",
             [](Cq &cq, pyb::object timeout) { return wait_status_event(cq.events().notifications, timeout); },
             pyb::arg("timeout") = pyb::none(),
             "The next NdkCqNotificationCallback status, or None after `timeout` seconds.  "
             "Notifications delivered before a close stay readable after it.")
        .def_property_readonly("notifications",
                               [](Cq &cq) { return cq.events().notifications.delivered(); },
                               "How many notification callbacks the provider made.")
        .def("__repr__", [](const Cq &cq) { return object_repr(cq, "Cq"); });
}

} // namespace ndk::py
