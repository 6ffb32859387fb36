"""``ndk conformance -n N`` and ``--timeout``: the same report as a serial run, crashes and
timeouts told apart from failures (a subprocess against the fake ndk, like
test_conformance_violations.py; the real extension's version is tests/binding/test_isolation.py).
"""

from __future__ import annotations

import signal
import sys
import xml.etree.ElementTree as ET

import pytest

from ndk import _isolation
from ndk._report import (CRASHED, TIMEOUT, Record, format_failures, format_family_counts,
                         format_matrix, format_provider_totals, format_totals)

pytest.importorskip("xdist")
pytest.importorskip("pytest_timeout")

VIOLATIONS = {
    "test_v": """
        import pytest

        @pytest.mark.rule("PD-CREATE")
        def test_misbehaves(open_adapter):
            open_adapter(misbehave="CREATE-COMPLETION-INLINE").create_pd()

        @pytest.mark.rule("PD-CREATE")
        def test_warned(open_adapter):
            open_adapter(misbehave="STATUS-UNDOCUMENTED").create_pd()

        @pytest.mark.rule("PD-CREATE")
        @pytest.mark.expect_violation("CREATE-COMPLETION-INLINE")
        def test_declared(open_adapter):
            open_adapter(misbehave="CREATE-COMPLETION-INLINE").create_pd()

        @pytest.mark.rule("PD-CLEAN")
        def test_clean(adapter):
            adapter.create_pd()

        @pytest.mark.rule("PD-SKIP")
        def test_skips(adapter):
            pytest.skip("not here")
        """,
}

FATES = {
    "test_f": """
        import os, signal, time
        import pytest

        @pytest.mark.rule("FATE-PASS")
        def test_passes(adapter):
            adapter.create_pd()

        @pytest.mark.rule("FATE-CRASH")
        def test_crashes(adapter):
            os.kill(os.getpid(), signal.SIGABRT)

        @pytest.mark.rule("FATE-HANG")
        def test_hangs(adapter):
            time.sleep(3600)

        @pytest.mark.rule("FATE-STUCK")
        def test_stuck(adapter):
            # As native code that never returns: the timeout's SIGALRM cannot stop it.
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])
            time.sleep(3600)
        """,
}


def run_ndk(pytester, *args):
    return pytester.run(sys.executable, "-m", "ndk", *args, timeout=120)


def report_of(result):
    """The runner's report: from the matrix to the totals line, without the times."""
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if line.startswith("rule "))
    return [line.split(" in ")[0] if line.startswith("conformance: ") else line
            for line in lines[start:]]


def test_two_workers_give_the_serial_report(scenarios, pytester, fake_ndk_env):
    directory = scenarios(**VIOLATIONS)
    serial = run_ndk(pytester, "conformance", "--scenarios", str(directory), "--progress", "plain",
                     "--junit", str(pytester.path / "serial.xml"))
    parallel = run_ndk(pytester, "conformance", "--scenarios", str(directory), "--progress",
                       "plain", "-n", "2", "--junit", str(pytester.path / "parallel.xml"))
    assert serial.ret == parallel.ret == 1, parallel.stdout.str()
    assert report_of(parallel) == report_of(serial)
    # The violations came from the workers (as plain data) and are in the matrix's report.
    assert any(line.startswith("  soft      CREATE-COMPLETION-INLINE  provider  1       0         1 ")
               for line in report_of(parallel))
    # The progress display counted the workers' tests, by family.
    parallel.stdout.fnmatch_lines(["ndk conformance: 5 tests in 1 rule families",
                                   "PD  3 passed, 1 failed, 1 skipped  [5/5, *"])

    def properties(path):
        suite = ET.parse(path).getroot().find("testsuite")
        cases = {case.get("name"): [(p.get("name"), p.get("value")) for p in case.iter("property")]
                 for case in suite.iter("testcase")}
        return {p.get("name"): p.get("value") for p in suite.find("properties")}, cases

    assert properties(pytester.path / "parallel.xml") == properties(pytester.path / "serial.xml")


