#!/usr/bin/python3
"""tests/vm/perf-rows.py DEVICE... - the verbs provider against perftest on the same device.

For each RDMA device (rxe0, siw0 in the VM lane's guest): ``ndk perf --provider verbs:DEV``
(send_lat, write_lat, write_bw: two adapters of the device in one process, through the raw NDK
ABI) and perftest's ``ib_send_lat``, ``ib_write_lat``, ``ib_write_bw`` (Debian's perftest,
server and client in this machine over the same device, rdma_cm: ``-R``, which iWARP needs),
the same size and iterations, one after the other.  Prints one lane row per test and device:
both figures and their ratio (NDK over perftest), the cost of the NDK mapping over raw verbs.
Latency compares t_typical (the median half round trip, both tools); bandwidth compares the
message rate (Mpps, both tools), which needs no agreement on what a megabyte is.

Run by tests/vm/run-verbs.sh in the guest; exits 1 if a run fails or prints no figure (an
error of the environment is an error, never a row left out).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time

# test -> (perftest binary, size in bytes, iterations, the figure compared, its own options).
# ib_send_lat waits on the completion channel (-e): its server and client in one 2-vCPU guest
# otherwise spin on both vCPUs and starve the software device's kernel work (seen in the lane,
# TCG: rxe0 58,063 us a half round trip, ndk perf 55 us).  ib_write_lat polls memory and has no
# such mode: its row measures that starvation, which the printed row says.
TESTS = {
    "send_lat": ("ib_send_lat", 64, 1000, "t_typical[usec]", ["-e"]),
    "write_lat": ("ib_write_lat", 64, 200, "t_typical[usec]", []),
    "write_bw": ("ib_write_bw", 65536, 2000, "MsgRate[Mpps]", []),
}
TX_DEPTH = 128  # perftest's default tx depth; ndk perf's --inflight
PORT = 18515  # perftest's default port
DEVICE_ADDRESS = {"rxe": "NDK_VM_RXE_IP", "siw": "NDK_VM_SIW_IP"}  # tests/vm/ndk-vm.sh


def device_address(device: str) -> str:
    """The IPv4 address the guest gave the device's netdev (tests/vm/ndk-vm.sh)."""
    variable = DEVICE_ADDRESS.get(re.sub(r"\d+$", "", device))
    address = os.environ.get(variable or "", "")
    if not address:
        raise SystemExit(f"perf-rows: no address for {device} (${variable} is not set)")
    return address


def ndk_figure(test: str, device: str) -> float:
    """``ndk perf TEST --provider verbs:DEVICE``'s figure (JSON), as perftest's column."""
    _, size, iters, _, _ = TESTS[test]
    command = [sys.executable, "-m", "ndk", "perf", test, "--provider", f"verbs:{device}",
               "--size", str(size), "--iters", str(iters), "--json"]
    if test.endswith("_bw"):
        command += ["--inflight", str(TX_DEPTH)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(command[2:])} failed ({run.returncode}): "
                           f"{(run.stderr or run.stdout).strip()}")
    result = json.loads(run.stdout)
    return result["latency"]["median_us"] if test.endswith("_lat") else result["msg_rate_mpps"]


def listening(device: str, port: int) -> bool:
    """Whether an rdma_cm id listens on ``port`` (perftest's server is ready for its client)."""
    shown = subprocess.run(["rdma", "resource", "show", "cm_id"], capture_output=True,
                           text=True).stdout
    return any("LISTEN" in line and f":{port} " in line + " " for line in shown.splitlines())


def perftest_row(output: str, column: str) -> float:
    """The figure under ``column`` in perftest's result table (header line, then one row)."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if "#bytes" in line and column in line:
            names = re.split(r"\s{2,}", line.strip())
            values = lines[i + 1].split()
            return float(values[names.index(column)])
    raise RuntimeError(f"no '{column}' in perftest's output:\n{output}")


def perftest_figure(test: str, device: str, address: str) -> float:
    """perftest's figure: its server in the background, its client against it."""
    binary, size, iters, column, options = TESTS[test]
    common = [binary, "-d", device, "-R", "-F", "-s", str(size), "-n", str(iters),
              "-p", str(PORT), *options]
    server = subprocess.Popen(common, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        deadline = time.monotonic() + 60
        while not listening(device, PORT):
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{binary}'s server did not listen on {device}:{PORT}: "
                                   f"{server.communicate()[0]}")
            time.sleep(0.2)
        client = subprocess.run(common + [address], capture_output=True, text=True,
                                timeout=600)
        if client.returncode != 0:
            raise RuntimeError(f"{binary} client failed ({client.returncode}): "
                               f"{client.stdout}{client.stderr}")
        server.wait(timeout=60)
        return perftest_row(client.stdout, column)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def main(devices: list[str]) -> int:
    failed = 0
    for device in devices:
        address = device_address(device)
        for test, (binary, size, iters, column, options) in TESTS.items():
            try:
                ours = ndk_figure(test, device)
                theirs = perftest_figure(test, device, address)
            except (RuntimeError, subprocess.TimeoutExpired) as failure:
                print(f"perf verbs:{device} {test}: FAILED: {failure}")
                failed += 1
                continue
            unit = "us" if test.endswith("_lat") else "Mpps"
            how = " ".join(options) or ("busy-polling both ends" if test == "write_lat" else "")
            # perftest prints its figures to six decimals: a stalled run in the TCG guest can
            # print 0 (seen: ib_write_bw on siw0, MsgRate 0.000000), or inf (ib_write_lat on
            # siw0, t_typical), neither of which has a ratio.
            ratio = (f"{ours / theirs:.3g}" if math.isfinite(theirs) and theirs > 0
                     else f"none ({binary} printed {theirs:g})")
            print(f"perf verbs:{device} {test} {size} B x {iters}: {column} ndk {ours:.4g} {unit}, "
                  f"{binary}{f' ({how})' if how else ''} {theirs:.4g} {unit}, "
                  f"ndk/perftest {ratio}")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    sys.exit(main(sys.argv[1:]))
