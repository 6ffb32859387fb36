// ndk.Adapter, ndk.AdapterInfo and ndk.AdapterInfoQuery: every method of ndk.Adapter is bound
// here.  The class is registered first (declare_adapter) so that the other classes' signatures
// can name it, and its methods last (bind_adapter), once every class they name exists.
#include "contexts.hpp"
#include "lam_call.hpp"
#include "package_types.hpp"
#include "py_support.hpp"

#include "ndk/knob_text.hpp"
#include "ndk/lam.hpp"
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
    // The enumerations as Python shows them, as the attributes are (AdapterFlag.X|Y).
    out << " adapter_flags=" << pyb::repr(enum_of("AdapterFlag", i.AdapterFlags)).cast<std::string>()
        << " rdma_technology="
        << pyb::repr(enum_of("RdmaTechnology", i.RdmaTechnology)).cast<std::string>() << ">";
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


using AdapterClass = pyb::class_<Adapter, std::shared_ptr<Adapter>>;

std::string quoted(const std::string &text) { return pyb::repr(pyb::str(text)).cast<std::string>(); }

// adapter.knobs: ndk.Knobs over the adapter, or KnobsNotSupported for a provider without knobs.
pyb::object knobs_of(const pyb::object &self)
{
    const auto &a = self.cast<const Adapter &>();
    if (!a.has_knobs())
        raise_package_error("KnobsNotSupported", "provider " + quoted(a.provider_name()) +
                                                     " has no knobs");
    return package_attr("ndk._knobs", "Knobs")(self);
}

// A count the knob `step` replied with (set: steps run; read: steps queued).
// The count knob `step` answered with (set: steps run; read: steps queued), if it is one.
std::optional<long long> step_count(const std::string &text)
{
    try {
        size_t used = 0;
        long long n = std::stoll(text, &used);
        if (used == text.size() && n >= 0)
            return n;
    } catch (const std::exception &) {
    }
    return std::nullopt;
}

long long step(const pyb::object &self, const pyb::object &n)
{
    if (PyBool_Check(n.ptr()) || !PyLong_Check(n.ptr()))
        throw pyb::type_error(std::string("step count must be an int, not ") +
                              Py_TYPE(n.ptr())->tp_name);
    if (n.cast<long long>() < 0)
        throw pyb::value_error("step count must be >= 0");
    auto reply = package_attr("ndk._knobs", "set_knob")(self, "step", n).cast<std::string>();
    if (auto ran = step_count(reply))
        return *ran;
    throw pyb::value_error("knob 'step' replied " + quoted(reply) + ", not a count");
}

long long pending_steps(const pyb::object &self)
{
    auto text = package_attr("ndk._knobs", "get_knob")(self, "step").cast<std::string>();
    if (auto queued = step_count(text))
        return *queued;
    raise_package_error("KnobsNotSupported", "knob 'step' reads " + quoted(text) + ", not a count");
}

// One OID query with a buffer of buffer_length bytes (0: NULL), parsed (ndk._oid.OidResult).
pyb::object query_oid_once(Adapter &a, NDIS_OID oid, ULONG buffer_length)
{
    std::vector<UCHAR> buffer(buffer_length);
    ULONG written = 0, needed = 0;
    NDIS_STATUS status = released([&] {
        return a.query_oid(oid, buffer_length ? buffer.data() : nullptr, buffer_length, &written,
                           &needed);
    });
    auto shown = std::min(written, buffer_length); // never past our buffer
    pyb::bytes raw(reinterpret_cast<const char *>(buffer.data()), shown);
    return package_attr("ndk._oid", "OidResult")
        .attr("parse")(oid, raw, Status{status}, written, needed);
}

// buffer_length None negotiates as an NDIS client does: a 0-length query, then one of the
// size BUFFER_TOO_SHORT named.
pyb::object query_oid(Adapter &a, NDIS_OID oid, std::optional<ULONG> buffer_length)
{
    if (buffer_length) {
        if (*buffer_length > kMaxOidBuffer)
            throw pyb::value_error("buffer_length must be in 0.." + std::to_string(kMaxOidBuffer));
        return query_oid_once(a, oid, *buffer_length);
    }
    pyb::object first = query_oid_once(a, oid, 0);
    auto needed = first.attr("bytes_needed").cast<ULONG>();
    if (first.attr("status").cast<uint32_t>() != static_cast<uint32_t>(NDIS_STATUS_BUFFER_TOO_SHORT) ||
        needed == 0)
        return first;
    return query_oid_once(a, oid, std::min(needed, kMaxOidBuffer));
}

