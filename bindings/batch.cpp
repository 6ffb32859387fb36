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
// bind_qp.cpp and bind_cq.cpp bind these as methods of ndk.Qp and ndk.Cq (batch.hpp).
#include "batch.hpp"

#include "contexts.hpp"
#include "object_support.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <cstddef>
#include <cstring>

namespace ndk::py {

static_assert(sizeof(NDK_RESULT_EX) == 40 && offsetof(NDK_RESULT_EX, Type) == 24 &&
              offsetof(NDK_RESULT_EX, TypeSpecificCompletionOutput) == 32);

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

namespace {

bool numpy_installed()
{
    return !pyb::module_::import("importlib.util").attr("find_spec")("numpy").is_none();
}

} // namespace

pyb::object new_array(const char *which, size_t n)
{
    try {
        pyb::module_ np = pyb::module_::import("numpy");
        return np.attr("zeros")(n, numpy_dtype(which));
    } catch (const pyb::error_already_set &e) {
        // Bytes stand in only for a numpy that is not installed.  An installed one that fails
        // to import is the caller's to see: a Ctrl-C during numpy's first import comes out of
        // it as ImportError ("numpy.core.multiarray failed to import", the KeyboardInterrupt
        // printed and gone), and going on with bytes would leave a later wait deaf to it.
        if (!e.matches(PyExc_ImportError) || numpy_installed())
            throw;
        return pyb::bytearray(std::string(n * 40, '\0'));
    }
}

namespace {

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

BatchOp op_of(const pyb::object &op)
{
    if (pyb::isinstance<pyb::str>(op)) {
        auto name = op.cast<std::string>();
        if (name == "send")
            return BatchOp::Send;
        if (name == "receive")
            return BatchOp::Receive;
        if (name == "write")
            return BatchOp::Write;
        if (name == "read")
            return BatchOp::Read;
    } else if (pyb::isinstance<pyb::int_>(op)) {
        switch (op.cast<long>()) {
        case NdkOperationTypeSend: return BatchOp::Send;
        case NdkOperationTypeReceive: return BatchOp::Receive;
        case NdkOperationTypeWrite: return BatchOp::Write;
        case NdkOperationTypeRead: return BatchOp::Read;
        default: break;
        }
    }
    throw pyb::value_error("post_many: op is 'send', 'receive', 'write' or 'read' (or the "
                           "ndk.OpType of one), not " + pyb::repr(op).cast<std::string>());
}

} // namespace

pyb::tuple post_many(Qp &qp, const pyb::object &op_object, const pyb::object &requests,
                     ULONG flags, std::optional<UINT64> remote_address,
                     std::optional<UINT32> remote_token, const pyb::object &request_context)
{
    BatchOp op = op_of(op_object);
    BatchOutcome outcome;
    if (pyb::isinstance<pyb::list>(requests) || pyb::isinstance<pyb::tuple>(requests)) {
        // A sequence of ndk.Sge: one single-SGE request each, with the keyword arguments.
        auto seq = pyb::reinterpret_borrow<pyb::sequence>(requests);
        std::vector<BatchRequest> list(seq.size());
        for (size_t i = 0; i < list.size(); ++i) {
            pyb::object item = seq[i];
            if (!pyb::isinstance<NDK_SGE>(item))
                throw pyb::type_error("ndk.Qp.post_many(): requests[" + std::to_string(i) +
                                      "] must be an ndk.Sge (requests: a list of ndk.Sge or an "
                                      "array of request records), not " +
                                      std::string(Py_TYPE(item.ptr())->tp_name));
            const auto &sge = item.cast<const NDK_SGE &>();
            list[i] = BatchRequest{0,
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
        outcome = released([&] { return qp.post_batch(op, list, flags); });
        held.posted(outcome.posted);
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
        // A span, not a structured binding: a lambda captures those only from C++20 on, and
        // clang 14 (the fuzz tree's compiler) does not take them yet.
        auto [list, n] = records<const BatchRequest>(*info, "post_many");
        std::span<const BatchRequest> requests_span(list, n);
        outcome = released([&] { return qp.post_batch(op, requests_span, flags); });
    }
    return pyb::make_tuple(outcome.posted, Status{outcome.status});
}

size_t poll_into(Cq &cq, const pyb::buffer &out, size_t min_results, const pyb::object &timeout,
                 size_t offset)
{
    auto info = contiguous_buffer(out, true);
    check_record_type(out, *info, "result", "ndk.Cq.poll_into(): out");
    auto [records_at, count] = records<NDK_RESULT_EX>(*info, "poll_into");
    NDK_RESULT_EX *array = records_at; // named variables: lambdas below capture them (clang 14)
    size_t n = count;
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

} // namespace ndk::py
