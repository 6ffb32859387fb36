"""Helpers of the completion, error and progress scenarios (test_completions.py,
test_errors.py, test_progress.py).  Only the public ``ndk`` API.

Every scenario here moves real data between two connected QPs:

* ``sides(pair)``: the plugin's ``pair`` fixture (two adapters on their own addresses,
  connected with ``ndk.testing.connect_pair``, one CQ per side for both queues; the passive
  side where ``--ndk-peer`` puts it) as two Sides; ``@pytest.mark.pair(...)`` sets it up;
* ``pair(open_adapter, ...)``: the same made in the test's body, for scenarios whose knobs
  depend on their parameters, and for loopback (one adapter holds both ends);
* ``link(client, server, ...)``: the same connection spelled out step by step, for scenarios
  that choose the Ex disconnect callbacks (NDKPI 2.1), the QPContext, or separate receive and
  initiator CQs (digest 1.8 connection flow, 3.5).

Each side carries a registered 64 KiB buffer (``side.mr`` over ``side.buffer``) that allows
every access, so a scenario can send, receive, read and write and then check the bytes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Optional, TypeVar

import ndk
from ndk import Status
from ndk.testing import OpenAdapter, Pair, connect_pair

from . import (ALL_ACCESS, BUFFER_SIZE, CLIENT, LOOPBACK, MAXULONG, QUIET, SERVER,
               TIMEOUT, Side, drain, pattern, quiet_period, register)

_T = TypeVar("_T")

__all__ = [
    "ALL_ACCESS", "BUFFER_SIZE", "CLIENT", "LOOPBACK", "MAXULONG", "QUIET", "SERVER",
    "TIMEOUT", "Side", "drain", "link", "loopback_pair", "no_notification", "pair", "pattern",
    "post_receive", "post_send", "quiet_period", "register", "settle", "sides", "wait_disconnect",
    "wait_until",
]


def _adapters(open_adapter: OpenAdapter, loopback: bool, client_knobs: Optional[dict[str, Any]],
              server_knobs: Optional[dict[str, Any]]) -> tuple[ndk.Adapter, ndk.Adapter]:
    if loopback:
        knobs = dict(client_knobs or {}, **(server_knobs or {}))
        adapter = open_adapter(address=LOOPBACK, **knobs)
        return adapter, adapter
    client = open_adapter(address=CLIENT, **(client_knobs or {}))
    server = open_adapter(address=SERVER, **(server_knobs or {}))
    return client, server


def sides(endpoints: Pair) -> tuple[Side, Side]:
    """The ``pair`` fixture's endpoints (a, b) as two Sides, each with a registered buffer."""
    made = []
    for end in endpoints:
        mr, buffer = register(end.pd)
        made.append(Side(end.adapter, end.pd, end.cq, end.cq, end.qp, mr, buffer,
                         _connector=end.connector, _listener=end.listener))
    return made[0], made[1]


def pair(open_adapter: OpenAdapter, *, loopback: bool = False,
         client_knobs: Optional[dict[str, Any]] = None,
         server_knobs: Optional[dict[str, Any]] = None, **sizes: Any) -> tuple[Side, Side]:
    """(a, b): a QP on a client adapter connected to one on a server adapter by
    ``ndk.testing.connect_pair`` (``sizes``: its keyword arguments), each side with a
    registered buffer.  loopback: one adapter holds both ends (docs/semantics.md
    CONN-LOOPBACK); its knobs are the union of both dicts."""
    client, server = _adapters(open_adapter, loopback, client_knobs, server_knobs)
    return sides(connect_pair(client, server, timeout=TIMEOUT, **sizes))


def loopback_pair(open_adapter: OpenAdapter, **knobs: Any) -> tuple[Side, Side]:
    """A connected pair on one adapter with ``knobs`` (both ends share its engine, so one
    adapter.step() drives the whole connection under progress="manual")."""
    a, b = pair(open_adapter, loopback=True, client_knobs=knobs)
    settle(a.adapter)
    return a, b


def _side(adapter: ndk.Adapter, *, qp_context: int, cq_depth: int, separate_cqs: bool,
          receive_queue_depth: int, initiator_queue_depth: int, max_sge: int) -> Side:
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    receive_cq = adapter.create_cq(cq_depth).get(timeout=TIMEOUT)
    initiator_cq = adapter.create_cq(cq_depth).get(timeout=TIMEOUT) if separate_cqs \
        else receive_cq
    qp = pd.create_qp(receive_cq, initiator_cq, qp_context=qp_context,
                      receive_queue_depth=receive_queue_depth,
                      initiator_queue_depth=initiator_queue_depth,
                      max_receive_request_sge=max_sge,
                      max_initiator_request_sge=max_sge).get(timeout=TIMEOUT)
    mr, buffer = register(pd)
    return Side(adapter, pd, receive_cq, initiator_cq, qp, mr, buffer)


