"""A crash and a hang are failed scenarios, and the run goes on (issue 14): ``ndk conformance
-n 2 --timeout 2`` in a subprocess, on a scenarios folder with one scenario that segfaults its
process, one that hangs and one that passes, against the real extension (the last NDK calls
come from the call recording the plugin puts on the binding's classes).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("xdist")
pytest.importorskip("pytest_timeout")

SCENARIOS = '''
    import ctypes
    import time

    import pytest

    import ndk


    @pytest.mark.rule("FATE-PASS")
    def test_passes(adapter: ndk.Adapter) -> None:
        assert adapter.create_pd().wait(timeout=5) == ndk.Status.SUCCESS


    @pytest.mark.rule("FATE-CRASH")
    def test_segfaults(adapter: ndk.Adapter) -> None:
        adapter.create_cq(cq_depth=8).wait(timeout=5)
        ctypes.string_at(0)


    @pytest.mark.rule("FATE-HANG")
    def test_hangs(adapter: ndk.Adapter) -> None:
        adapter.create_pd().wait(timeout=5)
        time.sleep(3600)
'''


def test_a_segfault_and_a_hang_fail_their_scenarios_and_the_run_goes_on(tmp_path: Path) -> None:
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / "test_fates.py").write_text(textwrap.dedent(SCENARIOS), encoding="utf-8")
    junit = tmp_path / "report.xml"
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("NDK_PROVIDER_SETUP", None)
    done = subprocess.run(
        [sys.executable, "-m", "ndk", "conformance", "-n", "2", "--timeout", "2", "--scenarios",
         str(scenarios), "--progress", "plain", "--junit", str(junit)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    lines = out.splitlines()
    report = lines[next(i for i, line in enumerate(lines) if line.startswith("rule ")):]
    assert report[:4] == ["rule        soft", "FATE-CRASH  CRASH", "FATE-HANG   TIMEOUT",
                          "FATE-PASS   pass"]
    assert "  FATE    1/0/0/1/1" in report
    # Under ASan (CTest's build-asan run preloads it) the sanitizer catches the SIGSEGV, reports
    # it and aborts (abort_on_error=1): the worker dies of SIGABRT, and Python's own fault
    # handler never runs.
    sanitized = "libasan" in os.environ.get("LD_PRELOAD", "")
    signal_text = "SIGABRT (signal 6)" if sanitized else "SIGSEGV (signal 11)"
    assert ("  CRASH    scenarios/test_fates.py::test_segfaults[soft]: crashed: killed by "
            f"{signal_text}; last NDK call Call.wait(timeout=5)") in report
    assert ("  TIMEOUT  scenarios/test_fates.py::test_hangs[soft]: timeout: Timeout >2.0s in call; "
            "last NDK call Call.wait(timeout=5)") in report
    assert "  soft: 1 passed, 0 failed, 1 crashed, 1 timed out, 0 skipped, test phases" in out
    assert report[-1].startswith("conformance: 1 passed, 0 failed, 1 crashed, 1 timed out, "
                                 "0 skipped in ")
    # pytest's account of the crash: the signal, the scenario's NDK calls, where it died.
    assert "  Adapter.create_cq(cq_depth=8)\n" in out
    if not sanitized:
        assert "Fatal Python error: Segmentation fault" in out
    assert "line 18 in test_segfaults" in out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "2" and suite.get("tests") == "3"
    summary = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert summary["ndk-crashed soft"] == "count=1 scenarios=scenarios/test_fates.py::test_segfaults[soft]"
    assert summary["ndk-timeout soft"] == "count=1 scenarios=scenarios/test_fates.py::test_hangs[soft]"
