"""NDK_LISTENER: NdkCreateListener, NdkListen, NdkGetLocalAddress, endpoint sharing
(digest 1.1, 1.9, 3.5, 4.2)."""

from __future__ import annotations

import pytest

import ndk
from ndk import Status
from ndk.testing import OpenAdapter

from ndk.scenario import (CREATE_MODES, EPHEMERAL, UNOWNED, TIMEOUT, V4, V4_OTHER, V6,
                          expect_closed, expect_created, expect_request, listening)
from ndk.scenario.stated import stated

ADDRESSES = f"{V4},{V6}"


@pytest.fixture
def addressed(open_adapter: OpenAdapter) -> ndk.Adapter:
    """An adapter owning V4 and V6 (soft knob address=)."""
    return open_adapter(address=ADDRESSES)


def new_listener(adapter: ndk.Adapter) -> ndk.Listener:
    return adapter.create_listener().get(timeout=TIMEOUT)


@pytest.mark.rule("LISTENER-CREATE")
@pytest.mark.digest("1.1")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_create_listener(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 1.1 (NdkCreateListener), 1.0: SUCCESS inline or PENDING then exactly one
    completion with SUCCESS and the listener (object type Listener 9)."""
    adapter = open_adapter(create_mode=mode)
    listener = expect_created(adapter.create_listener(), mode)
    assert listener.object_type == ndk.ObjectType.LISTENER


@pytest.mark.rule("LISTENER-LISTEN")
@pytest.mark.digest("1.9")
@pytest.mark.parametrize("host", [V4, V6], ids=["ipv4", "ipv6"])
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_listen(open_adapter: OpenAdapter, mode: str, host: str) -> None:
    """digest 1.9 (NdkListen): SUCCESS inline or PENDING then exactly one completion; IPv4
    and IPv6 are both supported (digest 3.5); NdkGetLocalAddress returns the address."""
    adapter = open_adapter(address=ADDRESSES, request_mode=mode)
    listener = new_listener(adapter)
    expect_request(listener.listen((host, 6000)), mode)
    assert listener.get_local_address() == (host, 6000)


@pytest.mark.rule("LISTENER-LISTEN-WILDCARD")
@pytest.mark.digest("1.9")
@pytest.mark.reference("ADDRESS")
@pytest.mark.parametrize("wildcard, own", [("0.0.0.0", V4), ("::", V6)], ids=["ipv4", "ipv6"])
def test_listen_on_wildcard(addressed: ndk.Adapter, wildcard: str, own: str) -> None:
    """digest 1.9 is silent on listening on the unspecified address. docs/semantics.md
    ADDRESS (a reference choice): 0.0.0.0 / :: means the adapter's own address of that
    family; NdkGetLocalAddress reports that address."""
    listener = new_listener(addressed)
    expect_request(listener.listen((wildcard, 6001)), "i/a")
    assert listener.get_local_address() == (own, 6001)


@pytest.mark.rule("LISTENER-LISTEN-PORT-ZERO")
@pytest.mark.digest("1.9")
def test_listen_on_port_zero(addressed: ndk.Adapter) -> None:
    """digest 1.9: NdkGetLocalAddress is how the consumer learns the port the provider
    picked for a port-0 listen; digest 1.1: the ephemeral range is 49152-65535.
    docs/semantics.md: ADDRESS. Two port-0 listens get different ports."""
    first, second = new_listener(addressed), new_listener(addressed)
    expect_request(first.listen((V4, 0)), "i/a")
    expect_request(second.listen((V4, 0)), "i/a")
    host, port = first.get_local_address()
    assert host == V4
    assert port in EPHEMERAL
    assert second.get_local_address()[1] in EPHEMERAL
    assert second.get_local_address()[1] != port


@pytest.mark.rule("LISTENER-LISTEN-INVALID-ADDRESS")
@pytest.mark.digest("1.9")
@pytest.mark.parametrize("host", [UNOWNED, V4_OTHER, "2001:db8::99"])
def test_listen_on_foreign_address(addressed: ndk.Adapter, host: str) -> None:
    """digest 1.9: INVALID_ADDRESS (i/a) for an address that is "not a valid address for the
    adapter" (DDI:nc-ndkpi-ndk_fn_listen).  The refused listen took nothing: a listen on the
    same listener at an address the adapter owns then succeeds, and NdkGetLocalAddress
    reports that address (digest 1.9).  What NdkGetLocalAddress answers between the two is
    the provider's choice, LISTENER-ADDRESS-BEFORE-LISTEN's."""
    listener = new_listener(addressed)
    expect_request(listener.listen((host, 6002)), "i/a", Status.INVALID_ADDRESS)
    expect_request(listener.listen((V4, 6002)), "i/a")
    assert listener.get_local_address() == (V4, 6002)


@pytest.mark.rule("LISTENER-LISTEN-SHARING-VIOLATION")
@pytest.mark.digest("3.5")
@pytest.mark.parametrize("second_host", [V4, "0.0.0.0"], ids=["same", "wildcard"])
def test_listen_on_port_in_use(addressed: ndk.Adapter, second_host: str) -> None:
    """digest 1.9 (SHARING_VIOLATION, i/a), 3.5: while the listener endpoint is referenced,
    a new Listen on the same address:port fails. docs/semantics.md: ADDRESS. The first
    listener is unaffected and the second can listen elsewhere."""
    first = listening(addressed, (V4, 6003))
    second = new_listener(addressed)
    expect_request(second.listen((second_host, 6003)), "i/a", Status.SHARING_VIOLATION)
    assert first.get_local_address() == (V4, 6003)
    expect_request(second.listen((V4, 6004)), "i/a")


@pytest.mark.rule("LISTENER-LISTEN-SHARED-ENDPOINT-PORT")
@pytest.mark.digest("3.5")
def test_listen_on_port_of_shared_endpoint(addressed: ndk.Adapter) -> None:
    """digest 3.5: a shared endpoint holds its address:port; a Listen on it fails with
    SHARING_VIOLATION (docs/semantics.md: ADDRESS), and succeeds once the endpoint is
    closed (the port is freed at once)."""
    endpoint = addressed.create_shared_endpoint((V4, 6005)).get(timeout=TIMEOUT)
    listener = new_listener(addressed)
    expect_request(listener.listen((V4, 6005)), "i/a", Status.SHARING_VIOLATION)
    expect_closed(endpoint.close())
    expect_request(listener.listen((V4, 6005)), "i/a")


@pytest.mark.rule("LISTENER-LISTEN-FAMILIES-SEPARATE")
@pytest.mark.digest("3.5")
def test_same_port_on_ipv4_and_ipv6(addressed: ndk.Adapter) -> None:
    """digest 3.5 (endpoints are address:port; providers support IPv4 and IPv6): the same
    port on the adapter's IPv4 and IPv6 addresses are different endpoints."""
    held = listening(addressed, (V4, 6006))
    listener = new_listener(addressed)
    expect_request(listener.listen((V6, 6006)), "i/a")
    assert held.get_local_address() == (V4, 6006)


@pytest.mark.rule("LISTENER-LISTEN-OTHER-ADAPTER")
@pytest.mark.digest("3.5")
def test_same_port_on_two_adapters(open_adapter: OpenAdapter) -> None:
    """digest 3.5: two adapters own different addresses, so the same port may be listened
    on by each."""
    first = open_adapter(address=V4)
    second = open_adapter(address=V4_OTHER)
    held = listening(first, (V4, 6007))
    listener = new_listener(second)
    expect_request(listener.listen((V4_OTHER, 6007)), "i/a")
    assert listener.get_local_address() == (V4_OTHER, 6007)
    assert held.get_local_address() == (V4, 6007)


@pytest.mark.rule("LISTENER-EPHEMERAL-EXHAUSTED")
@pytest.mark.digest("1.9")
def test_listen_port_zero_exhausted(open_adapter: OpenAdapter) -> None:
    """digest 1.9: TOO_MANY_ADDRESSES when port 0 is given and no ephemeral port is free.
    docs/semantics.md: ADDRESS (knob ephemeral_ports). Closing one listener frees its port
    for the next port-0 listen."""
    adapter = open_adapter(address=V4, ephemeral_ports="49152-49153")
    first = listening(adapter, (V4, 0))
    second = listening(adapter, (V4, 0))  # held open: it holds the other port
    third = new_listener(adapter)
    expect_request(third.listen((V4, 0)), "i/a", Status.TOO_MANY_ADDRESSES)
    freed = first.get_local_address()[1]
    expect_closed(first.close())
    expect_request(third.listen((V4, 0)), "i/a")
    assert third.get_local_address() == (V4, freed)
    assert second.get_local_address()[1] != freed


@pytest.mark.rule("LISTENER-CLOSE-FREES-PORT")
@pytest.mark.digest("3.5")
def test_close_frees_port(addressed: ndk.Adapter) -> None:
    """digest 3.5: the address/port is released when the last reference (here the listener
    itself) is closed. docs/semantics.md: ADDRESS (at once: a new listen succeeds)."""
    first = listening(addressed, (V4, 6008))
    expect_closed(first.close())
    second = new_listener(addressed)
    expect_request(second.listen((V4, 6008)), "i/a")


@pytest.mark.rule("LISTENER-LISTEN-TWICE")
@pytest.mark.digest("1.9")
@pytest.mark.reference("LISTEN-STATE")
def test_listen_twice(addressed: ndk.Adapter) -> None:
    """digest 1.9 is silent on NdkListen on a listener already listening. docs/semantics.md
    LISTEN-STATE (a reference choice): INVALID_DEVICE_STATE; the first listen stays in force
    and the second port is not taken."""
    listener = listening(addressed, (V4, 6009))
    expect_request(listener.listen((V4, 6010)), "i/a", Status.INVALID_DEVICE_STATE)
    assert listener.get_local_address() == (V4, 6009)
    assert listening(addressed, (V4, 6010)).get_local_address() == (V4, 6010)


@pytest.mark.rule("LISTENER-ADDRESS-BEFORE-LISTEN")
@pytest.mark.digest("1.9")
@pytest.mark.reference("LISTEN-STATE")
@pytest.mark.parametrize("refused", [False, True], ids=["new", "after-refused-listen"])
def test_local_address_before_listen(addressed: ndk.Adapter, refused: bool) -> None:
    """digest 1.9 does not say what NdkGetLocalAddress answers before NdkListen succeeded.
    docs/semantics.md LISTEN-STATE (a reference choice, from ND2 Listener::GetLocalAddress of
    digest 4.2): INVALID_DEVICE_STATE, on a new listener and on one whose only listen was
    refused.  Stated (digest 1.9): that refusal, INVALID_ADDRESS for an address the adapter
    does not own."""
    listener = new_listener(addressed)
    if refused:
        with stated("digest 1.9"):
            expect_request(listener.listen((UNOWNED, 6012)), "i/a", Status.INVALID_ADDRESS)
    with pytest.raises(ndk.NdkError) as failure:
        listener.get_local_address()
    assert failure.value.status == Status.INVALID_DEVICE_STATE


# Each documented (i/a) failure of NdkListen, and what produces it on any provider.
LISTEN_FAILURES = {
    "sharing-violation": (V4, Status.SHARING_VIOLATION),  # the port held by another listener
    "invalid-address": (UNOWNED, Status.INVALID_ADDRESS),  # an address the adapter lacks
}


@pytest.mark.rule("LISTENER-LISTEN-ASYNC-FAILURES")
@pytest.mark.digest("1.9")
@pytest.mark.parametrize("failure", sorted(LISTEN_FAILURES))
def test_listen_failures_through_the_completion(open_adapter: OpenAdapter, failure: str) -> None:
    """digest 1.9: SHARING_VIOLATION ("the specified local address is already in use") and
    INVALID_ADDRESS ("not a valid address for the adapter", DDI:nc-ndkpi-ndk_fn_listen) are
    (i/a): the provider may report them through the completion.  Each comes from the
    provider's own check (the port held by a listening listener; an address the adapter
    does not own), reported late with request_mode=pending (docs/knobs.md: the listen has
    run in the provider, its documented failure comes through the completion): PENDING,
    then exactly one completion with the status.  The listener is not listening afterwards
    (a listen at a free address of the adapter on it succeeds and reports that address), and
    the port's holder keeps its endpoint (digest 3.5)."""
    adapter = open_adapter(address=ADDRESSES, request_mode="pending")
    holder = listening(adapter, (V4, 6013))
    host, status = LISTEN_FAILURES[failure]
    listener = new_listener(adapter)
    expect_request(listener.listen((host, 6013)), "pending", status)
    expect_request(listener.listen((V4, 6014)), "pending")
    assert listener.get_local_address() == (V4, 6014)
    assert holder.get_local_address() == (V4, 6013)
    expect_request(new_listener(adapter).listen((V4, 6013)), "pending",
                   Status.SHARING_VIOLATION)


@pytest.mark.rule("LISTENER-PAUSE")
@pytest.mark.digest("1.9")
def test_pause_and_resume_connect_events(addressed: ndk.Adapter) -> None:
    """digest 1.9 (NdkControlConnectEvents is VOID): pausing and resuming connect events on
    a listening listener leaves it listening on its endpoint."""
    listener = listening(addressed, (V4, 6012))
    listener.control_connect_events(True)
    listener.control_connect_events(False)
    assert listener.get_local_address() == (V4, 6012)
    other = new_listener(addressed)
    expect_request(other.listen((V4, 6012)), "i/a", Status.SHARING_VIOLATION)
