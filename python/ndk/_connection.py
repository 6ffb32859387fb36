"""Connector methods with Python-shaped defaults and results (digest 1.8).

Installed on ``ndk.Connector`` by ``ndk/__init__.py``, on top of the binding's raw ``_``
methods (which pass every argument as given).  Defaults: the source address is the adapter's
first address of the destination's family with port 0; read limits are the adapter's
MaxInboundReadLimit / MaxOutboundReadLimit.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Optional

from ._adapter import addresses
from ._errors import NdkError
from ._status import Status


@dataclass(frozen=True)
class ConnectionData:
    """What NdkGetConnectionData returned.

    private_data is the bytes actually copied; private_data_length is what the provider wrote
    back to *pPrivateDataLength (the size it needs, RDS).
    """

    status: Status
    inbound_read_limit: int
    outbound_read_limit: int
    private_data: bytes
    private_data_length: int


@dataclass(frozen=True)
class AddressResult:
    """What one NdkGetLocalAddress / NdkGetPeerAddress call returned: the status, the
    *pAddressLength the provider wrote back, and (host, port) on SUCCESS (else None)."""

    status: Status
    address_length: int
    address: Optional[tuple]


def _family(address, what):
    if not isinstance(address, tuple) or len(address) != 2:
        raise TypeError(f"{what} is a (host, port) tuple, not {address!r}")
    try:
        return ipaddress.ip_address(address[0]).version
    except ValueError:
        raise ValueError(f"{what}: not an IPv4 or IPv6 address: {address[0]!r}") from None


def source_for(adapter, dest_address):
    """(the adapter's first address of dest_address's family, 0); the unspecified address of
    that family when the adapter does not report its addresses."""
    version = _family(dest_address, "dest_address")
    for host in addresses(adapter) or []:
        try:
            if ipaddress.ip_address(host).version == version:
                return (host, 0)
        except ValueError:
            continue
    return ("0.0.0.0" if version == 4 else "::", 0)


def _read_limits(adapter, inbound, outbound):
    if inbound is None or outbound is None:
        info = adapter.query_info()
        inbound = info.max_inbound_read_limit if inbound is None else inbound
        outbound = info.max_outbound_read_limit if outbound is None else outbound
    return inbound, outbound


def connect(self, qp, dest_address, src_address=None, inbound_read_limit=None,
            outbound_read_limit=None, private_data=None, private_data_length=None):
    """NdkConnect -> ndk.Call: connect ``qp`` to a listener at dest_address (host, port).

    src_address None: the adapter's first address of dest's family, port 0 (an ephemeral
    port).  Read limits None: the adapter's MaxInboundReadLimit / MaxOutboundReadLimit.
    private_data: bytes-like or None (NULL); private_data_length overrides the length passed
    (None with a length passes NULL with that length).  The connector holds qp from now on.
    Documented: SUCCESS; PENDING; INSUFFICIENT_RESOURCES, NETWORK_UNREACHABLE,
    HOST_UNREACHABLE, CONNECTION_REFUSED, IO_TIMEOUT, SHARING_VIOLATION, INVALID_ADDRESS,
    TOO_MANY_ADDRESSES, ADDRESS_ALREADY_EXISTS (all i/a); other.
    """
    if src_address is None:
        src_address = source_for(self.adapter, dest_address)
    inbound, outbound = _read_limits(self.adapter, inbound_read_limit, outbound_read_limit)
    return self._connect(qp, src_address, dest_address, inbound, outbound, private_data,
                         private_data_length)


def connect_with_shared_endpoint(self, qp, shared_endpoint, dest_address,
                                 inbound_read_limit=None, outbound_read_limit=None,
                                 private_data=None, private_data_length=None):
    """NdkConnectWithSharedEndpoint -> ndk.Call: connect from ``shared_endpoint``'s address.

    Defaults as for connect.  The connector holds qp and shared_endpoint from now on.
    Documented: SUCCESS; PENDING; INSUFFICIENT_RESOURCES, NETWORK_UNREACHABLE,
    HOST_UNREACHABLE, CONNECTION_REFUSED, IO_TIMEOUT, ADDRESS_ALREADY_EXISTS (all i/a); other.
    """
    inbound, outbound = _read_limits(self.adapter, inbound_read_limit, outbound_read_limit)
    return self._connect_with_shared_endpoint(qp, shared_endpoint, dest_address, inbound,
                                              outbound, private_data, private_data_length)


def accept(self, qp, inbound_read_limit=None, outbound_read_limit=None, private_data=None,
           private_data_length=None, disconnect_event=True):
    """NdkAccept -> ndk.Call: accept this incoming connection on ``qp``.

    Read limits None: the adapter's maxima.  private_data / private_data_length as for
    connect.  disconnect_event: register the disconnect callback (wait_disconnect).
    Documented: SUCCESS; PENDING; CONNECTION_ABORTED (the peer abandoned); IO_TIMEOUT (the peer
    did not call CompleteConnect); other.
    """
    inbound, outbound = _read_limits(self.adapter, inbound_read_limit, outbound_read_limit)
    return self._accept(qp, inbound, outbound, private_data, private_data_length,
                        disconnect_event)


def accept_ex(self, qp, inbound_read_limit=None, outbound_read_limit=None, private_data=None,
              private_data_length=None, disconnect_event=True):
    """NdkAcceptEx (NDKPI 2.1) -> ndk.Call: accept with the _EX disconnect callback, which
    reports a ProviderDisconnectReason (wait_disconnect).  Otherwise as accept."""
    inbound, outbound = _read_limits(self.adapter, inbound_read_limit, outbound_read_limit)
    return self._accept_ex(qp, inbound, outbound, private_data, private_data_length,
                           disconnect_event)


def get_connection_data(self, private_data_length=None):
    """NdkGetConnectionData -> ConnectionData (read limits and the peer's private data).

    private_data_length None negotiates: a call with a NULL buffer and length 0 learns the size
    (RDS), then a call with a buffer of that size; the result is the second call's.  An int
    makes one call with a buffer of that size (0: NULL).  Documented: SUCCESS;
    BUFFER_TOO_SMALL (private_data_length then holds the size needed); other.
    """
    if private_data_length is None:
        first = _connection_data(self, 0)
        if first.status != Status.SUCCESS:
            return first
        return _connection_data(self, first.private_data_length)
    return _connection_data(self, private_data_length)


def _connection_data(connector, length):
    if isinstance(length, bool) or not isinstance(length, int):
        raise TypeError(f"private_data_length must be an int or None, not {type(length).__name__}")
    status, inbound, outbound, data, written = connector._get_connection_data(length)
    return ConnectionData(status, inbound, outbound, data, written)


def _address(raw, function, address_length):
    status, length, address = raw(address_length)
    if address_length is not None:
        return AddressResult(status, length, address)
    if status != Status.SUCCESS:
        raise NdkError(status, f"{function}: {status}")
    return address


def get_local_address(self, address_length=None):
    """NdkGetLocalAddress -> (host, port); raises ndk.NdkError (.status) on failure.

    With address_length=N: one call with *pAddressLength = N, returning AddressResult(status,
    address_length, address or None), for BUFFER_TOO_SMALL negotiation.  Documented: SUCCESS;
    BUFFER_TOO_SMALL (address_length updated); other.
    """
    return _address(self._get_local_address, "NdkGetLocalAddress", address_length)


def get_peer_address(self, address_length=None):
    """NdkGetPeerAddress -> (host, port); raises ndk.NdkError (.status) on failure.  With
    address_length=N: AddressResult, as get_local_address.  Documented: SUCCESS;
    BUFFER_TOO_SMALL; other."""
    return _address(self._get_peer_address, "NdkGetPeerAddress", address_length)


def install(connector_class):
    for function in (connect, connect_with_shared_endpoint, accept, accept_ex,
                     get_connection_data, get_local_address, get_peer_address):
        setattr(connector_class, function.__name__, function)
