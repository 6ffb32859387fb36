"""Adapters opened with a misbehaviour that never completes, and closed, leave nothing behind
(docs/testing.md, "Leaks").

The probe's reproducer: 10,000 rounds of open, a call the fault layer never completes, close:
RSS 18 -> 56 MB with misbehave=never_complete and 18 -> 139 MB with request_never_complete,
the control flat.  The consumer's context table kept each never-completed call, and with it
what the call held: the create's wrapper holds the adapter.  Now the adapter's close lets its
calls go (Adapter::track_context).  Each mode runs in a fresh interpreter of its own, so that
the RSS compared is the rounds' alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import ndk

ROUNDS = 10_000

# One round per mode: the control opens the adapter without a misbehaviour and completes both
# calls; never_complete leaves the create pending forever, request_never_complete the
# registration.
ROUND = r"""
import json, sys
import ndk

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

mode, rounds = sys.argv[1], int(sys.argv[2])
# The fault layer leaves a call uncompleted when it pends: creates pend with create_mode,
# requests with request_mode.
knobs = {"control": {}, "never_complete": {"misbehave": mode, "create_mode": "pending"},
         "request_never_complete": {"misbehave": mode, "request_mode": "pending"}}[mode]
pending = 0
for i in range(rounds):
    with ndk.open_adapter("soft", **knobs) as ad:
        create = ad.create_pd()
        if mode == "never_complete":
            pending += not create.done
            continue
        pd = create.get(timeout=5)
        mr = pd.create_mr().get(timeout=5)
        pending += not mr.register(bytearray(64)).done
print(json.dumps({"end": rss(), "pending": pending}))
"""


def run_rounds(mode: str) -> dict:
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(ndk.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [package_root, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", ROUND, mode, str(ROUNDS)], env=env,
                         capture_output=True, text=True, timeout=600, check=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def control() -> dict:
    return run_rounds("control")


@pytest.mark.parametrize("mode", ["never_complete", "request_never_complete"])
def test_closed_adapters_leave_nothing_behind(control, mode):
    measured = run_rounds(mode)
    assert measured["pending"] == ROUNDS, f"{mode} left every call pending"
    assert measured["end"] <= control["end"] * 1.10, (
        f"{mode}: RSS {measured['end'] / 1e6:.1f} MB after {ROUNDS} rounds, the control's "
        f"{control['end'] / 1e6:.1f} MB")
