// ndk.Qp: work-request posting (digest 1.7, 2.5, 3.3, 3.4).  Posts are inline: each returns
// the provider's status at once (the GIL released around the provider call), and a request
// that returned STATUS_SUCCESS completes later through the CQ.
#include "batch.hpp"
#include "contexts.hpp"
#include "object_support.hpp"

#include <pybind11/stl.h>

#include <vector>

namespace ndk::py {
namespace {

using Sgl = std::vector<NDK_SGE>;
using Context = pyb::object;

// Post with the GIL released: a provider may take its own locks, and a consumer thread
// polling the CQ must not wait for this one.  The request context is held from before the
// post until its completion is retrieved (contexts.hpp); `issue` gets the PVOID to pass.
template <class Post>
Status post(const Qp &qp, const Context &request_context, Post &&issue)
{
    HeldContext held(qp, request_context);
    NTSTATUS status;
    {
        ReleasedGil released_gil;
        status = issue(held.value());
    }
    held.posted(status == STATUS_SUCCESS ? 1 : 0);
    return Status{status};
}

Object &mr_or_mw(const std::shared_ptr<Object> &object)
{
    auto type = object->type();
    if (type != NdkObjectTypeMr && type != NdkObjectTypeMw)
        throw pyb::type_error("invalidate takes an ndk.Mr or an ndk.Mw (NdkInvalidate's "
                              "pNdkMrOrMw), not an object of type " +
                              pyb::str(enum_of("ObjectType", type)).cast<std::string>());
    return *object;
}

std::vector<NDK_LOGICAL_ADDRESS> page_array_of(const std::vector<uint64_t> &pages)
{
    std::vector<NDK_LOGICAL_ADDRESS> array(pages.size());
    for (size_t i = 0; i < pages.size(); ++i)
        array[i].QuadPart = static_cast<LONGLONG>(pages[i]);
    return array;
}

} // namespace

void bind_qp(pyb::module_ &m)
{
    object_class<Qp>(m, "Qp", R"doc(NDK_QP: a queue pair (digest 1.7).

Posts return ndk.Status inline; a post that returned SUCCESS completes later through the CQ
(cq.wait_results).  sgl is a list of ndk.Sge (mr.sge(offset, length)); request_context is any
object, returned in the result: an int as is (0, the default, is NULL), any other object, None
included, as the same object, held until its completion is retrieved (docs/architecture.md,
"Contexts"); flags are ndk.OpFlag values.
)doc")
        .def("flush", &Qp::flush, pyb::call_guard<ReleasedGil>(),
             "NdkFlush: pending requests on both queues complete with STATUS_CANCELLED.")
        .def(
            "receive",
            [](Qp &qp, const Sgl &sgl, Context request_context) {
                return post(qp, request_context, [&](PVOID context) { return qp.receive(context, sgl); });
            },
            pyb::arg("sgl"), pyb::arg("request_context") = 0,
            "NdkReceive -> Status.  Documented: SUCCESS; other.")
        .def(
            "send",
            [](Qp &qp, const Sgl &sgl, ULONG flags, Context request_context) {
                return post(qp, request_context, [&](PVOID context) { return qp.send(context, sgl, flags); });
            },
            pyb::arg("sgl"), pyb::arg("flags") = 0, pyb::arg("request_context") = 0,
            "NdkSend -> Status.  Flags: SILENT_SUCCESS, READ_FENCE, SEND_AND_SOLICIT_EVENT, "
            "INLINE, DEFER.  Documented: SUCCESS; CONNECTION_INVALID (QP not connected); other.")
        .def(
            "send_and_invalidate",
            [](Qp &qp, const Sgl &sgl, UINT32 remote_token, ULONG flags, Context request_context) {
                return post(qp, request_context, [&](PVOID context) {
                    return qp.send_and_invalidate(context, sgl, flags,
                                                  remote_token);
                });
            },
            pyb::arg("sgl"), pyb::arg("remote_token"), pyb::arg("flags") = 0,
            pyb::arg("request_context") = 0,
            "NdkSendAndInvalidate -> Status (the peer's receive completes as "
            "RECEIVE_AND_INVALIDATE; ours as SEND).  Documented: SUCCESS; CONNECTION_INVALID; "
            "other.")
        .def(
            "read",
            [](Qp &qp, const Sgl &sgl, UINT64 remote_address, UINT32 remote_token, ULONG flags,
               Context request_context) {
                return post(qp, request_context, [&](PVOID context) {
                    return qp.read(context, sgl, remote_address, remote_token,
                                   flags);
                });
            },
            pyb::arg("sgl"), pyb::arg("remote_address"), pyb::arg("remote_token"),
            pyb::arg("flags") = 0, pyb::arg("request_context") = 0,
            "NdkRead -> Status: read the peer's [remote_address, +length) into sgl.  Flags: "
            "SILENT_SUCCESS, READ_FENCE, RDMA_READ_LOCAL_INVALIDATE, DEFER.  Documented: SUCCESS; "
            "CONNECTION_INVALID; REMOTE_RESOURCES (beyond the remote memory); other.")
        .def(
            "write",
            [](Qp &qp, const Sgl &sgl, UINT64 remote_address, UINT32 remote_token, ULONG flags,
               Context request_context) {
                return post(qp, request_context, [&](PVOID context) {
                    return qp.write(context, sgl, remote_address,
                                    remote_token, flags);
                });
            },
            pyb::arg("sgl"), pyb::arg("remote_address"), pyb::arg("remote_token"),
            pyb::arg("flags") = 0, pyb::arg("request_context") = 0,
            "NdkWrite -> Status: write sgl to the peer's remote_address.  Flags: SILENT_SUCCESS, "
            "READ_FENCE, DEFER.  Documented: SUCCESS; CONNECTION_INVALID; other.")
        .def(
            "bind",
            [](Qp &qp, const std::shared_ptr<Mr> &mr, const std::shared_ptr<Mw> &mw,
               uintptr_t virtual_address, SIZE_T length, ULONG flags, Context request_context) {
                return post(qp, request_context, [&](PVOID context) {
                    return qp.bind(context, mr, mw,
                                   reinterpret_cast<PVOID>(virtual_address), length, flags);
                });
            },
            pyb::arg("mr").none(false), pyb::arg("mw").none(false), pyb::arg("virtual_address"),
            pyb::arg("length"), pyb::arg("flags") = 0, pyb::arg("request_context") = 0,
            "NdkBind -> Status: bind mw to [virtual_address, +length) of mr (the MW then holds "
            "the MR alive).  Flags: SILENT_SUCCESS, READ_FENCE, ALLOW_REMOTE_READ, "
            "ALLOW_REMOTE_WRITE, DEFER.  Documented: SUCCESS; CONNECTION_INVALID; "
            "ACCESS_VIOLATION (the MR does not allow the access); other.")
        .def(
            "fast_register",
            [](Qp &qp, const std::shared_ptr<Mr> &mr, const std::vector<uint64_t> &adapter_page_array,
               ULONG fbo, SIZE_T length, uintptr_t base_virtual_address, ULONG flags,
               Context request_context) {
                auto pages = page_array_of(adapter_page_array);
                if (pages.size() > MAXULONG)
                    throw pyb::value_error("adapter_page_array has more pages than a ULONG counts");
                return post(qp, request_context, [&](PVOID context) {
                    return qp.fast_register(context, *mr, pages, fbo, length,
                                            reinterpret_cast<PVOID>(base_virtual_address), flags);
                });
            },
            pyb::arg("mr").none(false), pyb::arg("adapter_page_array"), pyb::arg("fbo"),
            pyb::arg("length"), pyb::arg("base_virtual_address"), pyb::arg("flags") = 0,
            pyb::arg("request_context") = 0,
            "NdkFastRegister -> Status: map a fast-register MR onto adapter_page_array (a list "
            "of logical page addresses; AdapterPageCount is its length) from byte fbo.  Flags: "
            "SILENT_SUCCESS, READ_FENCE, ALLOW_REMOTE_READ, ALLOW_LOCAL_WRITE, "
            "ALLOW_REMOTE_WRITE, DEFER.  Documented: SUCCESS; CONNECTION_INVALID; "
            "ACCESS_VIOLATION (remote flags, MR initialized without RemoteAccess); other.")
        .def(
            "invalidate",
            [](Qp &qp, const std::shared_ptr<Object> &mr_or_mw_object, ULONG flags,
               Context request_context) {
                Object &target = mr_or_mw(mr_or_mw_object);
                return post(qp, request_context, [&](PVOID context) { return qp.invalidate(context, target, flags); });
            },
            pyb::arg("mr_or_mw").none(false), pyb::arg("flags") = 0,
            pyb::arg("request_context") = 0,
            "NdkInvalidate -> Status: invalidate a fast-registered MR or a bound MW.  Flags: "
            "SILENT_SUCCESS, READ_FENCE, DEFER.  Documented: SUCCESS; CONNECTION_INVALID; other.")
        .def("post_many", &post_many, pyb::arg("op"), pyb::arg("requests"),
             pyb::arg("flags") = 0, pyb::arg("remote_address") = pyb::none(),
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
(the request at index `posted` was not posted).)doc")
        .def_static("request_array", [](size_t n) { return new_array("request", n); },
                    pyb::arg("n"),
                    "A zeroed array of n post_many request records: numpy structured "
                    "(Qp.request_dtype()) when numpy is installed, else a bytearray of n * 40 "
                    "bytes.")
        .def_static("request_dtype", [] { return numpy_dtype("request"); },
                    "The numpy dtype of a post_many request record (needs numpy).")
        .def_property_readonly_static("REQUEST_FORMAT", [](pyb::object) { return kRequestFormat; },
                                      "The struct format of a post_many request record.")
        .def("__repr__", [](const Qp &qp) { return object_repr(qp, "Qp"); });
}

} // namespace ndk::py