Status set_oid(Adapter &a, NDIS_OID oid, const pyb::buffer &data)
{
    auto copy = pyb::reinterpret_steal<pyb::object>(PyBytes_FromObject(data.ptr()));
    if (!copy)
        throw pyb::error_already_set();
    std::string bytes = copy.cast<std::string>();
    if (bytes.size() > MAXULONG)
        throw pyb::value_error("OID data longer than a ULONG counts");
    ReleasedGil released_gil;
    return Status{a.set_oid(oid, bytes.empty() ? nullptr : bytes.data(),
                            static_cast<ULONG>(bytes.size()))};
}

// QueryNdkCapabilities (ndk/provider.h) -> ndk.NdkCapabilities, None when the provider does
// not report them; a failure raises ndk.NdkError.
pyb::object query_ndk_capabilities(Adapter &a)
{
    NDIS_NDK_CAPABILITIES c{};
    NDIS_STATUS status = released([&] { return a.query_ndk_capabilities(c); });
    if (status == NDIS_STATUS_NOT_SUPPORTED)
        return pyb::none();
    if (status != NDIS_STATUS_SUCCESS)
        throw Error(status, "QueryNdkCapabilities");
    using namespace pyb::literals;
    return package_attr("ndk._capabilities", "NdkCapabilities")(
        "header"_a = pyb::make_tuple(c.Header.Type, c.Header.Revision, c.Header.Size),
        "flags"_a = c.Flags, "max_qp_count"_a = c.MaxQpCount, "max_cq_count"_a = c.MaxCqCount,
        "max_mr_count"_a = c.MaxMrCount, "max_pd_count"_a = c.MaxPdCount,
        "max_inbound_read_limit"_a = c.MaxInboundReadLimit,
        "max_outbound_read_limit"_a = c.MaxOutboundReadLimit, "max_mw_count"_a = c.MaxMwCount,
        "max_srq_count"_a = c.MaxSrqCount, "missing_counter_mask"_a = c.MissingCounterMask);
}

} // namespace

