"""The resource builder of the scenarios: every connected pair a scenario uses, and the ``pair``
fixture's, is built here, in the manner of rdma-core's ``tests/base.py`` (BaseResources ->
TrafficResources -> RCResources): each class adds one layer of resources and creates it in
its own ``create_*`` method, which a scenario's subclass may override.

* ``Resources``: an adapter and a protection domain;
* ``Side(Resources)``: one end of a connection: its CQ (or a receive and an initiator CQ), a
  QP on them (or on an SRQ), a registered buffer (``mr`` over ``buffer``, every access
  allowed), and once connected its ``connector`` (the passive side also its ``listener``);
* ``connect_sides(a, b)``: connects two Sides, ``a`` active, ``b`` passive (digest 1.8,
  connection flow): a listener on ``b``'s first address, port 0 (or the one given),
  NdkConnect, the connect event, NdkAccept (-Ex), NdkCompleteConnect (-Ex);
* ``connected_pair(client, server)``: two new Sides on two adapters (the same one for
  loopback), connected: the set-up of every data-path scenario;
* ``listening(adapter, address)``: a listener listening on ``address``.

Every step must succeed; a failure names the step (``ndk.NdkError``, ``TimeoutError``).
Adapters with knob progress="manual" are stepped while a step is waited for.  A Side's
objects live where its adapter does: in the test's process, or in the ``pair`` fixture's peer
(``--ndk-peer``), whose objects are proxies.

The scenarios whose subject is establishment itself (test_connection.py,
test_pair_connection.py) spell it out step by step (``ndk.scenario.connection``), on Sides
made here.
"""

from __future__ import annotations

from typing import Any, Optional

import ndk
from ndk import Status
from ndk._connect import Steps, join

from . import BUFFER_SIZE, TIMEOUT, register

__all__ = ["Resources", "Side", "connect_sides", "connected_pair", "listening"]

_WHO = "ndk.scenario.resources"


class Resources:
    """An adapter and a protection domain on it (``pd``: a new one unless given)."""

    def __init__(self, adapter: ndk.Adapter, *, pd: Optional[ndk.Pd] = None,
                 timeout: float = TIMEOUT) -> None:
        self.adapter = adapter
        self._steps = Steps([adapter], timeout, _WHO)
        self.pd = pd if pd is not None else self.create_pd()

    def _made(self, call: ndk.Call[Any], step: str) -> Any:
        """The object of the create ``call``, which must succeed (pending or inline)."""
        return self._steps.finished(call, step)

    def create_pd(self) -> ndk.Pd:
        pd: ndk.Pd = self._made(self.adapter.create_pd(), "NdkCreatePd")
        return pd


