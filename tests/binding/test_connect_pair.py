"""ndk.testing.connect_pair: its result, and a clear exception naming the failed step."""

import re

import pytest

import ndk
from ndk import Status


class WithoutAddresses:
    """An adapter that reports no IP address (its address knob reads empty)."""

    addresses = []

    def __init__(self, adapter):
        self._adapter = adapter

    def __getattr__(self, name):
        return getattr(self._adapter, name)


def test_loopback_on_one_adapter():
    with ndk.open_adapter("soft") as ad:
        a, b = ndk.testing.connect_pair(ad, ad, cq_depth=8, max_receive_request_sge=1)
        assert a.adapter is ad and b.adapter is ad and a.listener is None
        assert a.connector.get_peer_address() == b.listener.get_local_address()
        assert isinstance(a.qp, ndk.Qp) and isinstance(b.cq, ndk.Cq)


def test_ipv6_only_server():
    with ndk.open_adapter("soft", address="2001:db8::71") as srv, \
            ndk.open_adapter("soft", address="2001:db8::72") as cli:
        a, b = ndk.testing.connect_pair(cli, srv)
        assert b.connector.get_local_address()[0] == "2001:db8::71"
        assert a.connector.get_local_address()[0] == "2001:db8::72"


def test_server_without_an_address_is_a_clear_error():
    with ndk.open_adapter("soft") as ad:
        with pytest.raises(ndk.NdkError, match="no IPv4 or IPv6 address to listen on") as error:
            ndk.testing.connect_pair(ad, WithoutAddresses(ad))
        assert error.value.status == Status.INVALID_ADDRESS


@pytest.mark.parametrize("function, step", [("NdkCreateListener", "NdkCreateListener (server)"),
                                            ("NdkListen", "NdkListen (server)"),
                                            ("NdkCreateConnector", "NdkCreateConnector (client)")])
@pytest.mark.parametrize("mode", ["inline", "async"])
def test_a_failed_step_is_named(function, step, mode):
    with ndk.open_adapter("soft") as ad:
        ad.knobs.fail(function, Status.INSUFFICIENT_RESOURCES, mode=mode)
        with pytest.raises(ndk.NdkError, match=re.escape(f"connect_pair: {step} failed")) as error:
            ndk.testing.connect_pair(ad, ad)
        assert error.value.status == Status.INSUFFICIENT_RESOURCES


def test_no_connect_event_times_out_naming_the_step():
    with ndk.open_adapter("soft") as ad:
        ad.knobs.progress = "manual"

        class NeverStepped(WithoutAddresses):
            addresses = ad.addresses

            def _get_knob(self, key):  # hide manual progress from connect_pair's pump
                return (Status.NOT_SUPPORTED, "") if key == "progress" else ad._get_knob(key)

        never = NeverStepped(ad)
        with pytest.raises(TimeoutError, match="the connect event .* within 0.1 s"):
            ndk.testing.connect_pair(never, never, timeout=0.1)