void declare_adapter(pyb::module_ &m)
{
    AdapterClass(m, "Adapter", R"doc(
An open NDK adapter (NDK_ADAPTER), from ndk.open_adapter().  A context manager: leaving the
`with` block closes every object still open and then the adapter (CLOSE_NDK_ADAPTER_HANDLER,
blocking: no callback of any of its objects runs after it returns, digest 3.1).
)doc");
}

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
        .def_readonly("info", &AdapterInfoQuery::info, "The NDK_ADAPTER_INFO, on success.")
        .def("__repr__", [](const AdapterInfoQuery &q) {
            return "<ndk.AdapterInfoQuery " + status_name(q.status) +
                   " buffer_size=" + std::to_string(q.buffer_size) +
                   (q.info ? " info=" + info_repr(*q.info) : std::string(" info=None")) + ">";
        });

    pyb::reinterpret_borrow<AdapterClass>(m.attr("Adapter"))
        .def_static(
            "_open",
            [](const std::string &provider, const KnobList &knobs,
               std::pair<USHORT, USHORT> version, bool validate) {
                return Adapter::open(provider, options_text(knobs),
                                     NDK_VERSION{version.first, version.second}, validate);
            },
            pyb::arg("provider"), pyb::arg("knobs"), pyb::arg("version"),
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
        .def("query_oid", &query_oid, pyb::arg("oid"), pyb::arg("buffer_length") = pyb::none(),
             R"doc(An OID query on the adapter's miniport (MiniportOidRequest, digest 3.7) -> ndk.OidResult.

buffer_length=None negotiates as an NDIS client does: a query with a 0-length buffer, which
answers NDIS_STATUS_BUFFER_TOO_SHORT with BytesNeeded, then a query of that size (the result
is the second's).  An int makes exactly one query with a buffer of that size (0: NULL), so
the BUFFER_TOO_SHORT answer itself can be checked.  Documented: SUCCESS; BUFFER_TOO_SHORT
(bytes_needed set); INVALID_OID (not supported, also when the provider takes no OIDs).)doc")
        .def("query_ndk_capabilities", &query_ndk_capabilities,
             R"doc(The miniport's NDIS_NDK_CAPABILITIES (digest 3.7) -> ndk.NdkCapabilities, or None.

None: the provider does not report them (its entry has no QueryNdkCapabilities,
core/include/ndk/provider.h).  A count of MAXULONG says the provider keeps no count of its own
for that kind; MaxSrqCount 0 says it has no SRQ.  A failure raises ndk.NdkError.)doc")
        .def("set_oid", &set_oid, pyb::arg("oid"), pyb::arg("data"),
             R"doc(An OID set (MiniportOidRequest, digest 3.7) with `data` (bytes-like; empty: NULL) -> ndk.Status.

OID_NDK_SET_STATE takes one BOOLEAN: b"\x01" enables NDK, b"\x00" disables it.  Documented:
SUCCESS; INVALID_LENGTH (wrong size); INVALID_OID.)doc")
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
        .def_property_readonly("knobs", &knobs_of, "The provider's run-time knobs (ndk.Knobs).")
        .def_property_readonly(
            "addresses",
            [](Adapter &a) { return released([&] { return a.addresses(); }); },
            "The adapter's IP addresses (knob ``address``: \"192.0.2.1,2001:db8::1\"), in order; "
            "None when the provider does not say (it has no ``address`` knob).")
        .def("step", &step, pyb::arg("n") = 1,
             "Run up to ``n`` queued engine steps (transfers, completions, callbacks) of the "
             "adapter's miniport, with knob ``progress=\"manual\"``; returns how many ran (knob "
             "``step``).")
        .def_property_readonly("pending_steps", &pending_steps,
                               "How many engine steps are queued on the adapter's miniport (knob "
                               "``step``, read).")
        .def(
            "build_lam",
            [](Adapter &a, const pyb::object &buffer, std::optional<SIZE_T> length,
               std::optional<ULONG> lam_size) {
                // An ndk.Mdl as given (misuse scenarios), else a writable buffer: the
                // privileged token allows local writes into the mapped memory.
                if (pyb::isinstance<PyMdl>(buffer))
                    return build_lam(a, buffer.cast<const PyMdl &>(), length, lam_size);
                auto mdl = make_mdl(pyb::reinterpret_borrow<pyb::buffer>(buffer), std::nullopt, true);
                return build_lam(a, mdl, length, lam_size);
            },
            pyb::arg("buffer"), pyb::arg("length") = pyb::none(), pyb::arg("lam_size") = pyb::none(),
            R"doc(NdkBuildLAM -> ndk.LamCall, whose get() returns the ndk.Lam (adapter_page_array, adapter_page_count, fbo).

Logical addresses for ``buffer`` (a writable bytes-like object, or an ndk.Mdl as given), used in
SGEs under pd.get_privileged_memory_region_token().  length None: the whole buffer.  lam_size
None: a mapping buffer big enough for the pages touched; an int passes that *pLAMSize
(BUFFER_TOO_SMALL scenarios: the call's .lam.lam_size is then the size needed).  Documented:
SUCCESS; PENDING; INVALID_PARAMETER (MDL range not virtually contiguous); INSUFFICIENT_RESOURCES
(i/a); BUFFER_TOO_SMALL; other.)doc")
        .def_property_readonly(
            "validated", [](const Adapter &a) { return a.validation() != nullptr; },
            "Whether the adapter was opened through the validation layer (validate=True).")
        .def_property_readonly(
            "validation", [](const Adapter &a) { return a.validation(); },
            "The validation layer's record of this adapter (an ndk.ValidationSession, which "
            "outlives the adapter), or None when it was opened without validation.")
        .def(
            "violations",
            [](const Adapter &a) {
                auto session = a.validation();
                return session ? violations_of(*session) : std::vector<validate::Violation>{};
            },
            "The contract violations the validation layer recorded on this adapter, oldest "
            "first, as ndk.Violation ([] when not validated).  Works after close().")
        .def(
            "clear_violations",
            [](const Adapter &a) {
                if (auto session = a.validation()) {
                    ReleasedGil released_gil;
                    session->clear();
                }
            },
            "Forget the violations recorded so far (nothing to do when not validated).")
        .def("__repr__", &adapter_repr);
}

} // namespace ndk::py
