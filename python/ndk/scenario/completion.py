"""Helpers of the completion, error and progress scenarios (test_completions.py,
test_errors.py, test_progress.py).  Only the public ``ndk`` API.

Every scenario here moves real data between two connected QPs, each end a ``Side`` of the
resource builder (``ndk.scenario.resources``):

* the plugin's ``pair`` fixture: two adapters on their own addresses, connected by the
  builder, one CQ per side for both queues; the passive side where ``--ndk-peer`` puts it;
  ``@pytest.mark.pair(...)`` sets it up;
* ``pair(open_adapter, ...)``: the same made in the test's body, for scenarios whose knobs
  depend on their parameters, and for loopback (one adapter holds both ends);
* ``connected_pair(client, server, ...)`` and ``connect_sides(Side(client, ...), Side(server,
  ...))`` on adapters the scenario opened, for scenarios that choose the Ex disconnect
  callbacks (NDKPI 2.1), the QPContext, separate receive and initiator CQs, or sizes that
  differ between the sides.

Each side carries a registered 64 KiB buffer (``side.mr`` over ``side.buffer``) that allows
every access, so a scenario can send, receive, read and write and then check the bytes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Optional, TypeVar

import ndk
from ndk import Status
from ndk.testing import OpenAdapter

from . import (ALL_ACCESS, BUFFER_SIZE, CLIENT, LOOPBACK, MAXULONG, QUIET, SERVER,
               TIMEOUT, drain, pattern, quiet_period, register)
from .resources import Side, connect_sides, connected_pair

_T = TypeVar("_T")

__all__ = [
    "ALL_ACCESS", "BUFFER_SIZE", "CLIENT", "LOOPBACK", "MAXULONG", "QUIET", "SERVER",
    "TIMEOUT", "Side", "connect_sides", "connected_pair", "drain", "loopback_pair",
    "no_notification", "pair", "pattern", "post_receive", "post_send", "quiet_period", "register",
    "settle", "wait_disconnect", "wait_until",
]


def pair(open_adapter: OpenAdapter, *, loopback: bool = False,
         client_knobs: Optional[dict[str, Any]] = None,
         server_knobs: Optional[dict[str, Any]] = None, **options: Any) -> tuple[Side, Side]:
    """(a, b): ``connected_pair`` on a client adapter (at CLIENT) and a server adapter (at
    SERVER) opened with these knobs (``options``: the Sides' keyword arguments, ``ex=`` and
    ``private_data=``).  loopback: one adapter at LOOPBACK holds both ends (docs/semantics.md
    CONN-LOOPBACK); its knobs are the union of both dicts."""
    if loopback:
        knobs = dict(client_knobs or {}, **(server_knobs or {}))
        adapter = open_adapter(address=LOOPBACK, **knobs)
        return connected_pair(adapter, adapter, **options)
    client = open_adapter(address=CLIENT, **(client_knobs or {}))
    server = open_adapter(address=SERVER, **(server_knobs or {}))
    return connected_pair(client, server, **options)


def loopback_pair(open_adapter: OpenAdapter, **knobs: Any) -> tuple[Side, Side]:
    """A connected pair on one adapter with ``knobs`` (both ends share its engine, so one
    adapter.step() drives the whole connection under progress="manual")."""
    a, b = pair(open_adapter, loopback=True, client_knobs=knobs)
    settle(a.adapter)
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
