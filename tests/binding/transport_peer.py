"""The parent's handle on transport_peer_child.py: the peer process of the transport tests
(test_shm_transport.py, test_tcp_transport.py), driven by lines on its stdin, its JSON lines
read back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Iterator

import ndk
from ndk import Status

from transport_peer_child import ALL

TIMEOUT = 10.0
CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "transport_peer_child.py")


def pattern(n: int, seed: int = 1) -> bytes:
    return bytes((i * 7 + seed) & 0xFF for i in range(n))


class Child:
    """A soft adapter opened with ``knobs`` on ``address`` in a process of its own, listening
    (its first line says the port), then accepting one connection."""

    def __init__(self, knobs: dict[str, Any], address: str):
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(ndk.__file__)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [package_root, os.environ.get("PYTHONPATH", "")]))
        self.process = subprocess.Popen([sys.executable, CHILD, json.dumps(knobs), address],
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
                     server: str) -> Iterator[tuple[dict, Child, dict]]:
    """(side, child, peer): this process's adapter (``knobs`` on ``client``) connected to the
    child's (``child_knobs`` on ``server``) with private data; ``side`` holds the adapter,
    QP, CQ, a registered 1 MiB buffer and the connector, ``peer`` what the child said of its
    memory and connection.  For a fixture: closes both at the end."""
    child = Child(child_knobs, server)
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
        yield dict(ad=ad, qp=qp, cq=cq, mr=mr, buffer=buffer, connector=connector), child, peer
    finally:
        ad.close()
        child.finish()
