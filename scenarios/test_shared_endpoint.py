"""NDK_SHARED_ENDPOINT: NdkCreateSharedEndpoint and NdkGetLocalAddress (digest 1.1, 1.10,
3.5)."""

from __future__ import annotations

import pytest

import ndk
from ndk import Status
from ndk.testing import OpenAdapter

from ndk.scenario import (CREATE_MODES, EPHEMERAL, UNOWNED, TIMEOUT, V4, V4_OTHER, V6,
                          expect_closed, expect_create_failed, expect_created, listening)

ADDRESSES = f"{V4},{V6}"


@pytest.fixture
def addressed(open_adapter: OpenAdapter) -> ndk.Adapter:
    """An adapter owning V4 and V6 (soft knob address=)."""
    return open_adapter(address=ADDRESSES)


@pytest.mark.rule("SE-CREATE")
@pytest.mark.digest("1.1")
@pytest.mark.parametrize("host", [V4, V6], ids=["ipv4", "ipv6"])
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_create_shared_endpoint(open_adapter: OpenAdapter, mode: str, host: str) -> None:
    """digest 1.1 (NdkCreateSharedEndpoint), 1.0: SUCCESS inline or PENDING then exactly one
    completion with the endpoint (object type SharedEndpoint 7); digest 1.10:
    NdkGetLocalAddress returns its address, IPv4 or IPv6."""
    adapter = open_adapter(address=ADDRESSES, create_mode=mode)
    endpoint = expect_created(adapter.create_shared_endpoint((host, 7000)), mode)
    assert endpoint.object_type == ndk.ObjectType.SHARED_ENDPOINT
    assert endpoint.get_local_address() == (host, 7000)


@pytest.mark.rule("SE-CREATE-INVALID-ADDRESS")
@pytest.mark.digest("1.1")
@pytest.mark.parametrize("host", [UNOWNED, V4_OTHER, "2001:db8::99"])
def test_create_on_foreign_address(addressed: ndk.Adapter, host: str) -> None:
    """digest 1.1: INVALID_ADDRESS (address not valid for the adapter). docs/semantics.md:
    ADDRESS. Nothing was created; a create on the adapter's address and the same port
    succeeds."""
    expect_create_failed(addressed.create_shared_endpoint((host, 7002)), Status.INVALID_ADDRESS)
    expect_created(addressed.create_shared_endpoint((V4, 7002)), "i/a")


@pytest.mark.rule("SE-CREATE-SHARING-VIOLATION")
@pytest.mark.digest("1.1")
@pytest.mark.parametrize("holder", ["shared_endpoint", "listener"])
def test_create_on_port_in_use(addressed: ndk.Adapter, holder: str) -> None:
    """digest 1.1: SHARING_VIOLATION (local address in use, i/a); digest 3.5: a listener or
    shared endpoint holds its address:port. docs/semantics.md: ADDRESS."""
    held: ndk.Listener | ndk.SharedEndpoint
    if holder == "listener":
        held = listening(addressed, (V4, 7003))
    else:
        held = addressed.create_shared_endpoint((V4, 7003)).get(timeout=TIMEOUT)
    expect_create_failed(addressed.create_shared_endpoint((V4, 7003)),
                         Status.SHARING_VIOLATION)
    expect_create_failed(addressed.create_shared_endpoint(("0.0.0.0", 7003)),
                         Status.SHARING_VIOLATION)
    expect_created(addressed.create_shared_endpoint((V4, 7004)), "i/a")
    assert held.get_local_address() == (V4, 7003)


