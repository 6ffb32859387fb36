"""ndk walk (docs/walk.md): a clean short walk, and forced failures that the shrinker must
reduce to a small pytest scenario which, run on its own, fails the same way."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ndk import walk

try:
    walk.find_helper()
except FileNotFoundError:  # pragma: no cover - a build without the walker
    pytest.skip("ndk_walk is not built", allow_module_level=True)


def run_scenario(path):
    """pytest the generated scenario in a fresh interpreter; (exit code, output)."""
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(walk.__file__)))
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:ndk.testing", str(path)], capture_output=True, text=True,
                          env=env, cwd=os.path.dirname(path), timeout=300, check=False)
    return done.returncode, done.stdout + done.stderr


def test_short_walk_is_clean(tmp_path):
    result = walk.walk(ops=3000, seed=11, out=tmp_path, shrink=False)
    assert result["failure"] is None, result["failure"]
    assert result["ops"] == 3000
    summary = walk.format_summary(result)
    assert "ops/s" in summary and "NdkCreateQp" in summary and "clean" in summary


def test_short_walk_fast_registers(tmp_path):
    """NdkBuildLAM, NdkFastRegister and the fast-registered token's remote use are walked:
    a short walk's statuses include their successes (docs/walk.md)."""
    result = walk.walk(ops=20000, seed=11, out=tmp_path, shrink=False)
    assert result["failure"] is None, result["failure"]
    statuses = result["statuses"]
    assert statuses["NdkBuildLAM"].get("STATUS_SUCCESS", 0) > 0
    assert statuses["NdkFastRegister"].get("STATUS_SUCCESS", 0) > 0
    assert statuses["NdkFastRegister (completion)"].get("STATUS_SUCCESS", 0) > 0
    assert statuses["NdkReleaseLAM"]["called"] > 0


FINDINGS = sorted(
    (Path(__file__).resolve().parents[1] / "walk" / "findings").glob("*.jsonl"))


@pytest.mark.parametrize("trace", FINDINGS, ids=[p.stem for p in FINDINGS])
def test_fixed_finding_replays_clean(trace, tmp_path):
    """Each trace in tests/walk/findings once failed with the signature its header records
    (its detail says where the fault was: provider, layer or the walker's own model); replayed
    now, it must run clean."""
    header, ops = walk.read_trace(trace)
    assert header["signature"] and ops
    result = walk.walk(replay=trace, out=tmp_path, shrink=False)
    assert result["failure"] is None, (header["signature"], result["failure"])
    assert result["ops"] == len(ops)
    assert result["trace_ops"] == len(ops)  # the summary says how long the replayed trace is


def test_provider_violation_shrinks_to_a_scenario(tmp_path):
    """misbehave=complete_twice with create_mode=pending: the first pending create completes
    twice (CREATE-COMPLETION-TWICE); one create is all a scenario needs."""
    result = walk.walk(ops=500, seed=3, out=tmp_path, misbehave="complete_twice",
                       create_mode="pending", shrink_seconds=60)
    failure = result["failure"]
    assert failure["signature"] == "violation:CREATE-COMPLETION-TWICE"
    assert result["shrunk_ops"] <= 2
    code, output = run_scenario(result["scenario"])
    assert code != 0
    assert "CREATE-COMPLETION-TWICE" in output, output


def test_data_mismatch_shrinks_to_a_scenario(tmp_path):
    """--inject-failure-at N damages the destination of the next successful transfer after op
    N: the shrinker must keep a transfer and everything it needs (objects, a connection), and
    the scenario, replayed through the Python API, must report the same mismatch.  The
    shrinker runs to its end (about 800 replays; 7 s in a release build): with a time budget
    its result depended on the machine's load (46 ops left where 40 are the limit, under ASan
    beside other work)."""
    result = walk.walk(ops=4000, seed=5, out=tmp_path, inject_failure_at=400, shrink_seconds=900)
    failure = result["failure"]
    assert failure["kind"] == "data"
    assert result["trace_ops"] > 400
    assert 3 <= result["shrunk_ops"] <= 40
    header, ops = walk.read_trace(result["shrunk"])
    assert any(op["op"] == "corrupt" for op in ops)
    code, output = run_scenario(result["scenario"])
    assert code != 0
    assert "destination differs" in output or "naming send" in output, output


def test_a_shrink_cut_short_still_gives_a_scenario_that_runs(tmp_path):
    """A shrinker out of time leaves ops whose objects it removed (the walker skips them); the
    trace it writes keeps only the ops its replay ran, so the scenario reaches the mismatch
    instead of stopping at a call on an object that was never created (seen in CI under ASan,
    where the 90 s of the test above were not enough)."""
    result = walk.walk(ops=4000, seed=5, out=tmp_path, inject_failure_at=400, shrink_seconds=1)
    assert result["failure"]["kind"] == "data"
    assert result["shrunk_ops"] < result["trace_ops"]
    code, output = run_scenario(result["scenario"])
    assert code != 0
    assert "destination differs" in output or "naming send" in output, output


def test_scenario_source_is_public_api():
    header = {"provider": "soft", "seed": 9, "options": "address=192.0.2.9;rnr_timeout_ms=0",
              "signature": "violation:X", "detail": "d"}
    source = walk.scenario_source(header, [{"i": 1, "op": "pd_create", "ad": 0, "new": 1}])
    assert "ndk.open_adapter('soft', validate=True, address='192.0.2.9', rnr_timeout_ms=0)" \
        in source
    assert "m.pd_create(1, ad=0, new=1)" in source
    compile(source, "scenario.py", "exec")


def test_pattern_matches_the_engine():
    # the first 8 bytes name the op; the rest is the engine's hash (python/walk/world.hpp)
    assert walk.pattern_bytes(0x0102030405060708, 0, 8) == bytes([8, 7, 6, 5, 4, 3, 2, 1])
    assert len(set(walk.pattern_bytes(7, 8, 64))) > 16


def test_walk_past_known_moves_to_the_next_seed(monkeypatch, tmp_path):
    """--past-known: a walk failing as the quirk table says the provider fails is recorded as
    known and the next seed walks on; the first unknown failure (or clean walk) ends it."""
    outcomes = {7: {"signature": "data:write", "op": 3, "detail": "d"},
                8: {"signature": "lost:send", "op": 5, "detail": "d"}}
    seeds = []

    def fake_walk(provider="soft", seconds=10.0, seed=None, out=".", shrink=True,
                  shrink_seconds=120.0, replay=None):
        if replay:  # the unknown failure's trace is shrunk
            return {"shrunk": f"{replay}.min", "shrunk_ops": 2}
        assert not shrink  # a known failure is not worth the shrinker's time
        seeds.append(seed)
        return {"provider": provider, "seed": seed, "ops": 10, "seconds": 0.1,
                "failure": outcomes.get(seed), "trace": f"walk-{seed}.jsonl"}

    monkeypatch.setattr(walk, "walk", fake_walk)
    results = walk.walk_past_known("verbs:siw0", 30, 7, tmp_path)
    assert seeds == [7, 8]
    assert "iWARP" in results[0]["known"]
    assert "known" not in results[1] and results[1]["shrunk"] == "walk-8.jsonl.min"
    assert walk.walk_past_known("soft", 30, 7, tmp_path)[0].get("known") is None