def link(client: ndk.Adapter, server: ndk.Adapter, *, ex: bool = False,
         qp_contexts: tuple[int, int] = (0xA1, 0xB2), cq_depths: tuple[int, int] = (64, 64),
         separate_cqs: bool = False, receive_queue_depth: int = 64,
         initiator_queue_depth: int = 64, max_sge: int = 4) -> tuple[Side, Side]:
    """(a, b) connected step by step (digest 1.8 connection flow): the server listens on its
    first address, port 0; the client connects; the server accepts (NdkAcceptEx with ex=True);
    the client completes (NdkCompleteConnectEx with ex=True).  Every step must succeed."""
    sizes: dict[str, Any] = dict(separate_cqs=separate_cqs,
                                 receive_queue_depth=receive_queue_depth,
                                 initiator_queue_depth=initiator_queue_depth, max_sge=max_sge)
    a = _side(client, qp_context=qp_contexts[0], cq_depth=cq_depths[0], **sizes)
    b = _side(server, qp_context=qp_contexts[1], cq_depth=cq_depths[1], **sizes)
    listener = server.create_listener().get(timeout=TIMEOUT)
    assert server.addresses, "the server reports no address"
    assert listener.listen((server.addresses[0], 0)).wait(timeout=TIMEOUT) == Status.SUCCESS
    a.connector = client.create_connector().get(timeout=TIMEOUT)
    connect = a.connector.connect(a.qp, listener.get_local_address())
    assert connect.status in (Status.SUCCESS, Status.PENDING)
    incoming = listener.next_connection(timeout=TIMEOUT)
    assert incoming is not None, "no connect event at the listener"
    b.connector = incoming
    b.listener = listener
    accept = (b.connector.accept_ex if ex else b.connector.accept)(b.qp)
    assert connect.wait(timeout=TIMEOUT) == Status.SUCCESS
    complete = a.connector.complete_connect_ex() if ex else a.connector.complete_connect()
    assert complete.wait(timeout=TIMEOUT) == Status.SUCCESS
    assert accept.wait(timeout=TIMEOUT) == Status.SUCCESS
    return a, b


def post_receive(side: Side, offset: int, length: int, context: int) -> None:
    """One single-SGE receive of [offset, offset + length) of the side's buffer; must be
    accepted inline."""
    assert side.qp.receive([side.mr.sge(offset, length)], request_context=context) \
        == Status.SUCCESS


def post_send(side: Side, data: bytes, context: int, offset: int = 0, flags: int = 0,
              expect: Status = Status.SUCCESS) -> None:
    """Put ``data`` at ``offset`` of the side's buffer and send it (one SGE; none when empty);
    the inline status must be ``expect``."""
    side.buffer[offset:offset + len(data)] = data
    sgl = [side.mr.sge(offset, len(data))] if data else []
    assert side.qp.send(sgl, flags=flags, request_context=context) == expect


def no_notification(*cqs: ndk.Cq) -> None:
    """None of ``cqs`` gets a notification within QUIET (something that must not happen)."""
    for cq in cqs:
        assert cq.wait_notification(timeout=quiet_period(cq)) is None


def wait_disconnect(connector: ndk.Connector, timeout: float = TIMEOUT) -> Optional[int]:
    """The next disconnect event's reason (None if none came within ``timeout``)."""
    return connector.wait_disconnect(timeout=timeout)


def settle(adapter: ndk.Adapter, limit: int = 100) -> None:
    """Under progress="manual": step the adapter until nothing is queued (callbacks of the
    set-up), so that a scenario starts from an idle engine.  A no-op under auto progress."""
    if adapter.knobs.progress != "manual":
        return
    for _ in range(limit):
        if adapter.pending_steps == 0:
            return
        adapter.step(1000)
    raise AssertionError(f"the engine did not settle: {adapter.pending_steps} steps queued")


def wait_until(predicate: Callable[[], _T], timeout: float = TIMEOUT,
               what: str = "condition") -> _T:
    """Poll ``predicate`` until it returns something true (returned) or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} not reached within {timeout} s")
        time.sleep(0.001)
