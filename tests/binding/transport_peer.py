"""The parent's handle on transport_peer_child.py: the peer process of the transport tests
(test_shm_transport.py, test_tcp_transport.py), driven by lines on its stdin, its JSON lines
read back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Iterator, Optional

import ndk
from ndk import OpType, Status

from transport_peer_child import ALL, one_result

TIMEOUT = 10.0
CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "transport_peer_child.py")


def pattern(n: int, seed: int = 1) -> bytes:
    return bytes((i * 7 + seed) & 0xFF for i in range(n))


class Child:
    """A soft adapter opened with ``knobs`` on ``address`` in a process of its own, listening
    (its first line says the port), then accepting one connection; ``options`` as the child's
    main() reads them (its descriptor limit, how long it waits for the connection)."""

    def __init__(self, knobs: dict[str, Any], address: str,
                 options: Optional[dict[str, Any]] = None):
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(ndk.__file__)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [package_root, os.environ.get("PYTHONPATH", "")]))
        self.process = subprocess.Popen([sys.executable, CHILD, json.dumps(knobs), address,
                                         json.dumps(options or {})],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, env=env)

    def read(self) -> dict:
        line = self.process.stdout.readline()
        assert line, f"the peer exited (status {self.process.wait(timeout=TIMEOUT)})"
        return json.loads(line)

    def tell(self, command: str) -> None:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def finish(self) -> int:
        if self.process.poll() is None:
            try:
                self.tell("exit")
            except BrokenPipeError:
                pass
        try:
            return self.process.wait(timeout=TIMEOUT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


def connect_to_child(knobs: dict[str, Any], client: str, child_knobs: dict[str, Any],
                     server: str, child_options: Optional[dict[str, Any]] = None
                     ) -> Iterator[tuple[dict, Child, dict]]:
    """(side, child, peer): this process's adapter (``knobs`` on ``client``) connected to the
    child's (``child_knobs`` on ``server``) with private data; ``side`` holds the adapter, PD,
    QP, CQ, a registered 1 MiB buffer and the connector, ``peer`` what the child said of its
    memory and connection (``child_options``: the child's, Child).  For a fixture: closes both
    at the end."""
    child = Child(child_knobs, server, child_options)
    ad = ndk.open_adapter("soft", address=client, **knobs)
    try:
        port = child.read()["port"]
        pd = ad.create_pd().get(timeout=TIMEOUT)
        cq = ad.create_cq(cq_depth=64).get(timeout=TIMEOUT)
        qp = pd.create_qp(cq, cq, receive_queue_depth=16, initiator_queue_depth=16,
                          max_receive_request_sge=4,
                          max_initiator_request_sge=4).get(timeout=TIMEOUT)
        buffer = bytearray(1 << 20)
        mr = pd.create_mr().get(timeout=TIMEOUT)
        assert mr.register(buffer, flags=ALL).wait(timeout=TIMEOUT) == Status.SUCCESS
        connector = ad.create_connector().get(timeout=TIMEOUT)
        assert connector.connect(qp, (server, port), private_data=b"hello peer").wait(
            timeout=TIMEOUT) == Status.SUCCESS
        assert connector.complete_connect_ex().wait(timeout=TIMEOUT) == Status.SUCCESS  # reasons
        peer = child.read()
        assert bytes.fromhex(peer["private_data"]) == b"hello peer"
        yield dict(ad=ad, pd=pd, qp=qp, cq=cq, mr=mr, buffer=buffer, connector=connector), \
            child, peer
    finally:
        ad.close()
        child.finish()


def send_and_receive_echo(connected: tuple[dict, Child, dict], size: int) -> None:
    """A Send of ``size`` bytes reaches the child's receive and comes back reversed."""
    side, child, _ = connected
    data = pattern(size)
    buffer, mr, qp, cq = side["buffer"], side["mr"], side["qp"], side["cq"]
    assert qp.receive([mr.sge(1 << 19, 1 << 19)], request_context=7) == Status.SUCCESS
    child.tell(f"echo {size}")
    buffer[:size] = data
    assert qp.send([mr.sge(0, size)] if size else [], request_context=8) == Status.SUCCESS
    results = {r.request_context: r for r in (one_result(cq), one_result(cq))}
    assert results[8].status == Status.SUCCESS and results[8].type == OpType.SEND
    assert results[7].status == Status.SUCCESS and results[7].type == OpType.RECEIVE
    assert results[7].bytes_transferred == size
    assert bytes(buffer[1 << 19:(1 << 19) + size]) == data[::-1]
    assert child.read() == {"received": size, "receive": 0, "send": 0}


def write_then_read_back(connected: tuple[dict, Child, dict]) -> None:
    """An RDMA Write of 300 KB in three SGEs into the child's memory, then an RDMA Read of
    it into another range: byte for byte."""
    side, _, peer = connected
    buffer, mr, qp, cq = side["buffer"], side["mr"], side["qp"], side["cq"]
    data = pattern(300_000, 5)
    buffer[:len(data)] = data
    sgl = [mr.sge(0, 100_000), mr.sge(100_000, 100_000), mr.sge(200_000, 100_000)]
    assert qp.write(sgl, peer["address"] + 4096, peer["token"], request_context=1) == \
        Status.SUCCESS
    written = one_result(cq)
    assert (written.status, written.type) == (Status.SUCCESS, OpType.WRITE)
    sink = 1 << 19
    assert qp.read([mr.sge(sink, len(data))], peer["address"] + 4096, peer["token"],
                   request_context=2) == Status.SUCCESS
    read = one_result(cq)
    assert (read.status, read.type) == (Status.SUCCESS, OpType.READ)
    assert bytes(buffer[sink:sink + len(data)]) == data
