"""The conformance runner end to end: ``python3 -m ndk conformance`` in a subprocess.

A subprocess because the runner calls pytest.main on scenario modules; pytester's in-process
mode isolates sys.modules for its own runs only, not for a pytest.main the runner makes.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET

import pytest

from ndk import conformance

SCENARIOS = {
    "test_cq": """
        import pytest
        from ndk.testing import requires

        @pytest.mark.rule("CQ-CREATE-DEPTH")
        def test_depth(cq):
            assert cq.depth == 64

        @pytest.mark.rule("CQ-KNOB")
        def test_knob(open_adapter):
            assert open_adapter(max_cq_depth=8).query_info().max_cq_depth == 8
        """,
    "test_qp": """
        import pytest

        @pytest.mark.rule("QP-BROKEN")
        def test_broken(adapter, ndk_provider):
            assert adapter.query_info().vendor_id == 0, "vendor mismatch"

        def test_unmarked(adapter):
            pass
        """,
}


def run_ndk(pytester, *args):
    return pytester.run(sys.executable, "-m", "ndk", *args, timeout=120)


def matrix_rows(result):
    """{rule: cells} from the matrix block of the runner's output."""
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == ["rule"])
    rows = {}
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        rule, *cells = line.split()
        rows[rule] = cells
    return lines[start].split()[1:], rows


def test_matrix_shows_pass_fail_skip_per_rule_and_provider(scenarios, pytester, fake_ndk_env):
    directory = scenarios(**SCENARIOS)
    result = run_ndk(pytester, "conformance", "--scenarios", str(directory), "--provider", "soft", "--provider", "plain")
    assert result.ret == 1
    header, rows = matrix_rows(result)
    assert header == ["soft", "plain"]
    assert rows == {
        "CQ-CREATE-DEPTH": ["pass", "pass"],
        "CQ-KNOB": ["pass", "skip"],
        "QP-BROKEN": ["FAIL", "FAIL"],
        "(unmarked)": ["pass", "pass"],
    }
    result.stdout.fnmatch_lines(
        ["scenarios per family (passed/failed/skipped):", "  CQ  *2/0/0*1/0/1", "  QP  *0/1/0*0/1/0"]
    )
    result.stdout.fnmatch_lines(["skip reasons:", "  1  knob: provider 'plain' cannot take the knobs the scenario sets (max_cq_depth): *"])
    result.stdout.fnmatch_lines(["warning: 2 scenario(s) without a rule marker: *test_unmarked*"])
    result.stdout.fnmatch_lines(["conformance: 5 passed, 2 failed, 1 skipped in * s (test phases * s)"])
    assert "PytestAssertRewriteWarning" not in result.stdout.str()
    # stdout is a pipe here: the progress comes as plain lines, one per family, no escapes.
    assert "\x1b" not in result.stdout.str()
    result.stdout.fnmatch_lines(["ndk conformance: 8 tests in 3 rule families"])
    result.stdout.fnmatch_lines(["CQ  *3 passed, 0 failed, 1 skipped  ?6/8, * s?"])
    result.stdout.fnmatch_lines(["QP  *0 passed, 2 failed, 0 skipped  ?7/8, * s?"])


def test_all_passing_exits_0_with_default_provider(scenarios, pytester, fake_ndk_env):
    directory = scenarios(test_cq=SCENARIOS["test_cq"])
    result = run_ndk(pytester, "conformance", "--scenarios", str(directory))
    assert result.ret == 0, result.stdout.str()
    header, rows = matrix_rows(result)
    assert header == ["soft"]
    assert rows == {"CQ-CREATE-DEPTH": ["pass"], "CQ-KNOB": ["pass"]}
    result.stdout.fnmatch_lines(["conformance: 2 passed, 0 failed, 0 skipped in *"])


