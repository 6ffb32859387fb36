// Batch calls for the data path from Python: many posts in one call (ndk.Qp.post_many) and
// completions polled straight into a preallocated array (ndk.Cq.poll_into), each with the GIL
// released around the whole provider loop and no Python object per request or completion.
//
// Layouts (little-endian, no padding between records):
//   a request, 40 bytes: request_context u64 @0, address u64 @8, length u32 @16, token u32 @20,
//     remote_address u64 @24, remote_token u32 @32, flags u32 @36     (struct "<QQIIQII")
//   a result, 40 bytes: NDK_RESULT_EX as ndkpi.h pins it: status u32 @0 (the NTSTATUS bits), bytes_transferred u32
//     @4, qp_context u64 @8, request_context u64 @16, type i32 @24, provider_error_code u32
//     @28, type_specific_completion_output u64 @32                   (struct "<IIQQiIQ")
// With numpy, Qp.request_array(n) / Cq.result_array(n) give structured arrays of these dtypes;
// without it, bytearrays of n records (the same layout) work everywhere an array does.
//
// These methods are added to the classes bind_qp.cpp and bind_cq.cpp register, from here, so
// the two stay separate.
#include "contexts.hpp"
#include "object_support.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <thread>

namespace ndk::py {
namespace {

struct Request {
    uint64_t request_context;
    uint64_t address;
    uint32_t length;
    uint32_t token;
    uint64_t remote_address;
    uint32_t remote_token;
    uint32_t flags;
};
static_assert(sizeof(Request) == 40 && offsetof(Request, remote_address) == 24 &&
              offsetof(Request, flags) == 36);
static_assert(sizeof(NDK_RESULT_EX) == 40 && offsetof(NDK_RESULT_EX, Type) == 24 &&
              offsetof(NDK_RESULT_EX, TypeSpecificCompletionOutput) == 32);

constexpr const char *kRequestFormat = "<QQIIQII";
constexpr const char *kResultFormat = "<IIQQiIQ";

pyb::object numpy_dtype(const char *which)
{
    pyb::module_ np = pyb::module_::import("numpy");
    pyb::list fields;
    auto field = [&](const char *name, const char *type) {
        fields.append(pyb::make_tuple(name, type));
    };
    if (std::strcmp(which, "request") == 0) {
        field("request_context", "<u8");
        field("address", "<u8");
        field("length", "<u4");
        field("token", "<u4");
        field("remote_address", "<u8");
        field("remote_token", "<u4");
        field("flags", "<u4");
    } else {
        field("status", "<u4"); // NTSTATUS as the unsigned value ndk.Status uses
        field("bytes_transferred", "<u4");
        field("qp_context", "<u8");
        field("request_context", "<u8");
        field("type", "<i4");
        field("provider_error_code", "<u4");
        field("type_specific_completion_output", "<u8");
    }
    return np.attr("dtype")(fields);
}

// A new array of n records: numpy structured when numpy imports, else a bytearray.
pyb::object new_array(const char *which, size_t n)
{
    try {
        pyb::module_ np = pyb::module_::import("numpy");
        return np.attr("zeros")(n, numpy_dtype(which));
    } catch (const pyb::error_already_set &e) {
        if (!e.matches(PyExc_ImportError))
            throw;
        return pyb::bytearray(std::string(n * 40, '\0'));
    }
}

// An array of records is either typed as them (numpy: exactly the dtype numpy_dtype(which)
// gives) or untyped bytes (bytearray, bytes, a memoryview of bytes): a float64 array of the
// right length is a mistake, not records.
void check_record_type(const pyb::handle &array, const pyb::buffer_info &info, const char *which,
                       const char *what)
{
    const char *dtype_call = std::strcmp(which, "request") == 0 ? "Qp.request_dtype()"
                                                                : "Cq.result_dtype()";
    const char *format = std::strcmp(which, "request") == 0 ? kRequestFormat : kResultFormat;
    if (pyb::hasattr(array, "dtype")) {
        pyb::object dtype = array.attr("dtype");
        if (pyb::hasattr(dtype, "names") && !dtype.attr("names").is_none() &&
            dtype.equal(numpy_dtype(which)))
            return;
        throw pyb::type_error(std::string(what) + ": expected an array of dtype " + dtype_call +
                              " (" + pyb::str(numpy_dtype(which)).cast<std::string>() +
                              "), not dtype " + pyb::str(dtype).cast<std::string>());
    }
    const std::string &f = info.format;
    if (info.itemsize == 1 && (f == "B" || f == "b" || f == "c"))
        return;
    throw pyb::type_error(std::string(what) + ": expected records of dtype " + dtype_call +
                          " (struct \"" + format + "\", 40 bytes each) or a bytes-like buffer of "
                          "them, not a buffer of format '" + f + "' (" +
                          std::to_string(info.itemsize) + "-byte items)");
}

// The records of a buffer: C-contiguous, a whole number of 40-byte records, 8-byte aligned.
template <class T>
std::pair<T *, size_t> records(const pyb::buffer_info &info, const char *what)
{
    size_t bytes = static_cast<size_t>(info.size) * static_cast<size_t>(info.itemsize);
    if (bytes % 40 != 0)
        throw pyb::value_error(std::string(what) + ": the buffer holds " + std::to_string(bytes) +
                               " bytes, not a whole number of 40-byte records");
    if (reinterpret_cast<uintptr_t>(info.ptr) % alignof(T) != 0)
        throw pyb::value_error(std::string(what) + ": the buffer is not 8-byte aligned");
    return {static_cast<T *>(info.ptr), bytes / 40};
}

enum class Op { Send, Receive, Write, Read };

Op op_of(const pyb::object &op)
{
    if (pyb::isinstance<pyb::str>(op)) {
        auto name = op.cast<std::string>();
        if (name == "send")
            return Op::Send;
        if (name == "receive")
            return Op::Receive;
        if (name == "write")
            return Op::Write;
        if (name == "read")
            return Op::Read;
    } else if (pyb::isinstance<pyb::int_>(op)) {
        switch (op.cast<long>()) {
        case NdkOperationTypeSend: return Op::Send;
        case NdkOperationTypeReceive: return Op::Receive;
        case NdkOperationTypeWrite: return Op::Write;
        case NdkOperationTypeRead: return Op::Read;
        default: break;
        }
    }
    throw pyb::value_error("post_many: op is 'send', 'receive', 'write' or 'read' (or the "
                           "ndk.OpType of one), not " + pyb::repr(op).cast<std::string>());
}

NTSTATUS post_one(NDK_QP *qp, Op op, const Request &r, ULONG flags)
{
    NDK_SGE sge{};
    sge.VirtualAddress = reinterpret_cast<PVOID>(static_cast<uintptr_t>(r.address));
    sge.Length = r.length;
    sge.MemoryRegionToken = r.token;
    auto *context = reinterpret_cast<PVOID>(static_cast<uintptr_t>(r.request_context));
    ULONG f = flags | r.flags;
    ULONG n = r.length == 0 && r.address == 0 ? 0 : 1; // an all-zero SGE: no SGL at all
    const NDK_QP_DISPATCH &d = *qp->Dispatch;
    switch (op) {
    case Op::Send: return d.NdkSend(qp, context, &sge, n, f);
    case Op::Receive: return d.NdkReceive(qp, context, &sge, n);
    case Op::Write: return d.NdkWrite(qp, context, &sge, n, r.remote_address, r.remote_token, f);
    case Op::Read: return d.NdkRead(qp, context, &sge, n, r.remote_address, r.remote_token, f);
    }
    return STATUS_INVALID_PARAMETER;
}

pyb::tuple post_many(Qp &qp, const pyb::object &op_object, const pyb::object &requests,
                     ULONG flags, std::optional<UINT64> remote_address,
                     std::optional<UINT32> remote_token, const pyb::object &request_context)
{
    Op op = op_of(op_object);
    auto in_call = qp.enter(); // the QP is not closed under the posts (InCall)
    NDK_QP *raw = qp.ndk();
    size_t posted = 0;
    NTSTATUS status = STATUS_SUCCESS;
    if (pyb::isinstance<pyb::list>(requests) || pyb::isinstance<pyb::tuple>(requests)) {
        // A sequence of ndk.Sge: one single-SGE request each, with the keyword arguments.
        auto seq = pyb::reinterpret_borrow<pyb::sequence>(requests);
        std::vector<Request> list(seq.size());
        for (size_t i = 0; i < list.size(); ++i) {
            pyb::object item = seq[i];
            if (!pyb::isinstance<NDK_SGE>(item))
                throw pyb::type_error("ndk.Qp.post_many(): requests[" + std::to_string(i) +
                                      "] must be an ndk.Sge (requests: a list of ndk.Sge or an "
                                      "array of request records), not " +
                                      std::string(Py_TYPE(item.ptr())->tp_name));
            const auto &sge = item.cast<const NDK_SGE &>();
            list[i] = Request{0,
                              reinterpret_cast<uintptr_t>(sge.VirtualAddress),
                              sge.Length,
                              sge.MemoryRegionToken,
                              remote_address.value_or(0),
                              remote_token.value_or(0),
                              0};
        }
        // The same context for every request: held once per request (contexts.hpp).
        HeldContext held(qp, request_context, "request_context", list.size());
        for (auto &r : list)
            r.request_context = reinterpret_cast<uintptr_t>(held.value());
        {
            ReleasedGil released_gil;
            for (; posted < list.size(); ++posted)
                if ((status = post_one(raw, op, list[posted], flags)) != STATUS_SUCCESS)
                    break;
        }
        held.posted(posted);
    } else {
        bool no_context = PyLong_Check(request_context.ptr()) &&
                          PyObject_Not(request_context.ptr()) == 1; // the default, 0
        if (remote_address || remote_token || !no_context)
            throw pyb::type_error("post_many: remote_address, remote_token and request_context "
                                  "go with a list of ndk.Sge; an array carries them per record");
        if (!PyObject_CheckBuffer(requests.ptr()))
            throw pyb::type_error("ndk.Qp.post_many(): requests must be a list of ndk.Sge or an "
                                  "array of request records (Qp.request_array(n)), not " +
                                  std::string(Py_TYPE(requests.ptr())->tp_name));
        auto info = contiguous_buffer(pyb::reinterpret_borrow<pyb::buffer>(requests));
        check_record_type(requests, *info, "request", "ndk.Qp.post_many(): requests");
        auto [list, n] = records<const Request>(*info, "post_many");
        ReleasedGil released_gil;
        for (; posted < n; ++posted)
            if ((status = post_one(raw, op, list[posted], flags)) != STATUS_SUCCESS)
                break;
    }
    return pyb::make_tuple(posted, Status{status});
}

size_t poll_into(Cq &cq, const pyb::buffer &out, size_t min_results, const pyb::object &timeout,
                 size_t offset)
{
    auto info = contiguous_buffer(out, true);
    check_record_type(out, *info, "result", "ndk.Cq.poll_into(): out");
    auto [array, n] = records<NDK_RESULT_EX>(*info, "poll_into");
    if (offset > n)
        throw pyb::value_error("poll_into: offset beyond the array");
    array += offset;
    n -= offset;
    if (min_results > n)
        throw pyb::value_error("poll_into: min_results is larger than the room in the array");
    auto limit = min_results == 0 ? std::chrono::duration<double>(0) : timeout_of(timeout);
    size_t got = 0;
    poll_interruptibly(limit, [&] {
        got += cq.get_results_into(std::span(array + got, n - got));
        return got >= min_results || got == n;
    });
    // The array keeps the raw values; the objects they stood for are let go (contexts.hpp).
    forget_contexts(cq, std::span<const NDK_RESULT_EX>(array, got));
    return got;
}

} // namespace

void bind_batch(pyb::module_ &m)
{
    pyb::object qp_class = m.attr("Qp");
    pyb::object cq_class = m.attr("Cq");

    qp_class.attr("post_many") = pyb::cpp_function(
        &post_many, pyb::name("post_many"), pyb::is_method(qp_class),
        pyb::sibling(pyb::getattr(qp_class, "post_many", pyb::none())), pyb::arg("op"),
        pyb::arg("requests"), pyb::arg("flags") = 0, pyb::arg("remote_address") = pyb::none(),
        pyb::arg("remote_token") = pyb::none(), pyb::arg("request_context") = 0,
        R"doc(Post many requests of one kind in one call -> (posted: int, status: ndk.Status).

op: 'send', 'receive', 'write' or 'read' (or ndk.OpType.SEND / RECEIVE / WRITE / READ).
requests: an array of 40-byte request records (Qp.request_array(n): a numpy structured array
with fields request_context, address, length, token, remote_address, remote_token, flags; or
any writable/readable C-contiguous buffer of that layout, struct format "<QQIIQII"), one
single-SGE NdkSend / NdkReceive / NdkWrite / NdkRead each (address 0 with length 0: no SGE);
or a list of ndk.Sge, each one request, with remote_address, remote_token and request_context
(any object, as for Qp.send; default 0) the same for all.  An array's request_context fields
are raw ints, passed as they are.  flags (ndk.OpFlag) are OR-ed into every request's flags.

The provider is called with the GIL released, in order, stopping at the first post that does
not return SUCCESS: `posted` requests were posted, `status` is SUCCESS or that post's status
(the request at index `posted` was not posted).)doc");

    qp_class.attr("request_array") = pyb::staticmethod(pyb::cpp_function(
        [](size_t n) { return new_array("request", n); }, pyb::name("request_array"),
        pyb::arg("n"),
        "A zeroed array of n post_many request records: numpy structured (Qp.request_dtype()) "
        "when numpy is installed, else a bytearray of n * 40 bytes."));
    qp_class.attr("request_dtype") = pyb::staticmethod(pyb::cpp_function(
        [] { return numpy_dtype("request"); }, pyb::name("request_dtype"),
        "The numpy dtype of a post_many request record (needs numpy)."));
    qp_class.attr("REQUEST_FORMAT") = kRequestFormat;

    cq_class.attr("poll_into") = pyb::cpp_function(
        &poll_into, pyb::name("poll_into"), pyb::is_method(cq_class),
        pyb::sibling(pyb::getattr(cq_class, "poll_into", pyb::none())), pyb::arg("out"),
        pyb::arg("min_results") = 0, pyb::arg("timeout") = 1.0, pyb::arg("offset") = 0,
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
Cq.get_results* and wait_results give the objects back).)doc");

    cq_class.attr("result_array") = pyb::staticmethod(pyb::cpp_function(
        [](size_t n) { return new_array("result", n); }, pyb::name("result_array"),
        pyb::arg("n"),
        "A zeroed array of n NDK_RESULT_EX records for poll_into: numpy structured "
        "(Cq.result_dtype()) when numpy is installed, else a bytearray of n * 40 bytes."));
    cq_class.attr("result_dtype") = pyb::staticmethod(pyb::cpp_function(
        [] { return numpy_dtype("result"); }, pyb::name("result_dtype"),
        "The numpy dtype of an NDK_RESULT_EX record as poll_into writes it (needs numpy)."));
    cq_class.attr("RESULT_FORMAT") = kResultFormat;
}

} // namespace ndk::py