def test_a_crash_and_a_hang_are_reported_and_the_run_goes_on(scenarios, pytester, fake_ndk_env):
    directory = scenarios(**FATES)
    junit = pytester.path / "fates.xml"
    html = pytester.path / "fates.html"
    result = run_ndk(pytester, "conformance", "--scenarios", str(directory), "--progress", "plain",
                     "-n", "2", "--timeout", "2", "--junit", str(junit), "--html", str(html))
    out = result.stdout.str()
    assert result.ret == 1, out
    result.stdout.fnmatch_lines([
        "FATE  1 passed, 3 failed, 0 skipped  [[]4/4, *",  # the progress counted every test
        "FATE-CRASH  CRASH",
        "FATE-HANG   TIMEOUT",
        "FATE-PASS   pass",
        "FATE-STUCK  TIMEOUT",
        "scenarios per family (passed/failed/skipped/crashed/timed out):",
        "  FATE    1/0/0/1/2",
        "failures:",
        "  CRASH    test_f.py::test_crashes[soft]: crashed: killed by SIGABRT (signal 6); "
        "no NDK call recorded",
        "  TIMEOUT  test_f.py::test_hangs[soft]: timeout: Timeout >2.0s in call; no NDK call "
        "recorded",
        "  TIMEOUT  test_f.py::test_stuck[soft]: timeout: still running 5 s after its --timeout "
        "of 2 s (not interruptible), worker ended; no NDK call recorded",
        "per provider:",
        "  soft: 1 passed, 0 failed, 1 crashed, 2 timed out, 0 skipped, test phases *",
    ])
    assert result.outlines[-1].startswith("conformance: 1 passed, 0 failed, 1 crashed, 2 timed "
                                          "out, 0 skipped in ")
    # pytest's own account names the signal too, with the traceback faulthandler wrote.
    assert "worker 'gw" in out and "crashed: killed by SIGABRT (signal 6), running " in out
    assert "Fatal Python error: Aborted" in out and "in test_crashes" in out

    suite = ET.parse(junit).getroot().find("testsuite")
    summary = {p.get("name"): p.get("value") for p in suite.find("properties")
               if not p.get("name").startswith("ndk-level ")}  # test_conformance_levels'
    assert summary == {"ndk-crashed soft": "count=1 scenarios=test_f.py::test_crashes[soft]",
                       "ndk-timeout soft": "count=2 scenarios=test_f.py::test_hangs[soft] "
                                           "test_f.py::test_stuck[soft]"}
    failures = {case.get("name"): case.find("failure").get("message")
                for case in suite.iter("testcase") if case.find("failure") is not None}
    assert failures["test_crashes[soft]"].startswith("crashed: killed by SIGABRT")
    page = html.read_text(encoding="utf-8")
    assert 'class="crash">CRASH</td>' in page and 'class="timeout">TIMEOUT</td>' in page


def test_a_timeout_in_a_serial_run(scenarios, pytester, fake_ndk_env):
    serial = FATES["test_f"].replace('@pytest.mark.rule("FATE-CRASH")', "@pytest.mark.skip")
    directory = scenarios(test_h=serial.replace('@pytest.mark.rule("FATE-STUCK")',
                                                "@pytest.mark.skip"))
    result = run_ndk(pytester, "conformance", "--scenarios", str(directory), "--progress", "off",
                     "--timeout", "1")
    assert result.ret == 1, result.stdout.str()
    assert result.outlines[-1].startswith("conformance: 1 passed, 0 failed, 1 timed out, 2 skipped")


def test_provider_setup_refuses_workers(scenarios, pytester, fake_ndk_env):
    directory = scenarios(**VIOLATIONS)
    result = run_ndk(pytester, "conformance", "--scenarios", str(directory), "-n", "2", "--",
                     "--ndk-provider-setup", "true")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "cannot run with -n / pytest-xdist" in result.stderr.str()


# --- the pieces -------------------------------------------------------------------------------


def test_the_call_ring_keeps_the_last_calls_for_another_process(tmp_path):
    writer = _isolation.CallRing(tmp_path / "gw0.calls")
    writer.begin("test_x.py::test_one[soft]")
    for n in range(_isolation.CallRing.SLOTS + 3):
        writer.add(f"Cq.arm({n})")
    writer.set_timeout(2.5, "signal")
    reader = _isolation.CallRing(tmp_path / "gw0.calls", create=False)
    state = reader.read()
    assert state["nodeid"] == "test_x.py::test_one[soft]"
    assert (state["timeout"], state["method"], state["count"]) == (2.5, "signal", 35)
    assert [text for _, text in state["calls"]] == [f"Cq.arm({n})" for n in range(3, 35)]
    assert _isolation.format_calls(state).splitlines()[0] == "  (and 3 earlier)"
    assert _isolation.last_call(state) == "last NDK call Cq.arm(34)"
    writer.begin("test_x.py::test_two[soft]")
    assert reader.read()["calls"] == []


