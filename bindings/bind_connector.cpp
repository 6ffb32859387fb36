// ndk.Connector and ndk.Listener: connection establishment and teardown (digest 1.8, 1.9, 3.5,
// 3.6).  Defaults where NDK takes a value the consumer rarely chooses: the source address is
// the adapter's first address of the destination's family with port 0; the read limits are the
// adapter's MaxInboundReadLimit / MaxOutboundReadLimit.
#include "object_support.hpp"
#include "package_types.hpp"

#include <pybind11/stl.h>

#include "ndk/status.hpp"

#include <atomic>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace ndk::py {
namespace {

using Address = std::pair<std::string, uint16_t>;
using Bytes = std::optional<pyb::buffer>;
using Length = std::optional<ULONG>;

// Far above any MaxCallerData / MaxCalleeData; a larger buffer is a mistake, not a scenario.
constexpr ULONG kMaxPrivateDataBuffer = 1u << 24;

// `data` (any bytes-like object, copied in C order; None: NULL) with `length` (None: its size).
PrivateData private_data_of(const Bytes &data, Length length)
{
    std::optional<std::vector<uint8_t>> bytes;
    if (data) {
        auto copy = pyb::reinterpret_steal<pyb::object>(PyBytes_FromObject(data->ptr()));
        if (!copy)
            throw pyb::error_already_set();
        std::string_view view = copy.cast<pyb::bytes>();
        bytes.emplace(view.begin(), view.end());
    }
    return PrivateData::of(std::move(bytes), length);
}

pyb::object address_or_none(const SocketAddress &a)
{
    if (a.storage.ss_family != AF_INET && a.storage.ss_family != AF_INET6)
        return pyb::none();
    return pyb::make_tuple(a.host(), a.port());
}

// What one NdkGetConnectionData call returned: status, read limits, the bytes copied and
// *pPrivateDataLength after the call.
std::tuple<NTSTATUS, ULONG, ULONG, pyb::bytes, ULONG> connection_data(Connector &c,
                                                                     ULONG private_data_length)
{
    if (private_data_length > kMaxPrivateDataBuffer)
        throw pyb::value_error("private_data_length above " +
                               std::to_string(kMaxPrivateDataBuffer) + " bytes");
    std::vector<uint8_t> buffer(private_data_length);
    // A limit the provider does not write reads MAXULONG, above every cap a scenario compares
    // it with, where 0 would pass for "no reads".
    ULONG inbound = MAXULONG, outbound = MAXULONG, length = private_data_length;
    NTSTATUS status = released([&] {
        return c.get_connection_data(&inbound, &outbound,
                                     private_data_length ? buffer.data() : nullptr, &length);
    });
    // The provider copies min(*len, RDS) bytes and writes RDS back (digest 1.8).
    size_t copied = 0;
    if (status == STATUS_SUCCESS || status == STATUS_BUFFER_TOO_SMALL)
        copied = std::min(private_data_length, length);
    return {status, inbound, outbound,
            pyb::bytes(reinterpret_cast<const char *>(buffer.data()), copied), length};
}

// `address` as a socket address; ValueError naming the argument when the host is no IP address.
SocketAddress address_of(const Address &address, const char *what)
{
    try {
        return SocketAddress::from(address.first, address.second);
    } catch (const std::invalid_argument &e) {
        throw pyb::value_error(std::string(what) + ": " + e.what());
    }
}

// The source of a connect to `dest` that names none: the adapter's first address of dest's
// family, port 0 (an ephemeral port); the unspecified address of that family when the adapter
// does not say which addresses it has.
SocketAddress source_for(Adapter &adapter, const SocketAddress &dest)
{
    auto family = dest.storage.ss_family;
    for (const auto &host : adapter.addresses().value_or(std::vector<std::string>{})) {
        try {
            auto source = SocketAddress::from(host, 0);
            if (source.storage.ss_family == family)
                return source;
        } catch (const std::invalid_argument &) {
            continue; // a provider's odd entry: not a candidate
        }
    }
    return SocketAddress::from(family == AF_INET ? "0.0.0.0" : "::", 0);
}

// The read limits a connect or accept passes: as given, else the adapter's maxima.  A struct,
// not a pair taken apart by a structured binding: the lambdas below capture its members, which
// C++20 allows for bindings but clang 14 does not implement.
struct ReadLimits {
    ULONG inbound;
    ULONG outbound;
};

ReadLimits read_limits(Adapter &adapter, Length inbound, Length outbound)
{
    if (!inbound || !outbound) {
        NDK_ADAPTER_INFO info = released([&] { return adapter.query_info(); });
        inbound = inbound.value_or(info.MaxInboundReadLimit);
        outbound = outbound.value_or(info.MaxOutboundReadLimit);
    }
    return {*inbound, *outbound};
}

Adapter &adapter_of(const Connector &c)
{
    if (!c.adapter())
        throw ClosedError("connector's adapter is closed");
    return *c.adapter();
}

// One NdkGetConnectionData call as an ndk.ConnectionData.
pyb::object connection_data_once(Connector &c, ULONG private_data_length)
{
    auto [status, inbound, outbound, data, length] = connection_data(c, private_data_length);
    return package_attr("ndk._connection", "ConnectionData")(Status{status}, inbound, outbound,
                                                              data, length);
}

// NdkGetLocalAddress / NdkGetPeerAddress: (host, port) or NdkError; with address_length, one
// call as an ndk.AddressResult (BUFFER_TOO_SMALL negotiation).
template <class Get>
pyb::object address_of_call(Length address_length, const char *function, Get get)
{
    SocketAddress a;
    NTSTATUS status = released([&] { return get(a, address_length); });
    pyb::object address = status == STATUS_SUCCESS ? address_or_none(a) : pyb::none();
    if (address_length)
        return package_attr("ndk._connection", "AddressResult")(Status{status}, a.length, address);
    if (status != STATUS_SUCCESS)
        raise_package_error("NdkError", static_cast<uint32_t>(status),
                            std::string(function) + ": " + status_name(status));
    return address;
}
} // namespace

