// ndk.Cq, and the results it returns: ndk.Result, ndk.ResultEx (digest 1.3, 2.3, 3.2).
#include "batch.hpp"
#include "contexts.hpp"
#include "object_support.hpp"

#include "ndk/nd_result.hpp"
#include "ndk/nd_status.hpp"
#include "ndk/status.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <thread>
#include <type_traits>
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

std::string context_repr(const pyb::object &context)
{
    if (PyLong_Check(context.ptr()))
        return pyb::str(context).cast<std::string>(); // an IntEnum shows as its value too
    return pyb::repr(context).cast<std::string>();
}

std::string result_repr(const ResultObject &r)
{
    return "<ndk.Result " + status_name(r.raw.Status) + " bytes=" +
           std::to_string(r.raw.BytesTransferred) +
           " request_context=" + context_repr(r.request_context) + ">";
}

std::string result_ex_repr(const ResultExObject &r)
{
    const char *type = op_type_name(r.raw.Type);
    std::string text = "<ndk.ResultEx " + status_name(r.raw.Status) + " type=" +
                       (type ? type : std::to_string(r.raw.Type)) + " bytes=" +
                       std::to_string(r.raw.BytesTransferred) + " request_context=" +
                       context_repr(r.request_context);
    if (r.raw.ProviderErrorCode != 0)
        text += " provider_error_code=" + std::to_string(r.raw.ProviderErrorCode);
    return text + ">";
}

// A context from a pickle: the object itself, and as the raw value its int (0 for an object).
PVOID raw_context(const pyb::handle &context)
{
    uint64_t v = 0;
    if (PyLong_Check(context.ptr()) &&
        check_unsigned(context, 8 * sizeof(PVOID), &v) == ArgumentFailure::None)
        return reinterpret_cast<PVOID>(static_cast<uintptr_t>(v));
    return nullptr;
}

// ndk.Result and ndk.ResultEx are values: ==, hash, pickle and _asdict over their fields.
pyb::tuple result_state(const ResultObject &r)
{
    return pyb::make_tuple(static_cast<uint32_t>(r.raw.Status), r.raw.BytesTransferred,
                           r.qp_context, r.request_context);
}

pyb::tuple result_state(const ResultExObject &r)
{
    return pyb::make_tuple(static_cast<uint32_t>(r.raw.Status), r.raw.BytesTransferred,
                           r.qp_context, r.request_context, static_cast<int>(r.raw.Type),
                           r.raw.ProviderErrorCode, r.raw.TypeSpecificCompletionOutput);
}

template <class R>
R result_from(const pyb::tuple &state)
{
    R r;
    constexpr size_t size = std::is_same_v<R, ResultExObject> ? 7 : 4;
    if (state.size() != size)
        throw pyb::value_error("not a pickled ndk.Result/ndk.ResultEx");
    r.raw.Status = static_cast<NTSTATUS>(state[0].cast<uint32_t>());
    r.raw.BytesTransferred = state[1].cast<ULONG>();
    r.qp_context = state[2];
    r.request_context = state[3];
    r.raw.QPContext = raw_context(r.qp_context);
    r.raw.RequestContext = raw_context(r.request_context);
    if constexpr (std::is_same_v<R, ResultExObject>) {
        r.raw.Type = static_cast<NDK_OPERATION_TYPE>(state[4].cast<int>());
        r.raw.ProviderErrorCode = state[5].cast<ULONG>();
        r.raw.TypeSpecificCompletionOutput = state[6].cast<ULONG64>();
    }
    return r;
}

template <class R>
void add_value_protocol(pyb::class_<R> &cls, std::vector<const char *> fields)
{
    pyb::list names;
    for (const char *f : fields)
        names.append(f);
    cls.attr("_fields") = pyb::tuple(names);
    cls.def(
           "__eq__",
           [](const R &a, const pyb::object &b) -> pyb::object {
               if (!pyb::isinstance<R>(b))
                   return pyb::reinterpret_borrow<pyb::object>(Py_NotImplemented);
               return pyb::bool_(result_state(a).equal(result_state(b.cast<const R &>())));
           },
           pyb::is_operator())
        .def("__hash__", [](const R &r) { return pyb::hash(result_state(r)); })
        .def(
            "_asdict",
            [](const pyb::object &self) {
                pyb::dict out;
                for (auto name : self.attr("_fields"))
                    out[name] = self.attr(name);
                return out;
            },
            "The fields as a dict, as namedtuple's _asdict.")
        .def(pyb::pickle([](const R &r) { return result_state(r); },
                         [](const pyb::tuple &state) { return result_from<R>(state); }));
}