def test_a_dead_worker_is_described_by_its_signal_or_its_time_limit():
    state = dict(nodeid="t", started=100.0, timeout=2.0, method="thread", count=0, calls=[])
    assert _isolation.describe_death(-signal.SIGSEGV, "", None) == (
        CRASHED, "crashed: killed by SIGSEGV (signal 11)")
    assert _isolation.describe_death(None, "Fatal Python error: Aborted\n\n...", None) == (
        CRASHED, "crashed: SIGABRT (Aborted)")
    fate, what = _isolation.describe_death(1, "Timeout (0:00:07)!\nThread ...", state)
    assert fate == TIMEOUT and "--timeout of 2 s" in what
    assert _isolation.describe_death(1, "", state, now=103.0)[0] == TIMEOUT  # pytest-timeout thread
    assert _isolation.describe_death(1, "", state, now=100.5) == (
        CRASHED, "crashed: worker exited with status 1")


def test_the_fault_dump_keeps_the_scenarios_frames():
    dump = ("Fatal Python error: Segmentation fault\n\n"
            "Thread 0x1 (most recent call first):\n"
            '  File "/usr/lib/python3/dist-packages/execnet/gateway_base.py", line 400 in read\n\n'
            "Current thread 0x2 (most recent call first):\n"
            '  File "/s/test_x.py", line 12 in test_crashes\n'
            '  File "/usr/lib/python3/dist-packages/_pytest/python.py", line 195 in pytest_pyfunc_call\n')
    assert _isolation.trim_fault(dump) == (
        "Fatal Python error: Segmentation fault\n\n"
        "Current thread 0x2 (most recent call first):\n"
        '  File "/s/test_x.py", line 12 in test_crashes')


def test_the_report_counts_crashes_and_timeouts_apart():
    def record(name, outcome, fate=None, provider="soft"):
        return Record(f"t.py::{name}[{provider}]", "CQ-X", provider, outcome, "m", 0.5, (), fate)

    records = [record("a", "passed"), record("b", "failed", CRASHED), record("c", "failed", TIMEOUT),
               record("d", "failed"), record("a", "passed", provider="other")]
    assert format_matrix(records, ["soft", "other"]).splitlines()[1].split() == ["CQ-X", "CRASH", "pass"]
    assert format_family_counts(records, ["soft", "other"]).splitlines()[2].split() == [
        "CQ", "1/1/0/1/1", "1/0/0/0/0"]
    assert format_provider_totals(records, ["soft"]).splitlines()[1] == (
        "  soft: 1 passed, 1 failed, 1 crashed, 1 timed out, 0 skipped, test phases 2.0 s")
    assert format_totals(records, 3.0).startswith(
        "conformance: 2 passed, 1 failed, 1 crashed, 1 timed out, 0 skipped in 3.0 s")
    assert format_failures(records).splitlines()[1:] == [
        "  CRASH    t.py::b[soft]: m", "  TIMEOUT  t.py::c[soft]: m", "  FAILED   t.py::d[soft]: m"]
    # Without crashes or timeouts, nothing changes.
    plain = [record("a", "passed"), record("d", "failed")]
    assert format_family_counts(plain, ["soft"]).splitlines()[0] == (
        "scenarios per family (passed/failed/skipped):")
    assert format_provider_totals(plain, ["soft"]) == ""


def test_scenarios_that_did_not_run_are_named_and_fail_the_run(capsys):
    from ndk import conformance

    records = [Record("t.py::a[soft]", "CQ-X", "soft", "passed", None, 0.1)]
    code = conformance.conclude(0, records, ["soft"], 1.0, "here", sys.stdout,
                                not_run=["t.py::b[soft]", "t.py::c[soft]"])
    assert code == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        "warning: 2 collected scenario(s) did not run (the run stopped early): t.py::b[soft], "
        "t.py::c[soft]")
    assert "--max-worker-restart=1000" in conformance.pytest_args("s", [], workers=2)
    assert "--max-worker-restart=1000" not in conformance.pytest_args(
        "s", [], workers=2, extra_args=["--max-worker-restart=3"])
    assert not any(a.startswith("--max") for a in conformance.pytest_args("s", []))