void bind_connector(pyb::module_ &m)
{
    object_class<Connector>(m, "Connector", R"doc(NDK_CONNECTOR (digest 1.8).

Active side: adapter.create_connector(), connect(qp, dest), complete_connect().  Passive side:
listener.next_connection(), accept(qp).  Disconnect events queue up: wait_disconnect().
)doc")
        .def(
            "connect",
            [](Connector &c, const std::shared_ptr<Qp> &qp, const Address &dest_address,
               std::optional<Address> src_address, Length inbound_read_limit,
               Length outbound_read_limit, const Bytes &private_data, Length private_data_length) {
                auto to = address_of(dest_address, "dest_address");
                auto from = src_address ? address_of(*src_address, "src_address")
                                        : source_for(adapter_of(c), to);
                ReadLimits limits =
                    read_limits(adapter_of(c), inbound_read_limit, outbound_read_limit);
                auto data = private_data_of(private_data, private_data_length);
                return released(
                    [&] { return c.connect(qp, from, to, limits.inbound, limits.outbound, data); });
            },
            pyb::arg("qp").none(false), pyb::arg("dest_address"),
            pyb::arg("src_address") = pyb::none(), pyb::arg("inbound_read_limit") = pyb::none(),
            pyb::arg("outbound_read_limit") = pyb::none(), pyb::arg("private_data") = pyb::none(),
            pyb::arg("private_data_length") = pyb::none(),
            R"doc(NdkConnect -> ndk.Call: connect ``qp`` to a listener at dest_address (host, port).

src_address None: the adapter's first address of dest's family, port 0 (an ephemeral port).
Read limits None: the adapter's MaxInboundReadLimit / MaxOutboundReadLimit.  private_data:
bytes-like or None (NULL); private_data_length overrides the length passed (None with a length
passes NULL with that length).  The connector holds qp from now on.  Documented: SUCCESS;
PENDING; INSUFFICIENT_RESOURCES, NETWORK_UNREACHABLE, HOST_UNREACHABLE, CONNECTION_REFUSED,
IO_TIMEOUT, SHARING_VIOLATION, INVALID_ADDRESS, TOO_MANY_ADDRESSES, ADDRESS_ALREADY_EXISTS (all
i/a); other.)doc")
        .def(
            "connect_with_shared_endpoint",
            [](Connector &c, const std::shared_ptr<Qp> &qp,
               const std::shared_ptr<SharedEndpoint> &shared_endpoint, const Address &dest_address,
               Length inbound_read_limit, Length outbound_read_limit, const Bytes &private_data,
               Length private_data_length) {
                auto to = address_of(dest_address, "dest_address");
                ReadLimits limits =
                    read_limits(adapter_of(c), inbound_read_limit, outbound_read_limit);
                auto data = private_data_of(private_data, private_data_length);
                return released([&] {
                    return c.connect_with_shared_endpoint(qp, shared_endpoint, to, limits.inbound,
                                                          limits.outbound, data);
                });
            },
            pyb::arg("qp").none(false), pyb::arg("shared_endpoint").none(false),
            pyb::arg("dest_address"), pyb::arg("inbound_read_limit") = pyb::none(),
            pyb::arg("outbound_read_limit") = pyb::none(), pyb::arg("private_data") = pyb::none(),
            pyb::arg("private_data_length") = pyb::none(),
            R"doc(NdkConnectWithSharedEndpoint -> ndk.Call: connect from ``shared_endpoint``'s address.

Defaults as for connect.  The connector holds qp and shared_endpoint from now on.  Documented:
SUCCESS; PENDING; INSUFFICIENT_RESOURCES, NETWORK_UNREACHABLE, HOST_UNREACHABLE,
CONNECTION_REFUSED, IO_TIMEOUT, ADDRESS_ALREADY_EXISTS (all i/a); other.)doc")
        .def("complete_connect", &Connector::complete_connect, pyb::call_guard<ReleasedGil>(),
             pyb::arg("disconnect_event") = true,
             "NdkCompleteConnect -> Call, after connect completed: finish establishment.  "
             "disconnect_event: register the disconnect callback (events: wait_disconnect).  "
             "Documented: SUCCESS; PENDING; CONNECTION_INVALID (not connecting, i/a); "
             "CONNECTION_ABORTED (the peer abandoned); IO_TIMEOUT (i/a).")
        .def("complete_connect_ex", &Connector::complete_connect_ex, pyb::call_guard<ReleasedGil>(),
             pyb::arg("disconnect_event") = true,
             "NdkCompleteConnectEx (NDKPI 2.1) -> Call: complete_connect with the _EX disconnect "
             "callback, which reports a ProviderDisconnectReason.  Same statuses.")
        .def(
            "accept",
            [](Connector &c, const std::shared_ptr<Qp> &qp, Length inbound_read_limit,
               Length outbound_read_limit, const Bytes &private_data, Length private_data_length,
               bool disconnect_event) {
                ReadLimits limits =
                    read_limits(adapter_of(c), inbound_read_limit, outbound_read_limit);
                auto data = private_data_of(private_data, private_data_length);
                return released([&] {
                    return c.accept(qp, limits.inbound, limits.outbound, data, disconnect_event);
                });
            },
            pyb::arg("qp").none(false), pyb::arg("inbound_read_limit") = pyb::none(),
            pyb::arg("outbound_read_limit") = pyb::none(), pyb::arg("private_data") = pyb::none(),
            pyb::arg("private_data_length") = pyb::none(), pyb::arg("disconnect_event") = true,
            R"doc(NdkAccept -> ndk.Call: accept this incoming connection on ``qp``.

Read limits None: the adapter's maxima.  private_data / private_data_length as for connect.
disconnect_event: register the disconnect callback (wait_disconnect).  Documented: SUCCESS;
PENDING; CONNECTION_ABORTED (the peer abandoned); IO_TIMEOUT (the peer did not call
CompleteConnect); other.)doc")
        .def(
            "accept_ex",
            [](Connector &c, const std::shared_ptr<Qp> &qp, Length inbound_read_limit,
               Length outbound_read_limit, const Bytes &private_data, Length private_data_length,
               bool disconnect_event) {
                ReadLimits limits =
                    read_limits(adapter_of(c), inbound_read_limit, outbound_read_limit);
                auto data = private_data_of(private_data, private_data_length);
                return released([&] {
                    return c.accept_ex(qp, limits.inbound, limits.outbound, data, disconnect_event);
                });
            },
            pyb::arg("qp").none(false), pyb::arg("inbound_read_limit") = pyb::none(),
            pyb::arg("outbound_read_limit") = pyb::none(), pyb::arg("private_data") = pyb::none(),
            pyb::arg("private_data_length") = pyb::none(), pyb::arg("disconnect_event") = true,
            "NdkAcceptEx (NDKPI 2.1) -> ndk.Call: accept with the _EX disconnect callback, which "
            "reports a ProviderDisconnectReason (wait_disconnect).  Otherwise as accept.")
        .def(
            "reject",
            [](Connector &c, const Bytes &private_data, Length private_data_length) {
                PrivateData data = private_data_of(private_data, private_data_length);
                ReleasedGil released_gil;
                return Status{c.reject(data)};
            },
            pyb::arg("private_data") = pyb::none(), pyb::arg("private_data_length") = pyb::none(),
            "NdkReject -> Status (inline): refuse the connection (passive side, or active side "
            "after connect completed).  private_data: bytes-like or None (NULL); "
            "private_data_length overrides the length passed.  Documented: SUCCESS; "
            "CONNECTION_ABORTED; other.")
        .def(
            "get_connection_data",
            [](Connector &c, std::optional<ULONG> private_data_length) {
                if (private_data_length)
                    return connection_data_once(c, *private_data_length);
                pyb::object first = connection_data_once(c, 0);
                if (first.attr("status").cast<uint32_t>() != 0) // not STATUS_SUCCESS
                    return first;
                return connection_data_once(c, first.attr("private_data_length").cast<ULONG>());
            },
            pyb::arg("private_data_length") = pyb::none(),
            R"doc(NdkGetConnectionData -> ndk.ConnectionData (read limits and the peer's private data).

private_data_length None negotiates: a call with a NULL buffer and length 0 learns the size
(RDS), then a call with a buffer of that size; the result is the second call's.  An int makes
one call with a buffer of that size (0: NULL).  Documented: SUCCESS; BUFFER_TOO_SMALL
(private_data_length then holds the size needed); other.  A read limit the provider did not
write reads 0xFFFFFFFF (MAXULONG).)doc")
        .def(
            "get_local_address",
            [](Connector &c, Length address_length) {
                return address_of_call(address_length, "NdkGetLocalAddress",
                                       [&c](SocketAddress &a, Length n) {
                                           return c.get_local_address(a, n);
                                       });
            },
            pyb::arg("address_length") = pyb::none(),
            R"doc(NdkGetLocalAddress -> (host, port); raises ndk.NdkError (.status) on failure.

With address_length=N: one call with *pAddressLength = N, returning ndk.AddressResult(status,
address_length, address or None), for BUFFER_TOO_SMALL negotiation.  Documented: SUCCESS;
BUFFER_TOO_SMALL (address_length updated); other.)doc")
        .def(
            "get_peer_address",
            [](Connector &c, Length address_length) {
                return address_of_call(address_length, "NdkGetPeerAddress",
                                       [&c](SocketAddress &a, Length n) {
                                           return c.get_peer_address(a, n);
                                       });
            },
            pyb::arg("address_length") = pyb::none(),
            "NdkGetPeerAddress -> (host, port); raises ndk.NdkError (.status) on failure.  With "
            "address_length=N: ndk.AddressResult, as get_local_address.  Documented: SUCCESS; "
            "BUFFER_TOO_SMALL; other.")
        .def("disconnect", &Connector::disconnect, pyb::call_guard<ReleasedGil>(),
             "NdkDisconnect -> Call.  Completes once the peer's disconnect arrived and all DMA "
             "on the QP finished (digest 3.6); the QP is then flushed.  Documented: SUCCESS; "
             "PENDING; IO_TIMEOUT (i/a); other.")
        .def(
            "wait_disconnect",
            [](Connector &c, pyb::object timeout) -> pyb::object {
                if (auto reason = pop_released(c, c.events().disconnects, timeout))
                    return pyb::int_(*reason);
                return pyb::none();
            },
            pyb::arg("timeout") = pyb::none(),
            "The next disconnect event (NdkDisconnectEventCallback[Ex]): the "
            "ProviderDisconnectReason, 0 for the non-Ex callback or \"not provided\"; None after "
            "`timeout` seconds (None: wait forever).")
        .def_property_readonly(
            "disconnect_events", [](Connector &c) { return c.events().disconnects.delivered(); },
            "How many disconnect callbacks the provider made.")
        .def("__repr__", [](const Connector &c) { return object_repr(c, "Connector"); });

    object_class<Listener>(m, "Listener", "NDK_LISTENER (digest 1.9).")
        .def(
            "listen",
            [](Listener &l, const Address &address) {
                auto local = address_of(address, "address");
                return released([&] { return l.listen(local); });
            },
            pyb::arg("address"),
            "NdkListen((host, port)) -> Call.  Port 0 picks a free port (read it with "
            "get_local_address).  Documented: SUCCESS; PENDING; INSUFFICIENT_RESOURCES; "
            "SHARING_VIOLATION; INVALID_ADDRESS; TOO_MANY_ADDRESSES.")
        .def(
            "get_local_address",
            [](Listener &l) {
                SocketAddress a;
                NTSTATUS status = released([&] { return l.get_local_address(a); });
                if (status != STATUS_SUCCESS)
                    throw Error(status, "NdkGetLocalAddress");
                return std::make_pair(a.host(), a.port());
            },
            "NdkGetLocalAddress -> (host, port); raises ndk.NdkError on failure.")
        .def("control_connect_events", &Listener::control_connect_events, pyb::call_guard<ReleasedGil>(), pyb::arg("pause"),
             "NdkControlConnectEvents: while paused, incoming requests see no listener.")
        .def(
            "next_connection",
            [](Listener &l, pyb::object timeout) {
                std::shared_ptr<Connector> connector;
                std::atomic<bool> woken{false}; // the close wakes the wait (WAIT-CLOSED)
                auto watches = l.watch_close([&] {
                    woken.store(true);
                    l.wake_waits();
                });
                wait_interruptibly(timeout_of(timeout), [&](std::chrono::duration<double> slice) {
                    woken.store(false); // before next_connection's check of the listener
                    connector = l.next_connection(slice, &woken);
                    return connector != nullptr;
                });
                return connector;
            },
            pyb::arg("timeout") = pyb::none(),
            "The ndk.Connector of the next incoming connection request "
            "(NdkConnectEventCallback), or None after `timeout` seconds (None: wait forever).  "
            "Then get_connection_data(), accept(qp) or reject().  Requests never taken are "
            "closed with the listener.")
        .def("__repr__", [](const Listener &l) { return object_repr(l, "Listener"); });
}

} // namespace ndk::py
