"""connect_pair: two connected QPs; and ``join``, the one establishment that connect_pair and
the scenarios' resource builder (``ndk.scenario.resources``) share, its waits (``Steps``)
stepping adapters under progress="manual" and naming the step that failed.

Kept free of pytest and of the compiled extension at import (``ndk`` is imported inside the
function), so ``ndk.testing`` can re-export it and stay importable without the extension.
"""

from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from ._core import Adapter, Connector, Cq, Listener, Pd, Qp
    from ._core import _Buffer


@dataclass
class Endpoint:
    """One side of a connection made by connect_pair: one CQ, used as both the receive and the
    initiator CQ of the QP.  ``listener`` is set on the server side."""

    adapter: Adapter
    pd: Pd
    cq: Cq
    qp: Qp
    connector: Connector
    listener: Optional[Listener] = None


class _Progress:
    """Drives adapters whose provider runs with knob progress="manual" (docs/knobs.md):
    nothing happens there unless someone steps the engine, so the waits below do."""

    def __init__(self, adapters):
        self.manual = []
        for adapter in {id(a): a for a in adapters}.values():
            if adapter.has_knobs and adapter._get_knob("progress")[1] == "manual":
                self.manual.append(adapter)

    def pump(self):
        for adapter in self.manual:
            adapter.step(1024)


class Steps:
    """The waits of one connect_pair (or of ``who``: ndk.scenario's resource builder), against
    one deadline; failures name the step."""

    def __init__(self, adapters, timeout, who="connect_pair"):
        self.who = who
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.progress = _Progress(adapters)

    def fail(self, status, step, detail=""):
        import ndk

        status = ndk.Status(status)
        raise ndk.NdkError(status, f"{self.who}: {step} failed with {status}{detail}")

    def until(self, ready, step):
        """Wait until ready() returns something true (and return it), pumping manual progress;
        TimeoutError naming the step at the deadline."""
        while True:
            self.progress.pump()
            value = ready()
            if value:
                return value
            if time.monotonic() >= self.deadline:
                raise TimeoutError(f"{self.who}: {step} did not complete within "
                                   f"{self.timeout} s")
            time.sleep(0.0005)

    def issued(self, call, step):
        """The call returned SUCCESS or PENDING; anything else fails the step."""
        import ndk

        if call.status not in (ndk.Status.SUCCESS, ndk.Status.PENDING):
            self.fail(call.status, step)
        return call

    def finished(self, call, step):
        """Wait for the call to finish with SUCCESS; returns its object (creates)."""
        import ndk

        self.issued(call, step)
        self.until(lambda: call.done, step)
        status = call.wait(0)
        if status != ndk.Status.SUCCESS:
            self.fail(status, step)
        return call.object


def _listen_host(server):
    """The server's first IPv4 address, else its first IPv6 one; the IPv4 wildcard when the
    provider does not report addresses (the listen then says which address it took)."""
    import ndk

    hosts = server.addresses
    if hosts is None:
        return "0.0.0.0"
    for version in (4, 6):
        for host in hosts:
            try:
                if ipaddress.ip_address(host).version == version:
                    return host
            except ValueError:
                continue
    raise ndk.NdkError(ndk.Status.INVALID_ADDRESS,
                       f"connect_pair: the server adapter has no IPv4 or IPv6 address to listen "
                       f"on (its address knob reads {','.join(hosts)!r})")


def _queue_pair(steps, adapter, side, cq_depth, **qp_sizes):
    pd = steps.finished(adapter.create_pd(), f"NdkCreatePd ({side})")
    cq = steps.finished(adapter.create_cq(cq_depth=cq_depth), f"NdkCreateCq ({side})")
    qp = steps.finished(pd.create_qp(cq, cq, **qp_sizes), f"NdkCreateQp ({side})")
    return pd, cq, qp


def connect_pair(client: Adapter, server: Adapter, *, cq_depth: int = 64,
                 receive_queue_depth: int = 64, initiator_queue_depth: int = 64,
                 max_receive_request_sge: int = 4, max_initiator_request_sge: int = 4,
                 inline_data_size: int = 0, private_data: Optional[_Buffer] = None,
                 timeout: float = 2.0) -> tuple[Endpoint, Endpoint]:
    """Connect a QP on ``client`` to one on ``server`` (the same adapter is fine: loopback).

    The server listens on its first IPv4 address (IPv6 if it has none), port 0; the client
    connects (with ``private_data``), the server takes the connect event and accepts, the
    client completes the connection (NdkCompleteConnect).  Returns (client side, server side)
    as two Endpoints.  Adapters with knob progress="manual" are stepped while waiting.

    Raises ndk.NdkError (.status, and the step in the message) when a step fails, TimeoutError
    when one does not finish within ``timeout`` seconds in all.
    """
    qp_sizes = dict(receive_queue_depth=receive_queue_depth,
                    initiator_queue_depth=initiator_queue_depth,
                    max_receive_request_sge=max_receive_request_sge,
                    max_initiator_request_sge=max_initiator_request_sge,
                    inline_data_size=inline_data_size)
    steps = Steps([client, server], timeout)
    a_pd, a_cq, a_qp = _queue_pair(steps, client, "client", cq_depth, **qp_sizes)
    b_pd, b_cq, b_qp = _queue_pair(steps, server, "server", cq_depth, **qp_sizes)
    connector, b_connector, listener = join(steps, client, a_qp, server, b_qp,
                                            private_data=private_data)
    return (Endpoint(client, a_pd, a_cq, a_qp, connector),
            Endpoint(server, b_pd, b_cq, b_qp, b_connector, listener))


def join(steps: Steps, client: Adapter, client_qp: Qp, server: Adapter, server_qp: Qp, *,
         listener: Optional[Listener] = None, private_data: Optional[_Buffer] = None,
         ex: bool = False) -> tuple[Connector, Connector, Listener]:
    """Connect ``client_qp`` (on ``client``) to ``server_qp`` (on ``server``), each step
    waited for through ``steps``: a listener on the server's first address, port 0 (or
    ``listener``, listening already), NdkConnect with ``private_data``, the connect event,
    NdkAccept (NdkAcceptEx with ex=True), NdkCompleteConnect (-Ex).  Returns (the client's
    connector, the server's connector from the connect event, the listener)."""
    import ndk

    if listener is None:
        host = _listen_host(server)
        listener = steps.finished(server.create_listener(), "NdkCreateListener (server)")
        steps.finished(listener.listen((host, 0)), "NdkListen (server)")
    listening: Listener = listener
    address = listening.get_local_address()
    connector = steps.finished(client.create_connector(), "NdkCreateConnector (client)")
    connect = steps.issued(connector.connect(client_qp, address, private_data=private_data),
                           "NdkConnect (client)")

    def incoming():
        if connect.done and connect.wait(0) != ndk.Status.SUCCESS:
            steps.fail(connect.wait(0), "NdkConnect (client)", " before the server saw it")
        return listening.next_connection(timeout=0.0 if steps.progress.manual else 0.002)

    b_connector = steps.until(incoming, "the connect event at the server's listener")
    accept = steps.issued((b_connector.accept_ex if ex else b_connector.accept)(server_qp),
                          "NdkAcceptEx (server)" if ex else "NdkAccept (server)")
    steps.finished(connect, "NdkConnect (client)")
    steps.finished(connector.complete_connect_ex() if ex else connector.complete_connect(),
                   "NdkCompleteConnectEx (client)" if ex else "NdkCompleteConnect (client)")
    steps.finished(accept, "NdkAcceptEx (server)" if ex else "NdkAccept (server)")
    return connector, b_connector, listening
