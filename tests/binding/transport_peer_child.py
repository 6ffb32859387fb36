"""The passive side of test_shm_transport.py and test_tcp_transport.py, in its own process: a
soft adapter opened with KNOBS (JSON: transport=shm and its fabric, or transport=tcp)
listening on ADDRESS.  It accepts one connection, registers a buffer, tells the parent (one
JSON line on stdout) where it listens and what its memory is, then follows the parent's
commands (lines on stdin):

  echo N      post a receive of N bytes, wait for it, send back the bytes received, reversed
  hold        post nothing more and wait (a Send of the parent finds no receive)
  disconnect  NdkDisconnect, then wait
  deregister  deregister the buffer's MR, say the status
  peek O N    say N bytes of the buffer at offset O (hex)
  maps        say the inodes of the shared allocations (ndk.alloc) mapped in this process
  exit        close everything and exit 0
"""

from __future__ import annotations

import json
import resource
import sys
import time

import ndk
from ndk import MrFlag, Status

TIMEOUT = 10.0
ALL = (MrFlag.ALLOW_LOCAL_WRITE | MrFlag.ALLOW_REMOTE_READ | MrFlag.ALLOW_REMOTE_WRITE
       | MrFlag.RDMA_READ_SINK)


def say(**what) -> None:
    print(json.dumps(what), flush=True)


def one_result(cq: ndk.Cq) -> ndk.ResultEx:
    """The next completion of ``cq`` within TIMEOUT (the test's side uses it too)."""
    end = time.monotonic() + TIMEOUT
    while time.monotonic() < end:
        got = cq.get_results_ex(1)
        if got:
            return got[0]
        time.sleep(0.0005)
    raise AssertionError("no completion within the timeout")


def shared_allocation_inodes() -> list[int]:
    """The inodes of the ndk.alloc memfds mapped in this process: its own and its peer's
    (ndk/shared_memory.hpp names each memfd ndk-harness-alloc)."""
    with open("/proc/self/maps") as maps:
        return sorted({int(line.split()[4]) for line in maps if "/memfd:ndk-harness-alloc" in line})


def main() -> int:
    knobs, address = json.loads(sys.argv[1]), sys.argv[2]
    # Optional: {"nofile": N} this process's RLIMIT_NOFILE, {"wait": S} how long it waits for
    # the connect request (the listener under descriptor exhaustion, test_tcp_transport.py),
    # {"shared": true} its buffer from ndk.alloc (test_shm_zero_copy.py).
    options = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    if "nofile" in options:
        resource.setrlimit(resource.RLIMIT_NOFILE, (options["nofile"], options["nofile"]))
    with ndk.open_adapter("soft", address=address, **knobs) as ad:
        listener = ad.create_listener().get(timeout=TIMEOUT)
        assert listener.listen((address, 0)).wait(timeout=TIMEOUT) == Status.SUCCESS
        port = listener.get_local_address()[1]
        pd = ad.create_pd().get(timeout=TIMEOUT)
        cq = ad.create_cq(cq_depth=64).get(timeout=TIMEOUT)
        qp = pd.create_qp(cq, cq, receive_queue_depth=16, initiator_queue_depth=16,
                          max_receive_request_sge=4, max_initiator_request_sge=4).get(timeout=TIMEOUT)
        buffer = ndk.alloc(1 << 20) if options.get("shared") else bytearray(1 << 20)
        view = memoryview(buffer)
        mr = pd.create_mr().get(timeout=TIMEOUT)
        assert mr.register(buffer, flags=ALL).wait(timeout=TIMEOUT) == Status.SUCCESS
        say(port=port)
        connector = listener.next_connection(timeout=options.get("wait", TIMEOUT))
        assert connector is not None, "no connect request"
        assert connector.accept(qp).wait(timeout=TIMEOUT) == Status.SUCCESS
        data = connector.get_connection_data()
        say(address=mr.address, token=mr.remote_token, private_data=bytes(data.private_data).hex(),
            local=list(connector.get_local_address()), peer=list(connector.get_peer_address()))
        for line in sys.stdin:
            command = line.split()
            if command[0] == "echo":
                n = int(command[1])
                assert qp.receive([mr.sge(0, n)], request_context=1) == Status.SUCCESS
                r = one_result(cq)
                data = bytes(view[:r.bytes_transferred])[::-1]
                view[:len(data)] = data
                sgl = [mr.sge(0, len(data))] if data else []
                assert qp.send(sgl, request_context=2) == Status.SUCCESS
                s = one_result(cq)
                say(received=r.bytes_transferred, receive=int(r.status), send=int(s.status))
            elif command[0] == "hold":
                say(holding=True)
            elif command[0] == "disconnect":
                assert connector.disconnect().wait(timeout=TIMEOUT) == Status.SUCCESS
                say(disconnected=True)
            elif command[0] == "deregister":
                say(deregistered=int(mr.deregister_mr().wait(timeout=TIMEOUT)))
            elif command[0] == "peek":
                at, n = int(command[1]), int(command[2])
                say(bytes=bytes(view[at:at + n]).hex())
            elif command[0] == "maps":
                say(alloc_inodes=shared_allocation_inodes())
            elif command[0] == "exit":
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