def test_totals_show_the_measured_wall_time_of_the_run(scenarios, pytester, fake_ndk_env):
    # Half a second spent importing the module (collection): no test phase sees it, the run does.
    directory = scenarios(test_slow="""
        import time
        import pytest

        time.sleep(0.5)

        @pytest.mark.rule("SLOW-SKIP")
        def test_skips():
            pytest.skip("nothing to do")
        """)
    result = run_ndk(pytester, "conformance", "--scenarios", str(directory))
    assert result.ret == 0, result.stdout.str()
    line = result.outlines[-1]
    match = re.fullmatch(r"conformance: 0 passed, 0 failed, 1 skipped in ([0-9.]+) s "
                         r"\(test phases ([0-9.]+) s\)", line)
    assert match, line
    wall, phases = map(float, match.groups())
    assert 0.5 <= wall < 60 and phases < 0.5


# A scenario that checks the plugin is registered exactly once, under its module name.
PLUGIN_ONCE = """
    import sys
    import pytest

    @pytest.mark.rule("PLUGIN-ONCE")
    def test_plugin_once(request, adapter):
        manager = request.config.pluginmanager
        testing = sys.modules["ndk.testing"]
        assert manager.get_plugin("ndk.testing") is testing
        assert [plugin for plugin in manager.get_plugins() if plugin is testing] == [testing]
        assert adapter.provider == "soft"
    """


def test_a_folder_without_conftest_just_works(pytester, fake_ndk_env, monkeypatch):
    # Before, the runner relied on the folder's conftest to load ndk.testing: "fixture
    # 'adapter' not found".  No entry points either (an installed package's pytest11 entry
    # point would load the plugin by itself): the runner alone must load it.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_bare=PLUGIN_ONCE)
    assert not (pytester.path / "conftest.py").exists()
    result = run_ndk(pytester, "conformance", "--scenarios", str(pytester.path))
    assert result.ret == 0, result.stdout.str()
    assert "fixture 'adapter' not found" not in result.stdout.str()
    result.stdout.fnmatch_lines(["PLUGIN-ONCE *pass", "conformance: 1 passed, 0 failed, 0 skipped in *"])


def test_a_conftest_naming_the_plugin_too_registers_it_once(scenarios, pytester, fake_ndk_env):
    # -p ndk.testing, the conftest's pytest_plugins and (when the package is installed) the
    # pytest11 entry point all name it "ndk.testing": one registration.
    directory = scenarios(test_once=PLUGIN_ONCE)
    assert "ndk.testing" in (directory / "conftest.py").read_text()
    result = run_ndk(pytester, "conformance", "--scenarios", str(directory))
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["conformance: 1 passed, 0 failed, 0 skipped in *"])


def test_keyword_selects_scenarios(scenarios, pytester, fake_ndk_env):
    directory = scenarios(**SCENARIOS)
    result = run_ndk(pytester, "conformance", "--scenarios", str(directory), "-k", "depth or knob")
    assert result.ret == 0, result.stdout.str()
    assert set(matrix_rows(result)[1]) == {"CQ-CREATE-DEPTH", "CQ-KNOB"}


def test_extra_pytest_args_after_double_dash(scenarios, pytester, fake_ndk_env):
    directory = scenarios(**SCENARIOS)
    result = run_ndk(pytester, "conformance", "--scenarios", str(directory), "--", "-x")
    assert result.ret == 1
    # -x stops at the first failure, so fewer scenarios are reported than the 4 collected.
    totals = re.search(r"conformance: (\d+) passed, (\d+) failed, (\d+) skipped", result.stdout.str())
    passed, failed, skipped = map(int, totals.groups())
    assert failed == 1 and passed + failed + skipped < 4


def test_nothing_collected_exits_5_with_a_message(scenarios, pytester, fake_ndk_env):
    directory = scenarios(**SCENARIOS)
    result = run_ndk(pytester, "conformance", "--scenarios", str(directory), "-k", "no_such_scenario")
    assert result.ret == 5
    result.stdout.fnmatch_lines([f"ndk conformance: no scenarios collected from {directory} matching -k 'no_such_scenario'"])


def test_empty_directory_exits_5(pytester, fake_ndk_env):
    empty = pytester.mkdir("empty")
    result = run_ndk(pytester, "conformance", "--scenarios", str(empty))
    assert result.ret == 5
    result.stdout.fnmatch_lines(["ndk conformance: no scenarios collected from *empty"])