class Side(Resources):
    """One end of a connection: ``Resources`` and a CQ, a QP and a registered buffer.

    ``cq``: a CQ to use (else one of ``cq_depth`` is made, two with ``separate_cqs``: a
    receive and an initiator CQ); ``srq``: the QP takes its receives from it
    (NdkCreateQpWithSrq); the QP's sizes are NdkCreateQp's; ``buffer_size``: the registered
    buffer's size (0: none).  ``connector`` and ``listener`` are set when connected."""

    def __init__(self, adapter: ndk.Adapter, *, pd: Optional[ndk.Pd] = None,
                 cq: Optional[ndk.Cq] = None, cq_depth: int = 64, separate_cqs: bool = False,
                 srq: Optional[ndk.Srq] = None, qp_context: int = 0,
                 receive_queue_depth: int = 64, initiator_queue_depth: int = 64,
                 max_receive_request_sge: int = 4, max_initiator_request_sge: int = 4,
                 inline_data_size: int = 0, buffer_size: int = BUFFER_SIZE,
                 timeout: float = TIMEOUT) -> None:
        super().__init__(adapter, pd=pd, timeout=timeout)
        if cq is not None:
            self.receive_cq = self.initiator_cq = cq
        else:
            self.receive_cq = self.create_cq(cq_depth)
            self.initiator_cq = self.create_cq(cq_depth) if separate_cqs else self.receive_cq
        self.qp = self.create_qp(srq=srq, qp_context=qp_context,
                                 receive_queue_depth=receive_queue_depth,
                                 initiator_queue_depth=initiator_queue_depth,
                                 max_receive_request_sge=max_receive_request_sge,
                                 max_initiator_request_sge=max_initiator_request_sge,
                                 inline_data_size=inline_data_size)
        self._mr: Optional[ndk.Mr] = None
        self._buffer: Optional[bytearray] = None
        if buffer_size:
            self._mr, self._buffer = self.create_mr(buffer_size)
        self._connector: Optional[ndk.Connector] = None
        self._listener: Optional[ndk.Listener] = None

    def create_cq(self, depth: int) -> ndk.Cq:
        cq: ndk.Cq = self._made(self.adapter.create_cq(depth), "NdkCreateCq")
        return cq

    def create_qp(self, *, srq: Optional[ndk.Srq], qp_context: int, receive_queue_depth: int,
                  initiator_queue_depth: int, max_receive_request_sge: int,
                  max_initiator_request_sge: int, inline_data_size: int) -> ndk.Qp:
        if srq is not None:
            call = self.pd.create_qp_with_srq(
                self.receive_cq, self.initiator_cq, srq, qp_context=qp_context,
                initiator_queue_depth=initiator_queue_depth,
                max_initiator_request_sge=max_initiator_request_sge,
                inline_data_size=inline_data_size)
            qp: ndk.Qp = self._made(call, "NdkCreateQpWithSrq")
            return qp
        qp = self._made(self.pd.create_qp(
            self.receive_cq, self.initiator_cq, qp_context=qp_context,
            receive_queue_depth=receive_queue_depth, initiator_queue_depth=initiator_queue_depth,
            max_receive_request_sge=max_receive_request_sge,
            max_initiator_request_sge=max_initiator_request_sge,
            inline_data_size=inline_data_size), "NdkCreateQp")
        return qp

    def create_mr(self, size: int) -> tuple[ndk.Mr, bytearray]:
        """A normal MR over a new zeroed buffer of ``size`` bytes (in the process where the
        adapter lives), every access allowed (``ndk.scenario.register``: two calls to a remote
        peer, where a waited step takes several)."""
        return register(self.pd, size)

    def __repr__(self) -> str:
        return f"Side({self.adapter!r}, qp={self.qp!r})"

    @property
    def cq(self) -> ndk.Cq:
        """The CQ of both queues (a Side made with ``separate_cqs`` has none)."""
        assert self.receive_cq is self.initiator_cq, "this side has two CQs"
        return self.receive_cq

    @property
    def mr(self) -> ndk.Mr:
        assert self._mr is not None, "this side has no registered buffer (buffer_size=0)"
        return self._mr

    @property
    def buffer(self) -> bytearray:
        assert self._buffer is not None, "this side has no registered buffer (buffer_size=0)"
        return self._buffer

    @property
    def connector(self) -> ndk.Connector:
        assert self._connector is not None, "this side has no connector yet"
        return self._connector

    @connector.setter
    def connector(self, connector: ndk.Connector) -> None:
        self._connector = connector

    @property
    def listener(self) -> ndk.Listener:
        assert self._listener is not None, "this side has no listener"
        return self._listener

    @listener.setter
    def listener(self, listener: ndk.Listener) -> None:
        self._listener = listener


def connect_sides(a: Side, b: Side, *, ex: bool = False,
                  listener: Optional[ndk.Listener] = None,
                  private_data: Optional[bytes] = None,
                  timeout: float = TIMEOUT) -> tuple[Side, Side]:
    """Connect ``a``'s QP (active) to ``b``'s (passive) and return (a, b), their ``connector``
    set and ``b.listener`` the listener: ``listener`` (listening already on b's adapter) or a
    new one on b's first address, port 0.  ex=True: NdkAcceptEx and NdkCompleteConnectEx (the
    disconnect callbacks with a reason, NDKPI 2.1)."""
    steps = Steps([a.adapter, b.adapter], timeout, _WHO)
    a.connector, b.connector, b.listener = join(steps, a.adapter, a.qp, b.adapter, b.qp,
                                                listener=listener, private_data=private_data,
                                                ex=ex)
    return a, b


def connected_pair(client: ndk.Adapter, server: ndk.Adapter, *, ex: bool = False,
                   listener: Optional[ndk.Listener] = None,
                   private_data: Optional[bytes] = None, timeout: float = TIMEOUT,
                   **side_options: Any) -> tuple[Side, Side]:
    """(a, b): a new Side on ``client`` connected (``connect_sides``) to a new Side on
    ``server`` (the same adapter: loopback, docs/semantics.md CONN-LOOPBACK), both made with
    ``side_options`` (``Side``'s keyword arguments)."""
    a = Side(client, timeout=timeout, **side_options)
    b = Side(server, timeout=timeout, **side_options)
    return connect_sides(a, b, ex=ex, listener=listener, private_data=private_data,
                         timeout=timeout)


def listening(adapter: ndk.Adapter, address: tuple[str, int]) -> ndk.Listener:
    """A listener of ``adapter`` listening on ``address`` (host, port); the listen must
    succeed."""
    listener = adapter.create_listener().get(timeout=TIMEOUT)
    assert listener.listen(address).wait(timeout=TIMEOUT) == Status.SUCCESS
    return listener
