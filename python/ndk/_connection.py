"""What ndk.Connector's queries return (digest 1.8): plain values the binding builds.

A leaf module of the package: it imports nothing of the binding (bindings/package_types.hpp).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from . import _display
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

    _repr_pretty_ = _display.pretty
    _repr_html_ = _display.html


@dataclass(frozen=True)
class AddressResult:
    """What one NdkGetLocalAddress / NdkGetPeerAddress call returned: the status, the
    *pAddressLength the provider wrote back, and (host, port) on SUCCESS (else None)."""

    status: Status
    address_length: int
    address: Optional[tuple]

    _repr_pretty_ = _display.pretty
    _repr_html_ = _display.html