// Take `n` results, polling with the GIL released: a short spin (results usually follow a post
// within microseconds), then sleeps of ~30 us.  On timeout, TimeoutError names how many came
// and carries them as .results, since they are gone from the CQ.
template <class R, class Poll>
auto wait_for_results(const Cq &cq, ULONG n, const pyb::object &timeout, const char *what,
                      Poll poll)
{
    std::vector<R> got;
    got.reserve(std::min<ULONG>(n, 4096));
    poll_interruptibly(timeout_of(timeout), [&] {
        if (got.size() < n)
            poll(got, static_cast<ULONG>(n - got.size()));
        return got.size() >= n;
    });
    auto results = results_of(cq, std::span<const R>(got));
    if (got.size() < n) {
        pyb::list arrived = pyb::cast(results);
        std::string listing;
        for (auto item : arrived)
            listing += (listing.empty() ? "" : ", ") + pyb::repr(item).cast<std::string>();
        std::string message = "ndk.Cq.wait_results(): " + std::to_string(got.size()) + " of " +
                              std::to_string(n) + " results arrived within " +
                              pyb::str(timeout).cast<std::string>() + " s (polling " + what +
                              "): [" + listing + "]; if the adapter runs with "
                              "progress='manual', call adapter.step()";
        pyb::object error = pyb::reinterpret_borrow<pyb::object>(PyExc_TimeoutError)(message);
        error.attr("results") = arrived;
        PyErr_SetObject(PyExc_TimeoutError, error.ptr());
        throw pyb::error_already_set();
    }
    return results;
}

pyb::object wait_results(Cq &cq, ULONG n, const pyb::object &timeout, bool ex)
{
    if (ex)
        return pyb::cast(wait_for_results<NDK_RESULT_EX>(
            cq, n, timeout, "NdkGetCqResultsEx", [&cq](std::vector<NDK_RESULT_EX> &got, ULONG want) {
                NDK_RESULT_EX batch[64]{}; // zeroed: no field shows leftover memory
                ULONG k = cq.get_results_into(std::span(batch, std::min<ULONG>(want, 64)));
                got.insert(got.end(), batch, batch + k);
                return k;
            }));
    return pyb::cast(wait_for_results<NDK_RESULT>(
        cq, n, timeout, "NdkGetCqResults", [&cq](std::vector<NDK_RESULT> &got, ULONG want) {
            auto batch = cq.get_results(std::min<ULONG>(want, 64));
            got.insert(got.end(), batch.begin(), batch.end());
            return static_cast<ULONG>(batch.size());
        }));
}

// The GIL is released around the provider calls: another Python thread runs while one is in
// the provider (blocked there, e.g. by the soft provider's knob hold).
std::vector<ResultObject> get_results(Cq &cq, ULONG n)
{
    std::vector<NDK_RESULT> raw;
    {
        ReleasedGil released_gil;
        raw = cq.get_results(n);
    }
    return results_of(cq, std::span<const NDK_RESULT>(raw));
}

std::vector<ResultExObject> get_results_ex(Cq &cq, ULONG n)
{
    std::vector<NDK_RESULT_EX> raw;
    {
        ReleasedGil released_gil;
        raw = cq.get_results_ex(n);
    }
    return results_of(cq, std::span<const NDK_RESULT_EX>(raw));
}

// Result.nd_status / ResultEx.nd_status: an ndk.NdStatus (core/include/ndk/nd_status.hpp).
pyb::object nd_status(NTSTATUS status)
{
    return enum_of("NdStatus", static_cast<uint32_t>(nd_status_of(status).value));
}

// ResultEx.nd_result(posted_length): the ND_RESULT an ND consumer would have read, an
// ndk.NdResult (core/include/ndk/nd_result.hpp).  A Send, Read or Write that succeeded counts
// what was posted, which NDK_RESULT_EX does not carry (digest 2.3): without posted_length it is
// a ValueError naming that.
pyb::object nd_result(const NDK_RESULT_EX &raw, const pyb::object &posted_length)
{
    SIZE_T posted = 0;
    if (!posted_length.is_none())
        posted = posted_length.cast<SIZE_T>();
    else if (nd_result_counts_posted(raw.Type) && raw.Status == STATUS_SUCCESS)
        throw pyb::value_error(
            "nd_result: ND_RESULT.BytesTransferred of a Send, Read or Write is the length "
            "posted, which NDK_RESULT_EX does not carry (digest 2.3): pass posted_length=");
    const ND_RESULT result = nd_result_of(raw.Status, raw.Type, raw.BytesTransferred, posted);
    return package_attr("ndk._constants", "NdResult")(
        enum_of("NdResultStatus", static_cast<uint32_t>(result.Status)), result.BytesTransferred);
}

