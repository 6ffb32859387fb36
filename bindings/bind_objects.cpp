// ndk.Object (the base of every handle), Sge, Mdl; ndk.Pd, Mr, Mw, Srq, SharedEndpoint.  (The
// CQ, QP, connector and listener have their own files.)  Methods are the NDK functions in
// snake_case; keyword arguments are the NDK parameter names in snake_case without prefixes.
#include "contexts.hpp"
#include "mdl.hpp"
#include "object_support.hpp"

#include "ndk/status.hpp"
#include "providers/kit/kit_mr_checks.hpp"

#include <pybind11/stl.h>

#include <cstring>
#include <mutex>
#include <sstream>
#include <unordered_map>

namespace ndk::py {
namespace {

pyb::tuple sge_state(const NDK_SGE &s)
{
    return pyb::make_tuple(context_value(s.VirtualAddress), s.Length, s.MemoryRegionToken);
}

// NdkCloseXxx with the GIL released (the provider may block, e.g. under knob hold).  What the
// object held for the provider (an MR's registered buffer) is let go as the close completes
// (Object::held_until_closed); a buffer dropped meanwhile without the GIL is released here, so
// `mr.close(); buf.clear()` works once the close returned SUCCESS.
Call close_object(Object &object)
{
    Call call = released([&] { return object.close(); });
    let_go_now();
    return call;
}

// NdkDeregisterMr, letting go of the buffer the same way once it returned SUCCESS.
Call deregister_mr(Mr &mr)
{
    Call call = released([&] { return mr.deregister(); });
    let_go_now();
    return call;
}

// Whether a create's qp_context stays held: the create returned SUCCESS or PENDING.
size_t created_or_pending(const Call &call)
{
    return call.status() == STATUS_SUCCESS || call.status() == STATUS_PENDING ? 1 : 0;
}

Status srq_receive(Srq &srq, const std::vector<NDK_SGE> &sgl, const pyb::object &request_context)
{
    HeldContext held(srq, request_context);
    NTSTATUS status;
    {
        ReleasedGil released_gil;
        status = srq.receive(held.value(), sgl);
    }
    held.posted(status == STATUS_SUCCESS ? 1 : 0);
    return Status{status};
}

} // namespace

void bind_object_base(pyb::module_ &m)
{
    pyb::class_<NDK_SGE> sge_class(m, "Sge", "NDK_SGE: one scatter/gather element (digest 2.4).  "
                                             "A value: ==, hash, pickle, _fields, _asdict().");
    sge_class.attr("_fields") =
        pyb::make_tuple("virtual_address", "length", "memory_region_token");
    sge_class
        .def(pyb::init([](uintptr_t virtual_address, ULONG length, UINT32 memory_region_token) {
                 NDK_SGE sge{};
                 sge.VirtualAddress = reinterpret_cast<PVOID>(virtual_address);
                 sge.Length = length;
                 sge.MemoryRegionToken = memory_region_token;
                 return sge;
             }),
             pyb::arg("virtual_address"), pyb::arg("length"), pyb::arg("memory_region_token"))
        .def_property_readonly("virtual_address",
                               [](const NDK_SGE &s) { return context_value(s.VirtualAddress); })
        .def_readonly("length", &NDK_SGE::Length)
        .def_readonly("memory_region_token", &NDK_SGE::MemoryRegionToken)
        .def(
            "__eq__",
            [](const NDK_SGE &a, const pyb::object &b) -> pyb::object {
                if (!pyb::isinstance<NDK_SGE>(b))
                    return pyb::reinterpret_borrow<pyb::object>(Py_NotImplemented);
                return pyb::bool_(sge_state(a).equal(sge_state(b.cast<const NDK_SGE &>())));
            },
            pyb::is_operator())
        .def("__hash__", [](const NDK_SGE &s) { return pyb::hash(sge_state(s)); })
        .def(
            "_asdict",
            [](const NDK_SGE &s) {
                pyb::dict out;
                out["virtual_address"] = context_value(s.VirtualAddress);
                out["length"] = s.Length;
                out["memory_region_token"] = s.MemoryRegionToken;
                return out;
            },
            "The fields as a dict, as namedtuple's _asdict.")
        .def(pyb::pickle(&sge_state, [](const pyb::tuple &state) {
            if (state.size() != 3)
                throw pyb::value_error("not a pickled ndk.Sge");
            NDK_SGE sge{};
            sge.VirtualAddress = reinterpret_cast<PVOID>(state[0].cast<uintptr_t>());
            sge.Length = state[1].cast<ULONG>();
            sge.MemoryRegionToken = state[2].cast<UINT32>();
            return sge;
        }))
        .def("__repr__", [](const NDK_SGE &s) {
            std::ostringstream out;
            out << "<ndk.Sge 0x" << std::hex << context_value(s.VirtualAddress) << std::dec
                << " length=" << s.Length << " token=0x" << std::hex << s.MemoryRegionToken << ">";
            return out.str();
        });

    pyb::class_<PyMdl>(m, "Mdl", R"doc(
An MDL chain over a Python buffer (the kernel's MDL, as a user-space stand-in, digest 1.4).
Mdl(buffer) describes the whole buffer; Mdl(buffer, [(offset, length), ...]) one element per
segment, in order, so a chain that is not virtually contiguous can be built on purpose.
The buffer stays alive as long as the Mdl (and any registration using it).
)doc")
        .def(pyb::init([](const pyb::buffer &buffer,
                          std::optional<std::vector<std::pair<size_t, size_t>>> segments) {
                 return make_mdl(buffer, std::move(segments));
             }),
             pyb::arg("buffer"), pyb::arg("segments") = pyb::none())
        .def_readonly("total_length", &PyMdl::total)
        .def("__len__", [](const PyMdl &mdl) { return mdl.chain.size(); })
        .def("__repr__", [](const PyMdl &mdl) {
            return "<ndk.Mdl segments=" + std::to_string(mdl.chain.size()) +
                   " total_length=" + std::to_string(mdl.total) + ">";
        });

    pyb::class_<Object, std::shared_ptr<Object>>(m, "Object", "Base of every NDK object handle.")
        .def("close", &close_object,
             "NdkCloseXxx -> Call.  SUCCESS (closed, no callback) or PENDING (the completion "
             "comes once successors are closed and requests completed, digest 3.1).")
        .def_property_readonly("is_open", &Object::is_open)
        .def_property_readonly("closed", [](const Object &o) { return !o.is_open(); })
        .def_property_readonly("object_type",
                               [](const Object &o) { return enum_of("ObjectType", o.type()); })
        .def_property_readonly("version", [](const Object &o) {
            o.check_open();
            return std::make_pair(o.header()->Version.Major, o.header()->Version.Minor);
        }, "NDK_OBJECT_HEADER.Version as the provider set it.")
        .def_property_readonly("adapter", &Object::adapter)
        .def("__enter__", [](std::shared_ptr<Object> o) { return o; })
        .def("__exit__", [](Object &o, pyb::args) {
            if (o.is_open())
                close_object(o);
        });

}

void bind_objects(pyb::module_ &m)
{
    object_class<Pd>(m, "Pd", "NDK_PD: a protection domain (digest 1.2).")
        .def("create_mr", &Pd::create_mr, pyb::call_guard<ReleasedGil>(), pyb::arg("fast_register") = false,
             "NdkCreateMr -> Call.  Documented: SUCCESS; PENDING; INSUFFICIENT_RESOURCES.")
        .def("create_mw", &Pd::create_mw, pyb::call_guard<ReleasedGil>(),
             "NdkCreateMw -> Call.  Documented: SUCCESS; PENDING; INSUFFICIENT_RESOURCES.")
        .def(
            "create_srq",
            [](Pd &pd, ULONG srq_depth, ULONG max_receive_request_sge, ULONG notify_threshold,
               pyb::object affinity) {
                if (affinity.is_none())
                    return released([&] { return pd.create_srq(srq_depth, max_receive_request_sge, notify_threshold); });
                GROUP_AFFINITY g = affinity_of(affinity);
                return released([&] { return pd.create_srq(srq_depth, max_receive_request_sge, notify_threshold, &g); });
            },
            pyb::arg("srq_depth"), pyb::arg("max_receive_request_sge") = 1,
            pyb::arg("notify_threshold") = 0, pyb::arg("affinity") = pyb::none(),
            "NdkCreateSrq -> Call.  Documented: SUCCESS; PENDING; INVALID_PARAMETER (srq_depth > "
            "MaxSrqDepth or SGEs > MaxReceiveRequestSge); INSUFFICIENT_RESOURCES.")
        .def(
            "create_qp",
            [](Pd &pd, std::shared_ptr<Cq> receive_cq, std::shared_ptr<Cq> initiator_cq,
               const pyb::object &qp_context, ULONG receive_queue_depth,
               ULONG initiator_queue_depth, ULONG max_receive_request_sge,
               ULONG max_initiator_request_sge, ULONG inline_data_size) {
                HeldContext held(pd, qp_context, "qp_context");
                Call call = released([&] {
                    return pd.create_qp(receive_cq, initiator_cq, held.value(),
                                         receive_queue_depth, initiator_queue_depth,
                                         max_receive_request_sge, max_initiator_request_sge,
                                         inline_data_size);
                });
                held.posted(created_or_pending(call));
                return call;
            },
            pyb::arg("receive_cq"), pyb::arg("initiator_cq"), pyb::arg("qp_context") = 0,
            pyb::arg("receive_queue_depth") = 64, pyb::arg("initiator_queue_depth") = 64,
            pyb::arg("max_receive_request_sge") = 1, pyb::arg("max_initiator_request_sge") = 1,
            pyb::arg("inline_data_size") = 0,
            "NdkCreateQp -> Call.  qp_context: any object, returned in every result of the QP "
            "(an int as is; any other object is held until the adapter closes).  Documented: SUCCESS; PENDING; INVALID_PARAMETER (a size above "
            "its NDK_ADAPTER_INFO limit); INSUFFICIENT_RESOURCES.")
        .def(
            "create_qp_with_srq",
            [](Pd &pd, std::shared_ptr<Cq> receive_cq, std::shared_ptr<Cq> initiator_cq,
               std::shared_ptr<Srq> srq, const pyb::object &qp_context,
               ULONG initiator_queue_depth, ULONG max_initiator_request_sge,
               ULONG inline_data_size) {
                HeldContext held(pd, qp_context, "qp_context");
                Call call = released([&] {
                    return pd.create_qp_with_srq(receive_cq, initiator_cq, srq, held.value(),
                                                 initiator_queue_depth, max_initiator_request_sge,
                                                 inline_data_size);
                });
                held.posted(created_or_pending(call));
                return call;
            },
            pyb::arg("receive_cq"), pyb::arg("initiator_cq"), pyb::arg("srq"),
            pyb::arg("qp_context") = 0, pyb::arg("initiator_queue_depth") = 64,
            pyb::arg("max_initiator_request_sge") = 1, pyb::arg("inline_data_size") = 0,
            "NdkCreateQpWithSrq -> Call.  qp_context: as for create_qp.  Documented: SUCCESS; PENDING; INVALID_PARAMETER; "
            "INSUFFICIENT_RESOURCES.")
        .def("get_privileged_memory_region_token", &Pd::get_privileged_memory_region_token, pyb::call_guard<ReleasedGil>(),
             "NdkGetPrivilegedMemoryRegionToken: the token for BuildLAM logical addresses.")
        .def("__repr__", [](const Pd &pd) { return object_repr(pd, "Pd"); });

    object_class<Mr>(m, "Mr", "NDK_MR: a memory region (digest 1.4).")
        .def(
            "register",
            [](Mr &mr, pyb::buffer buffer, ULONG flags) {
                auto info = contiguous_buffer(buffer, kit::mr_flags_allow_writes(flags));
                void *address = info->ptr;
                auto length = static_cast<SIZE_T>(info->size * info->itemsize);
                auto keepalive = keep_alive(std::move(info));
                return released([&] {
                    return mr.register_buffer(address, length, flags, std::move(keepalive));
                });
            },
            pyb::arg("buffer"), pyb::arg("flags") = 0,
            "NdkRegisterMr over a Python buffer -> Call.  The buffer stays alive (and cannot be "
            "resized) while registered: until deregister_mr or the MR's close completes.  Write access flags need a writable buffer.")
        .def(
            "register_mr",
            [](Mr &mr, const PyMdl &mdl, std::optional<SIZE_T> length, ULONG flags) {
                if (kit::mr_flags_allow_writes(flags))
                    require_writable(mdl, "a registration with write access");
                // The registration holds the Mdl's buffer, not only the ndk.Mdl object does.
                return released([&] {
                    return mr.register_mdl(mdl.chain, length.value_or(mdl.total), flags,
                                           mdl.keepalive);
                });
            },
            pyb::arg("mdl"), pyb::arg("length") = pyb::none(), pyb::arg("flags") = 0,
            "NdkRegisterMr(Mdl, Length, Flags) -> Call.  Documented: SUCCESS; PENDING; "
            "INVALID_PARAMETER (MDL range not virtually contiguous); INSUFFICIENT_RESOURCES; "
            "ACCESS_VIOLATION (memory not mapped, or not writable with write access: MR-WRITABLE).  "
            "BufferError for write access to an Mdl over a read-only buffer.")
        .def("deregister_mr", &deregister_mr,
             "NdkDeregisterMr -> Call.  Documented: SUCCESS; PENDING.")
        .def("initialize_fast_register_mr", &Mr::initialize_fast_register, pyb::call_guard<ReleasedGil>(),
             pyb::arg("adapter_page_count"), pyb::arg("remote_access") = false,
             "NdkInitializeFastRegisterMr -> Call.  Documented: SUCCESS; PENDING; "
             "IMPLEMENTATION_LIMIT (adapter_page_count not supported).")
        .def("get_local_token_from_mr", &Mr::get_local_token, pyb::call_guard<ReleasedGil>(), "NdkGetLocalTokenFromMr.")
        .def("get_remote_token_from_mr", &Mr::get_remote_token, pyb::call_guard<ReleasedGil>(), "NdkGetRemoteTokenFromMr.")
        .def_property_readonly("local_token", &Mr::get_local_token)
        .def_property_readonly("remote_token", &Mr::get_remote_token)
        .def_property_readonly("fast_register", &Mr::fast_register)
        .def_property_readonly("address", &Mr::registered_address,
                               "The registered range's start (an int; 0 when not registered).")
        .def_property_readonly("length", &Mr::registered_length,
                               "The registered range's length in bytes (0 when not registered).")
        .def(
            "sge",
            [](Mr &mr, SIZE_T offset, ULONG length) {
                if (offset > mr.registered_length() ||
                    length > mr.registered_length() - offset)
                    throw pyb::value_error("SGE outside the registered range");
                NDK_SGE sge{};
                sge.VirtualAddress = reinterpret_cast<PVOID>(mr.registered_address() + offset);
                sge.Length = length;
                sge.MemoryRegionToken = released([&] { return mr.get_local_token(); });
                return sge;
            },
            pyb::arg("offset"), pyb::arg("length"),
            "An Sge for [offset, offset + length) of the registered memory, with the local token.")
        .def("__repr__", [](Mr &mr) {
            std::string details = mr.fast_register() ? "fast_register" : "normal";
            if (mr.is_open())
                details += " local_token=" + std::to_string(mr.get_local_token()) +
                           " remote_token=" + std::to_string(mr.get_remote_token());
            return object_repr(mr, "Mr", details);
        });

    object_class<Mw>(m, "Mw", "NDK_MW: a memory window (digest 1.5).")
        .def("get_remote_token_from_mw", &Mw::get_remote_token, pyb::call_guard<ReleasedGil>(), "NdkGetRemoteTokenFromMw.")
        .def_property_readonly("remote_token", &Mw::get_remote_token)
        .def("__repr__", [](const Mw &mw) { return object_repr(mw, "Mw"); });

    object_class<Srq>(m, "Srq", "NDK_SRQ: a shared receive queue (digest 1.6).")
        .def("modify_srq", &Srq::modify, pyb::call_guard<ReleasedGil>(), pyb::arg("srq_depth") = 0,
             pyb::arg("notify_threshold") = 0,
             "NdkModifySrq -> Call (0 keeps the depth / the threshold and arming).  Documented: "
             "SUCCESS; PENDING; INVALID_PARAMETER (srq_depth > MaxSrqDepth).")
        .def("srq_receive", &srq_receive, pyb::arg("sgl"), pyb::arg("request_context") = 0,
             "NdkSrqReceive(sgl: list of ndk.Sge) -> Status (inline; the result comes through the "
             "receive CQ of the QP that consumes it).  request_context: any object, as for "
             "Qp.receive.  Documented: SUCCESS; other.")
        .def("receive", &srq_receive, pyb::arg("sgl"), pyb::arg("request_context") = 0,
             "Alias of srq_receive (NdkSrqReceive).")
        .def("wait_notification",
             [](Srq &srq, pyb::object timeout) { return wait_status_event(srq, srq.events().notifications, timeout); },
             pyb::arg("timeout") = pyb::none(),
             "The next NdkSrqNotificationCallback status, or None after `timeout` seconds.")
        .def_property_readonly("notifications",
                               [](Srq &srq) { return srq.events().notifications.delivered(); })
        .def("__repr__", [](const Srq &srq) { return object_repr(srq, "Srq"); });

    object_class<SharedEndpoint>(m, "SharedEndpoint", "NDK_SHARED_ENDPOINT (digest 1.10).")
        .def(
            "get_local_address",
            [](SharedEndpoint &se) {
                SocketAddress a;
                NTSTATUS status = se.get_local_address(a);
                if (status != STATUS_SUCCESS)
                    throw Error(status, "NdkGetLocalAddress");
                return std::make_pair(a.host(), a.port());
            },
            "NdkGetLocalAddress -> (host, port); raises ndk.NdkError on failure.")
        .def("__repr__", [](const SharedEndpoint &se) { return object_repr(se, "SharedEndpoint"); });
}

} // namespace ndk::py