def test_junit_file_is_written(scenarios, pytester, fake_ndk_env):
    directory = scenarios(**SCENARIOS)
    junit = pytester.path / "out" / "conformance.xml"
    result = run_ndk(pytester, "conformance", "--scenarios", str(directory), "--junit", str(junit), "--provider", "soft", "--provider", "plain")
    assert result.ret == 1
    cases = ET.parse(junit).getroot().iter("testcase")
    outcomes = {case.get("name"): [child.tag for child in case] for case in cases}
    assert outcomes["test_broken[plain]"] == ["failure"]
    assert outcomes["test_knob[plain]"] == ["skipped"]
    assert outcomes["test_depth[soft]"] == []
    assert len(outcomes) == 8


def test_unknown_pytest_option_returns_pytests_usage_code(scenarios, pytester, fake_ndk_env):
    directory = scenarios(**SCENARIOS)
    result = run_ndk(pytester, "conformance", "--scenarios", str(directory), "--", "--no-such-option")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "conformance:" not in result.stdout.str()


def test_missing_scenarios_directory_is_a_clear_error(pytester, fake_ndk_env):
    result = run_ndk(pytester, "conformance", "--scenarios", str(pytester.path / "nowhere"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ndk conformance: --scenarios: *nowhere is not a directory"])


# --- pieces of run(), in-process -----------------------------------------------------------


def test_pytest_args_load_the_plugin(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    args = conformance.pytest_args("scen", ["soft", "lib/x.so"], junit="j.xml", keyword="cq",
                                   extra_args=["-x"], rules=["CQ-*"])
    assert args == [
        "scen", "-q", "-o", f"cache_dir={tmp_path}/ndk-harness/pytest", "-p", "ndk.testing",
        "--ndk-provider", "soft", "--ndk-provider", "lib/x.so", "--ndk-rule", "CQ-*",
        "--junitxml=j.xml", "-k", "cq", "-x",
    ]  # fmt: skip


@pytest.mark.parametrize("verbose", ["-v", "-vv", "--verbose"])
def test_pytest_args_are_not_quiet_when_asked_for_verbose(verbose):
    args = conformance.pytest_args("scen", ["soft"], extra_args=[verbose])
    assert "-q" not in args and args[-1] == verbose


def test_locate_prefers_the_argument_then_the_environment(tmp_path, monkeypatch):
    arg, env = tmp_path / "arg", tmp_path / "env"
    arg.mkdir()
    env.mkdir()
    monkeypatch.setenv("NDK_SCENARIOS", str(env))
    assert conformance.locate_scenarios_dir(str(arg)) == arg
    assert conformance.locate_scenarios_dir(None) == env
    monkeypatch.setenv("NDK_SCENARIOS", str(tmp_path / "missing"))
    with pytest.raises(conformance.ScenariosNotFound, match="NDK_SCENARIOS: .*missing is not a directory"):
        conformance.locate_scenarios_dir(None)


def test_locate_uses_the_build_info_then_the_source_tree(tmp_path, monkeypatch):
    monkeypatch.delenv("NDK_SCENARIOS", raising=False)
    built = tmp_path / "built"
    built.mkdir()
    build_info = type(sys)("ndk._build_info")
    build_info.SCENARIOS_DIR = str(built)
    monkeypatch.setitem(sys.modules, "ndk._build_info", build_info)
    assert conformance.locate_scenarios_dir() == built

    # Without build info, scenarios/ beside python/ (this checkout's) is the fallback.
    monkeypatch.setitem(sys.modules, "ndk._build_info", None)  # None makes the import fail
    source = conformance.Path(conformance.__file__).resolve().parents[2] / "scenarios"
    if source.is_dir():
        assert conformance.locate_scenarios_dir() == source
    monkeypatch.setattr(conformance, "__file__", str(tmp_path / "python" / "ndk" / "conformance.py"))
    with pytest.raises(conformance.ScenariosNotFound, match="pass --scenarios DIR or set NDK_SCENARIOS"):
        conformance.locate_scenarios_dir()