constexpr const char *kNdStatusDoc =
    "The ND SPI's equivalent of status, an ndk.NdStatus: the ND code of the same number "
    "(digest 4.1; ND_REMOTE_ERROR for STATUS_REMOTE_RESOURCES), ND_INTERNAL_ERROR for a "
    "status no ND code has (docs/semantics.md ND-NO-TWIN).";

} // namespace

void bind_cq(pyb::module_ &m)
{
    pyb::class_<ResultObject> result(m, "Result", R"doc(NDK_RESULT (digest 2.3).

qp_context and request_context are the objects given to create_qp and the post (an int given
comes back as that int; docs/architecture.md, "Contexts").  A value: ==, hash, pickle, _asdict().
)doc");
    result.def_property_readonly("status", [](const ResultObject &r) { return Status{r.raw.Status}; })
        .def_property_readonly(
            "nd_status", [](const ResultObject &r) { return nd_status(r.raw.Status); }, kNdStatusDoc)
        .def_property_readonly("bytes_transferred",
                               [](const ResultObject &r) { return r.raw.BytesTransferred; })
        .def_readonly("qp_context", &ResultObject::qp_context)
        .def_readonly("request_context", &ResultObject::request_context)
        .def("__repr__", &result_repr);
    add_value_protocol(result, {"status", "bytes_transferred", "qp_context", "request_context"});

    pyb::class_<ResultExObject> result_ex(m, "ResultEx", R"doc(NDK_RESULT_EX (digest 2.3, NDKPI 2.1 layout).

qp_context and request_context are the objects given to create_qp and the post (an int given
comes back as that int; docs/architecture.md, "Contexts").  A value: ==, hash, pickle, _asdict().
)doc");
    result_ex
        .def_property_readonly("status", [](const ResultExObject &r) { return Status{r.raw.Status}; })
        .def_property_readonly(
            "nd_status", [](const ResultExObject &r) { return nd_status(r.raw.Status); },
            kNdStatusDoc)
        .def_property_readonly("bytes_transferred",
                               [](const ResultExObject &r) { return r.raw.BytesTransferred; })
        .def_readonly("qp_context", &ResultExObject::qp_context)
        .def_readonly("request_context", &ResultExObject::request_context)
        .def_property_readonly(
            "type", [](const ResultExObject &r) { return enum_of("OpType", r.raw.Type); },
            "An ndk.OpType (a plain int if the provider reported no NDK_OPERATION_TYPE).")
        .def_property_readonly("provider_error_code",
                               [](const ResultExObject &r) { return r.raw.ProviderErrorCode; })
        .def_property_readonly(
            "type_specific_completion_output",
            [](const ResultExObject &r) { return r.raw.TypeSpecificCompletionOutput; })
        .def(
            "nd_result",
            [](const ResultExObject &r, const pyb::object &posted_length) {
                return nd_result(r.raw, posted_length);
            },
            pyb::arg("posted_length") = pyb::none(),
            R"doc(The ND_RESULT an ND (v1 SPI) consumer would have read: an ndk.NdResult, its status the
row of the seed's ten-row table (ndk.NdResultStatus: ND_TIMEOUT for a request that timed out,
ND_INVALID_REQUEST for an invalid parameter, ND_FAILURE for any other failure) and
bytes_transferred: a receive's count, posted_length for a Send, Read or Write that succeeded
(required then: NDK_RESULT_EX does not carry it), else 0 (core/include/ndk/nd_result.hpp;
docs/semantics.md ND-RESULT-V1-ROWS, ND-RESULT-BYTES).)doc")
        .def("__repr__", &result_ex_repr);
    add_value_protocol(result_ex, {"status", "bytes_transferred", "qp_context", "request_context",
                                   "type", "provider_error_code",
                                   "type_specific_completion_output"});

    object_class<Cq>(m, "Cq", "NDK_CQ: a completion queue (digest 1.3).")
        .def("resize_cq", &Cq::resize, pyb::call_guard<ReleasedGil>(), pyb::arg("cq_depth"),
             "NdkResizeCq -> Call.  Documented: SUCCESS; PENDING; INVALID_PARAMETER (cq_depth > "
             "MaxCqDepth); INSUFFICIENT_RESOURCES.  Needs NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED.")
        .def("arm_cq", &Cq::arm, pyb::arg("type"), pyb::call_guard<ReleasedGil>(),
             "NdkArmCq(NDK_CQ_NOTIFY_ERRORS / ANY / SOLICITED).")
        .def("arm", &Cq::arm, pyb::arg("type"), pyb::call_guard<ReleasedGil>(),
             "Alias of arm_cq.")
        .def("get_cq_results", &get_results, pyb::arg("n") = 1,
             "NdkGetCqResults: up to n NDK_RESULTs (non-blocking).")
        .def("get_results", &get_results, pyb::arg("n") = 1, "Alias of get_cq_results.")
        .def("get_cq_results_ex", &get_results_ex, pyb::arg("n") = 1,
             "NdkGetCqResultsEx: up to n NDK_RESULT_EXs (non-blocking).")
        .def("get_results_ex", &get_results_ex, pyb::arg("n") = 1,
             "Alias of get_cq_results_ex.")
        .def("wait_results", &wait_results, pyb::arg("n"), pyb::arg("timeout") = 1.0,
             pyb::arg("ex") = true,
             "Exactly n results: polls NdkGetCqResultsEx (NdkGetCqResults with ex=False) with "
             "the GIL released until n arrived, and returns them as ndk.ResultEx (ndk.Result).  "
             "After `timeout` seconds (None: no limit) raises TimeoutError saying how many "
             "arrived; they are listed in the message and in its .results.")
        .def(
            "control_cq_interrupt_moderation",
            [](Cq &cq, ULONG moderation_interval, ULONG moderation_count) {
                return Status{released([&] {
                    return cq.control_interrupt_moderation(moderation_interval, moderation_count);
                })};
            },
            pyb::arg("moderation_interval"), pyb::arg("moderation_count"),
            "NdkControlCqInterruptModeration -> Status (never PENDING).  Documented: SUCCESS; "
            "INSUFFICIENT_RESOURCES; NOT_SUPPORTED (adapter flag not set); INVALID_PARAMETER_MIX.")
        .def("wait_notification",
             [](Cq &cq, pyb::object timeout) { return wait_status_event(cq, cq.events().notifications, timeout); },
             pyb::arg("timeout") = pyb::none(),
             "The next NdkCqNotificationCallback status, or None after `timeout` seconds.  "
             "Notifications delivered before a close stay readable after it.")
        .def_property_readonly("notifications",
                               [](Cq &cq) { return cq.events().notifications.delivered(); },
                               "How many notification callbacks the provider made.")
        .def_property_readonly(
            "affinity",
            [](Cq &cq) -> pyb::object {
                const auto &a = cq.events().affinity;
                if (!a)
                    return pyb::none();
                return pyb::make_tuple(a->Mask, a->Group);
            },
            "NdkCreateCq's Affinity (GROUP_AFFINITY) as (Mask, Group), or None when the CQ "
            "was created without one: the processors its notification callbacks prefer.")
        .def_property_readonly(
            "notification_cpu",
            [](Cq &cq) -> pyb::object {
                int cpu = cq.events().notification_cpu.load();
                return cpu < 0 ? pyb::object(pyb::none()) : pyb::object(pyb::int_(cpu));
            },
            "The processor (sched_getcpu) the latest NdkCqNotificationCallback ran on, or None "
            "before the first: whether the provider honored the affinity.")
        .def("poll_into", &poll_into, pyb::arg("out"), pyb::arg("min_results") = 0,
             pyb::arg("timeout") = 1.0, pyb::arg("offset") = 0,
             R"doc(Poll NdkGetCqResultsEx straight into `out` -> the number of results written.

out: a writable C-contiguous array of 40-byte NDK_RESULT_EX records (Cq.result_array(n): a
numpy structured array with fields status, bytes_transferred, qp_context, request_context,
type, provider_error_code, type_specific_completion_output; or a bytearray of that layout,
struct format "<IIQQiIQ").  Results are written from record `offset` on, at most up to the
end of the array.  min_results=0 polls once without waiting; otherwise polls (GIL released,
no Python object per result) until at least min_results arrived or `timeout` seconds passed
(None: no limit), and returns how many arrived: fewer than min_results means the timeout.

qp_context and request_context stay the raw integers the provider returned: an object given
as a context shows as its handle there, and the binding lets go of the object (only
Cq.get_results* and wait_results give the objects back).)doc")
        .def_static("result_array", [](size_t n) { return new_array("result", n); },
                    pyb::arg("n"),
                    "A zeroed array of n NDK_RESULT_EX records for poll_into: numpy structured "
                    "(Cq.result_dtype()) when numpy is installed, else a bytearray of n * 40 "
                    "bytes.")
        .def_static("result_dtype", [] { return numpy_dtype("result"); },
                    "The numpy dtype of an NDK_RESULT_EX record as poll_into writes it (needs "
                    "numpy).")
        .def_property_readonly_static("RESULT_FORMAT", [](pyb::object) { return kResultFormat; },
                                      "The struct format of an NDK_RESULT_EX record.")
        .def("__repr__", [](const Cq &cq) { return object_repr(cq, "Cq"); });
}

} // namespace ndk::py
