// ndk.Adapter and ndk.AdapterInfo.
#include "contexts.hpp"
#include "py_support.hpp"

#include "ndk/objects.hpp"
#include "ndk/status.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <sstream>
#include <vector>

namespace ndk::py {
namespace {

// The result of the raw NdkQueryAdapterInfo call, for BUFFER_TOO_SMALL scenarios.
struct AdapterInfoQuery {
    NTSTATUS status;
    ULONG buffer_size;
    std::optional<NDK_ADAPTER_INFO> info;
};

#define NDK_INFO_FIELDS(X)                                                                       \
    X(vendor_id, VendorId)                                                                       \
    X(device_id, DeviceId)                                                                       \
    X(max_registration_size, MaxRegistrationSize)                                                \
    X(max_window_size, MaxWindowSize)                                                            \
    X(frmr_page_count, FRMRPageCount)                                                            \
    X(max_initiator_request_sge, MaxInitiatorRequestSge)                                         \
    X(max_receive_request_sge, MaxReceiveRequestSge)                                             \
    X(max_read_request_sge, MaxReadRequestSge)                                                   \
    X(max_transfer_length, MaxTransferLength)                                                    \
    X(max_inline_data_size, MaxInlineDataSize)                                                   \
    X(max_inbound_read_limit, MaxInboundReadLimit)                                               \
    X(max_outbound_read_limit, MaxOutboundReadLimit)                                             \
    X(max_receive_queue_depth, MaxReceiveQueueDepth)                                             \
    X(max_initiator_queue_depth, MaxInitiatorQueueDepth)                                         \
    X(max_srq_depth, MaxSrqDepth)                                                                \
    X(max_cq_depth, MaxCqDepth)                                                                  \
    X(large_request_threshold, LargeRequestThreshold)                                            \
    X(max_caller_data, MaxCallerData)                                                            \
    X(max_callee_data, MaxCalleeData)

// Far above any OID answer NDK defines (64 bytes per connection); beyond it, a mistake.
constexpr ULONG kMaxOidBuffer = 1u << 24;

std::string info_repr(const NDK_ADAPTER_INFO &i)
{
    std::ostringstream out;
    out << "<ndk.AdapterInfo version=" << i.Version.Major << "." << i.Version.Minor;
#define NDK_REPR(py, c) out << " " #py "=" << i.c;
    NDK_INFO_FIELDS(NDK_REPR)
#undef NDK_REPR
    out << " adapter_flags=0x" << std::hex << i.AdapterFlags << std::dec
        << " rdma_technology=" << i.RdmaTechnology << ">";
    return out.str();
}

// NDK_ADAPTER_INFO by value: every field, raw, in _fields order.
pyb::tuple info_state(const NDK_ADAPTER_INFO &i)
{
    pyb::list state;
    state.append(i.Version.Major);
    state.append(i.Version.Minor);
#define NDK_STATE(py, c) state.append(i.c);
    NDK_INFO_FIELDS(NDK_STATE)
#undef NDK_STATE
    state.append(i.AdapterFlags);
    state.append(static_cast<int>(i.RdmaTechnology));
    return pyb::tuple(state);
}

NDK_ADAPTER_INFO info_from(const pyb::tuple &state)
{
    NDK_ADAPTER_INFO i{};
    if (state.size() != info_state(i).size())
        throw pyb::value_error("not a pickled ndk.AdapterInfo");
    size_t k = 0;
    i.Version.Major = state[k++].cast<USHORT>();
    i.Version.Minor = state[k++].cast<USHORT>();
#define NDK_LOAD(py, c) i.c = state[k++].cast<decltype(i.c)>();
    NDK_INFO_FIELDS(NDK_LOAD)
#undef NDK_LOAD
    i.AdapterFlags = state[k++].cast<ULONG>();
    i.RdmaTechnology = static_cast<decltype(i.RdmaTechnology)>(state[k++].cast<int>());
    return i;
}

std::string adapter_repr(const Adapter &a)
{
    std::string text = "<ndk.Adapter provider='" + a.provider_name() + "'";
    if (!a.is_open())
        return text + " closed>";
    NDK_VERSION v = a.ndk()->Header.Version;
    return text + " version=" + std::to_string(v.Major) + "." + std::to_string(v.Minor) + " open>";
}

// Close with the GIL released (a blocking close waits for the provider's threads and other
// Python threads may be polling), then let go of the contexts, with the GIL.
void close_adapter(Adapter &a)
{
    {
        ReleasedGil released_gil;
        a.close();
    }
    drop_contexts(a);
}

} // namespace

void bind_adapter(pyb::module_ &m)
{
    auto info = pyb::class_<NDK_ADAPTER_INFO>(m, "AdapterInfo",
                                              "NDK_ADAPTER_INFO (digest 2.1), fields in snake_case.  A value: ==, hash, "
                                              "pickle, _fields and _asdict().");
    info.def_property_readonly("version", [](const NDK_ADAPTER_INFO &i) {
        return std::make_pair(i.Version.Major, i.Version.Minor);
    });
#define NDK_FIELD(py, c) info.def_readonly(#py, &NDK_ADAPTER_INFO::c);
    NDK_INFO_FIELDS(NDK_FIELD)
#undef NDK_FIELD
    info.def_property_readonly("adapter_flags", [](const NDK_ADAPTER_INFO &i) {
        return enum_of("AdapterFlag", i.AdapterFlags);
    });
    info.def_property_readonly("rdma_technology", [](const NDK_ADAPTER_INFO &i) {
        return enum_of("RdmaTechnology", i.RdmaTechnology);
    });
    pyb::list fields;
    fields.append("version");
#define NDK_NAME(py, c) fields.append(#py);
    NDK_INFO_FIELDS(NDK_NAME)
#undef NDK_NAME
    fields.append("adapter_flags");
    fields.append("rdma_technology");
    info.attr("_fields") = pyb::tuple(fields);
    info.def("__repr__", &info_repr)
        .def(
            "__eq__",
            [](const NDK_ADAPTER_INFO &a, const pyb::object &b) -> pyb::object {
                if (!pyb::isinstance<NDK_ADAPTER_INFO>(b))
                    return pyb::reinterpret_borrow<pyb::object>(Py_NotImplemented);
                return pyb::bool_(info_state(a).equal(info_state(b.cast<const NDK_ADAPTER_INFO &>())));
            },
            pyb::is_operator())
        .def("__hash__", [](const NDK_ADAPTER_INFO &i) { return pyb::hash(info_state(i)); })
        .def(
            "_asdict",
            [](const pyb::object &self) {
                pyb::dict out;
                for (auto name : self.attr("_fields"))
                    out[name] = self.attr(name);
                return out;
            },
            "The fields as a dict, as namedtuple's _asdict.")
        .def(pyb::pickle(&info_state, &info_from));

    pyb::class_<AdapterInfoQuery>(m, "AdapterInfoQuery",
                                  "What a raw NdkQueryAdapterInfo call returned.")
        .def_property_readonly("status", [](const AdapterInfoQuery &q) { return Status{q.status}; })
        .def_readonly("buffer_size", &AdapterInfoQuery::buffer_size,
                      "*pBufferSize after the call (the required size on BUFFER_TOO_SMALL).")
        .def_readonly("info", &AdapterInfoQuery::info, "The NDK_ADAPTER_INFO, on success.");

    pyb::class_<Adapter, std::shared_ptr<Adapter>> adapter(m, "Adapter", R"doc(
An open NDK adapter (NDK_ADAPTER), from ndk.open_adapter().  A context manager: leaving the
`with` block closes every object still open and then the adapter (CLOSE_NDK_ADAPTER_HANDLER,
blocking: no callback of any of its objects runs after it returns, digest 3.1).
)doc");
    adapter
        .def_static(
            "_open",
            [](const std::string &provider, const std::string &options,
               std::pair<USHORT, USHORT> version, bool validate) {
                return Adapter::open(provider, options, NDK_VERSION{version.first, version.second},
                                     validate);
            },
            pyb::arg("provider"), pyb::arg("options"), pyb::arg("version"),
            pyb::arg("validate") = false,
            "Open through the validation layer when `validate` (use ndk.open_adapter).")
        .def_property_readonly("provider", &Adapter::provider_name)
        .def_property_readonly("is_open", &Adapter::is_open)
        .def_property_readonly("closed", [](const Adapter &a) { return !a.is_open(); })
        .def_property_readonly("has_knobs", &Adapter::has_knobs)
        .def_property_readonly("version", [](const Adapter &a) {
            a.check_open();
            return std::make_pair(a.ndk()->Header.Version.Major, a.ndk()->Header.Version.Minor);
        }, "The NDK version the provider reported in the adapter's header.")
        .def("close", &close_adapter,
             "CLOSE_NDK_ADAPTER_HANDLER: close every open object, then the adapter (blocking).  "
             "Lets go of every context object the adapter's requests and QPs still held.")
        .def("__enter__", [](std::shared_ptr<Adapter> a) { return a; })
        .def("__exit__", [](Adapter &a, pyb::args) { close_adapter(a); })
        .def("query_info", &Adapter::query_info, pyb::call_guard<ReleasedGil>(),
             "NdkQueryAdapterInfo with a full buffer; raises ndk.NdkError on failure.")
        .def(
            "query_adapter_info",
            [](Adapter &a, ULONG buffer_size) {
                NDK_ADAPTER_INFO info{};
                AdapterInfoQuery q{};
                q.buffer_size = buffer_size;
                q.status = released([&] {
                    return a.query_adapter_info(buffer_size >= sizeof info ? &info : nullptr,
                                                &q.buffer_size);
                });
                if (q.status == STATUS_SUCCESS)
                    q.info = info;
                return q;
            },
            pyb::arg("buffer_size") = static_cast<ULONG>(sizeof(NDK_ADAPTER_INFO)),
            "NdkQueryAdapterInfo with *pBufferSize = buffer_size.  Documented: SUCCESS; "
            "BUFFER_TOO_SMALL with buffer_size set to the required size.")
        .def(
            "query_extension",
            [](Adapter &a, std::pair<USHORT, USHORT> version) {
                GUID id{0x4e444b21, 0x0001, 0x0002, {0, 1, 2, 3, 4, 5, 6, 7}};
                NDK_EXTENSION_INTERFACE out{};
                return Status{a.query_extension(&id, NDK_VERSION{version.first, version.second},
                                                &out)};
            },
            pyb::arg("version") = std::make_pair(USHORT{1}, USHORT{0}),
            "NdkQueryExtension for an extension interface.  Documented: SUCCESS, "
            "NOT_SUPPORTED (no standard extension interfaces exist).")
        .def(
            "create_cq",
            [](Adapter &a, ULONG cq_depth, pyb::object affinity) {
                if (affinity.is_none())
                    return released([&] { return a.create_cq(cq_depth); });
                GROUP_AFFINITY g = affinity_of(affinity);
                return released([&] { return a.create_cq(cq_depth, &g); });
            },
            pyb::arg("cq_depth"), pyb::arg("affinity") = pyb::none(),
            "NdkCreateCq -> Call.  affinity: a CPU mask, or (mask, group).  Documented: SUCCESS; "
            "PENDING; INVALID_PARAMETER (cq_depth > MaxCqDepth); INSUFFICIENT_RESOURCES.")
        .def("create_pd", &Adapter::create_pd, pyb::call_guard<ReleasedGil>(),
             "NdkCreatePd -> Call.  Documented: SUCCESS; PENDING; INSUFFICIENT_RESOURCES.")
        .def("create_connector", &Adapter::create_connector, pyb::call_guard<ReleasedGil>(),
             "NdkCreateConnector -> Call.  Documented: SUCCESS; PENDING; INSUFFICIENT_RESOURCES.")
        .def("create_listener", &Adapter::create_listener, pyb::call_guard<ReleasedGil>(),
             "NdkCreateListener -> Call.  Documented: SUCCESS; PENDING; INSUFFICIENT_RESOURCES.")
        .def(
            "create_shared_endpoint",
            [](Adapter &a, std::pair<std::string, uint16_t> address) {
                auto local = SocketAddress::from(address.first, address.second);
                return released([&] { return a.create_shared_endpoint(local); });
            },
            pyb::arg("address"),
            "NdkCreateSharedEndpoint((host, port)) -> Call.  Documented: SUCCESS; PENDING; "
            "INSUFFICIENT_RESOURCES; SHARING_VIOLATION (address in use); TOO_MANY_ADDRESSES "
            "(port 0, no ephemeral port free); INVALID_ADDRESS (not the adapter's address).")
        .def(
            "_query_oid",
            [](Adapter &a, NDIS_OID oid, ULONG buffer_length) {
                if (buffer_length > kMaxOidBuffer)
                    throw pyb::value_error("buffer_length above " +
                                           std::to_string(kMaxOidBuffer) + " bytes");
                std::vector<UCHAR> buffer(buffer_length);
                ULONG written = 0, needed = 0;
                NDIS_STATUS status;
                {
                    ReleasedGil released_gil;
                    status = a.query_oid(oid, buffer_length ? buffer.data() : nullptr,
                                         buffer_length, &written, &needed);
                }
                auto shown = std::min(written, buffer_length); // never past our buffer
                return pyb::make_tuple(Status{status},
                                       pyb::bytes(reinterpret_cast<const char *>(buffer.data()),
                                                  shown),
                                       written, needed);
            },
            pyb::arg("oid"), pyb::arg("buffer_length"),
            "One OID query (MiniportOidRequest, digest 3.7) with a buffer of buffer_length bytes "
            "(0: NULL) -> (status, bytes written, BytesWritten, BytesNeeded).  See query_oid.")
        .def(
            "_set_oid",
            [](Adapter &a, NDIS_OID oid, const pyb::buffer &data) {
                auto copy = pyb::reinterpret_steal<pyb::object>(PyBytes_FromObject(data.ptr()));
                if (!copy)
                    throw pyb::error_already_set();
                std::string bytes = copy.cast<std::string>();
                if (bytes.size() > MAXULONG)
                    throw pyb::value_error("OID data longer than a ULONG counts");
                ReleasedGil released_gil;
                return Status{a.set_oid(oid, bytes.empty() ? nullptr : bytes.data(),
                                        static_cast<ULONG>(bytes.size()))};
            },
            pyb::arg("oid"), pyb::arg("data"),
            "One OID set (MiniportOidRequest, digest 3.7) with `data` (bytes-like; empty: NULL) "
            "-> Status.  See set_oid.")
        .def_property_readonly("has_oids", &Adapter::has_oids,
                               "Whether the provider takes OID requests at all.")
        .def("_set_knob",
             [](Adapter &a, const std::string &key, const std::string &value) {
                 std::string reply;
                 NTSTATUS status = released([&] { return a.set_knob(key, value, reply); });
                 return std::make_pair(Status{status}, reply);
             })
        .def("_get_knob",
             [](Adapter &a, const std::string &key) {
                 std::string value;
                 NTSTATUS status = released([&] { return a.get_knob(key, value); });
                 return std::make_pair(Status{status}, value);
             })
        .def("__repr__", &adapter_repr);
    bind_validation_adapter(adapter); // validated, validation, violations(), clear_violations()
}

} // namespace ndk::py
