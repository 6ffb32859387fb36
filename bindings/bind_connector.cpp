// ndk.Connector and ndk.Listener: connection establishment and teardown (digest 1.8, 1.9, 3.5,
// 3.6).  The Connector methods with Python-shaped defaults or results (connect, accept,
// get_connection_data, get_local_address, ...) are in python/ndk/_connection.py, on top of the
// raw `_` methods here, which pass every argument as given.
#include "object_support.hpp"

#include <pybind11/stl.h>

#include <vector>

namespace ndk::py {
namespace {

using Address = std::pair<std::string, uint16_t>;
using Bytes = std::optional<pyb::buffer>;
using Length = std::optional<ULONG>;

// Far above any MaxCallerData / MaxCalleeData; a larger buffer is a mistake, not a scenario.
constexpr ULONG kMaxPrivateDataBuffer = 1u << 24;

SocketAddress address_of(const Address &address)
{
    return SocketAddress::from(address.first, address.second);
}

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

// (status, *pAddressLength after the call, (host, port) on SUCCESS else None)
template <class Get>
pyb::tuple address_query(Length address_length, Get get)
{
    SocketAddress a;
    NTSTATUS status;
    {
        ReleasedGil released_gil;
        status = get(a, address_length);
    }
    return pyb::make_tuple(Status{status}, a.length,
                           status == STATUS_SUCCESS ? address_or_none(a) : pyb::none());
}

// (status, inbound read limit, outbound read limit, bytes copied, *pPrivateDataLength after)
pyb::tuple connection_data(Connector &c, ULONG private_data_length)
{
    if (private_data_length > kMaxPrivateDataBuffer)
        throw pyb::value_error("private_data_length above " +
                               std::to_string(kMaxPrivateDataBuffer) + " bytes");
    std::vector<uint8_t> buffer(private_data_length);
    ULONG inbound = 0, outbound = 0, length = private_data_length;
    NTSTATUS status;
    {
        ReleasedGil released_gil;
        status = c.get_connection_data(&inbound, &outbound,
                                       private_data_length ? buffer.data() : nullptr, &length);
    }
    // The provider copies min(*len, RDS) bytes and writes RDS back (digest 1.8).
    size_t copied = 0;
    if (status == STATUS_SUCCESS || status == STATUS_BUFFER_TOO_SMALL)
        copied = std::min(private_data_length, length);
    return pyb::make_tuple(Status{status}, inbound, outbound,
                           pyb::bytes(reinterpret_cast<const char *>(buffer.data()), copied),
                           length);
}

} // namespace

void bind_connector(pyb::module_ &m)
{
    object_class<Connector>(m, "Connector", R"doc(NDK_CONNECTOR (digest 1.8).

Active side: adapter.create_connector(), connect(qp, dest), complete_connect().  Passive side:
listener.next_connection(), accept(qp).  Disconnect events queue up: wait_disconnect().
)doc")
        .def(
            "_connect",
            [](Connector &c, const std::shared_ptr<Qp> &qp, const Address &src,
               const Address &dest, ULONG inbound_read_limit, ULONG outbound_read_limit,
               const Bytes &private_data, Length private_data_length) {
                auto from = address_of(src), to = address_of(dest);
                auto data = private_data_of(private_data, private_data_length);
                return released([&] {
                    return c.connect(qp, from, to, inbound_read_limit, outbound_read_limit, data);
                });
            },
            pyb::arg("qp").none(false), pyb::arg("src_address"), pyb::arg("dest_address"),
            pyb::arg("inbound_read_limit"), pyb::arg("outbound_read_limit"),
            pyb::arg("private_data") = pyb::none(), pyb::arg("private_data_length") = pyb::none(),
            "NdkConnect with every argument explicit (see connect).")
        .def(
            "_connect_with_shared_endpoint",
            [](Connector &c, const std::shared_ptr<Qp> &qp,
               const std::shared_ptr<SharedEndpoint> &shared_endpoint, const Address &dest,
               ULONG inbound_read_limit, ULONG outbound_read_limit, const Bytes &private_data,
               Length private_data_length) {
                auto to = address_of(dest);
                auto data = private_data_of(private_data, private_data_length);
                return released([&] {
                    return c.connect_with_shared_endpoint(qp, shared_endpoint, to,
                                                          inbound_read_limit, outbound_read_limit,
                                                          data);
                });
            },
            pyb::arg("qp").none(false), pyb::arg("shared_endpoint").none(false),
            pyb::arg("dest_address"), pyb::arg("inbound_read_limit"),
            pyb::arg("outbound_read_limit"), pyb::arg("private_data") = pyb::none(),
            pyb::arg("private_data_length") = pyb::none(),
            "NdkConnectWithSharedEndpoint with every argument explicit (see "
            "connect_with_shared_endpoint).")
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
            "_accept",
            [](Connector &c, const std::shared_ptr<Qp> &qp, ULONG inbound_read_limit,
               ULONG outbound_read_limit, const Bytes &private_data, Length private_data_length,
               bool disconnect_event) {
                auto data = private_data_of(private_data, private_data_length);
                return released([&] {
                    return c.accept(qp, inbound_read_limit, outbound_read_limit, data,
                                    disconnect_event);
                });
            },
            pyb::arg("qp").none(false), pyb::arg("inbound_read_limit"),
            pyb::arg("outbound_read_limit"), pyb::arg("private_data") = pyb::none(),
            pyb::arg("private_data_length") = pyb::none(), pyb::arg("disconnect_event") = true,
            "NdkAccept with every argument explicit (see accept).")
        .def(
            "_accept_ex",
            [](Connector &c, const std::shared_ptr<Qp> &qp, ULONG inbound_read_limit,
               ULONG outbound_read_limit, const Bytes &private_data, Length private_data_length,
               bool disconnect_event) {
                auto data = private_data_of(private_data, private_data_length);
                return released([&] {
                    return c.accept_ex(qp, inbound_read_limit, outbound_read_limit, data,
                                       disconnect_event);
                });
            },
            pyb::arg("qp").none(false), pyb::arg("inbound_read_limit"),
            pyb::arg("outbound_read_limit"), pyb::arg("private_data") = pyb::none(),
            pyb::arg("private_data_length") = pyb::none(), pyb::arg("disconnect_event") = true,
            "NdkAcceptEx with every argument explicit (see accept_ex).")
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
        .def("_get_connection_data", &connection_data, pyb::arg("private_data_length"),
             "One NdkGetConnectionData call with a buffer of private_data_length bytes (0: "
             "NULL) -> (status, inbound_read_limit, outbound_read_limit, bytes copied, "
             "*pPrivateDataLength).")
        .def(
            "_get_local_address",
            [](Connector &c, Length address_length) {
                return address_query(address_length, [&c](SocketAddress &a, Length n) {
                    return c.get_local_address(a, n);
                });
            },
            pyb::arg("address_length") = pyb::none(),
            "One NdkGetLocalAddress call -> (status, *pAddressLength, (host, port) or None).")
        .def(
            "_get_peer_address",
            [](Connector &c, Length address_length) {
                return address_query(address_length, [&c](SocketAddress &a, Length n) {
                    return c.get_peer_address(a, n);
                });
            },
            pyb::arg("address_length") = pyb::none(),
            "One NdkGetPeerAddress call -> (status, *pAddressLength, (host, port) or None).")
        .def("disconnect", &Connector::disconnect, pyb::call_guard<ReleasedGil>(),
             "NdkDisconnect -> Call.  Completes once the peer's disconnect arrived and all DMA "
             "on the QP finished (digest 3.6); the QP is then flushed.  Documented: SUCCESS; "
             "PENDING; IO_TIMEOUT (i/a); other.")
        .def(
            "wait_disconnect",
            [](Connector &c, pyb::object timeout) -> pyb::object {
                if (auto reason = pop_released(c.events().disconnects, timeout))
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
                auto local = address_of(address);
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
                wait_interruptibly(timeout_of(timeout), [&](std::chrono::duration<double> slice) {
                    connector = l.next_connection(slice);
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