@pytest.mark.rule("SE-CREATE-WILDCARD")
@pytest.mark.digest("1.10")
@pytest.mark.reference("ADDRESS")
@pytest.mark.parametrize("wildcard, own", [("0.0.0.0", V4), ("::", V6)], ids=["ipv4", "ipv6"])
def test_create_on_wildcard(addressed: ndk.Adapter, wildcard: str, own: str) -> None:
    """digest 1.1, 1.10 are silent on a shared endpoint on the unspecified address.
    docs/semantics.md ADDRESS (a reference choice): 0.0.0.0 / :: means the adapter's own
    address of that family, reported by NdkGetLocalAddress (digest 1.10)."""
    endpoint = addressed.create_shared_endpoint((wildcard, 7005)).get(timeout=TIMEOUT)
    assert endpoint.get_local_address() == (own, 7005)


@pytest.mark.rule("SE-CREATE-PORT-ZERO")
@pytest.mark.digest("1.10")
def test_create_on_port_zero(addressed: ndk.Adapter) -> None:
    """digest 1.10: NdkGetLocalAddress is used to learn the port the provider picked for
    port 0; digest 1.1: from the ephemeral range 49152-65535. docs/semantics.md: ADDRESS."""
    first = addressed.create_shared_endpoint((V4, 0)).get(timeout=TIMEOUT)
    second = addressed.create_shared_endpoint((V4, 0)).get(timeout=TIMEOUT)
    assert first.get_local_address()[0] == V4
    ports = {first.get_local_address()[1], second.get_local_address()[1]}
    assert len(ports) == 2
    assert all(port in EPHEMERAL for port in ports)


@pytest.mark.rule("SE-EPHEMERAL-EXHAUSTED")
@pytest.mark.digest("1.1")
def test_create_port_zero_exhausted(open_adapter: OpenAdapter) -> None:
    """digest 1.1: TOO_MANY_ADDRESSES when port 0 is given and no ephemeral port is free.
    docs/semantics.md: ADDRESS (knob ephemeral_ports). Closing an endpoint frees its port."""
    adapter = open_adapter(address=V4, ephemeral_ports="49152-49153")
    first = adapter.create_shared_endpoint((V4, 0)).get(timeout=TIMEOUT)
    second = adapter.create_shared_endpoint((V4, 0)).get(timeout=TIMEOUT)
    expect_create_failed(adapter.create_shared_endpoint((V4, 0)), Status.TOO_MANY_ADDRESSES)
    freed = first.get_local_address()
    expect_closed(first.close())
    third = expect_created(adapter.create_shared_endpoint((V4, 0)), "i/a")
    assert third.get_local_address() == freed
    assert second.is_open


@pytest.mark.rule("SE-EPHEMERAL-SHARED-WITH-LISTENERS")
@pytest.mark.digest("3.5")
def test_listeners_and_endpoints_share_the_ephemeral_range(open_adapter: OpenAdapter) -> None:
    """digest 1.1, 1.9, 3.5: listeners and shared endpoints draw port-0 ports from the same
    ephemeral range of the address; when listeners hold them all, a port-0 endpoint fails
    with TOO_MANY_ADDRESSES."""
    adapter = open_adapter(address=V4, ephemeral_ports="49152-49153")
    listeners = [listening(adapter, (V4, 0)) for _ in range(2)]  # held open
    expect_create_failed(adapter.create_shared_endpoint((V4, 0)), Status.TOO_MANY_ADDRESSES)
    expect_closed(listeners.pop().close())
    expect_created(adapter.create_shared_endpoint((V4, 0)), "i/a")


@pytest.mark.rule("SE-CLOSE-FREES-PORT")
@pytest.mark.digest("3.5")
def test_close_frees_port(addressed: ndk.Adapter) -> None:
    """digest 3.5: the shared endpoint's address:port is released when its count reaches
    zero. docs/semantics.md: ADDRESS (at once: a new create on it succeeds)."""
    endpoint = addressed.create_shared_endpoint((V6, 7006)).get(timeout=TIMEOUT)
    expect_closed(endpoint.close())
    with pytest.raises(ndk.ObjectClosedError):
        endpoint.get_local_address()
    expect_created(addressed.create_shared_endpoint((V6, 7006)), "i/a")
