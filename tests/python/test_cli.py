"""The ``ndk`` command line, in-process against the fake ndk."""

from __future__ import annotations

import enum
import importlib.util
import sys
from collections import namedtuple
from dataclasses import dataclass

import pytest

from ndk import cli, conformance


def test_providers_lists_every_spelling_with_what_it_opens(capsys, fake_ndk, monkeypatch):
    monkeypatch.setattr(fake_ndk, "providers", lambda: ["soft", "loop", "verbs", "other"])
    monkeypatch.setattr(cli, "rdma_devices", lambda: ["rxe0", "siw0"])
    assert cli.main(["providers"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [
        "soft", "soft:shm", "soft:tcp", "loop", "verbs", "verbs:rxe0", "verbs:siw0", "other",
        lines[-1].split()[0]]
    assert "transport=tcp" in lines[2] and "rxe0" in lines[5]
    assert lines[-1].split()[0].endswith(".so") and "by its path" in lines[-1]
    # One column of spellings, one of descriptions ("other", unknown here, has none).
    width = max(len(line.split()[0]) for line in lines)
    assert all(line[width:width + 2] == "  " and line[width + 2] != " "
               for line in lines if line != "other")


def test_providers_without_rdma_devices_shows_the_device_spelling(fake_ndk, monkeypatch):
    rows = cli.provider_spellings(["verbs"], [])
    assert [spelling for spelling, _ in rows] == ["verbs", "verbs:DEVICE", "/path/to/libprovider.so"]
    assert "(none here)" in rows[1][1]


def test_info_prints_an_aligned_table_per_provider_and_closes_adapters(capsys, fake_ndk):
    assert cli.main(["info"]) == 0
    lines = capsys.readouterr().out.splitlines()
    fields = fake_ndk.AdapterInfo._fields
    per_provider = len(fields) + 1
    assert lines[0] == "soft" and lines[per_provider] == "plain"
    body = lines[1:per_provider]
    info = fake_ndk.opened[0].query_info()
    assert [line.split() for line in body] == [[f"{name}:", str(getattr(info, name))] for name in fields]
    # Values start in one column: the longest name plus ": ".
    value_column = 2 + max(len(name) for name in fields) + 2
    assert all(line[value_column - 1] == " " and line[value_column] != " " for line in body)
    assert len(fake_ndk.opened) == 2
    assert all(adapter.is_closed for adapter in fake_ndk.opened)


def test_info_lists_a_provider_without_a_device_with_the_reason_and_succeeds(capsys, fake_ndk, monkeypatch):
    # verbs on a host without RDMA: every registered provider is listed, so a missing device is
    # information, not a failure of the command.
    monkeypatch.setattr(fake_ndk, "providers", lambda: ["soft", "verbs"])
    assert cli.main(["info"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0] == "soft"
    verbs = lines.index("verbs")
    assert lines[verbs + 1] == "  not available: no provider named 'verbs'"
    assert captured.err == ""


def test_info_for_one_provider(capsys, fake_ndk):
    assert cli.main(["info", "--provider", "plain"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "plain"
    assert "soft" not in out


def test_info_reports_a_provider_that_cannot_open_and_fails(capsys, fake_ndk):
    assert cli.main(["info", "--provider", "nosuch", "--provider", "soft"]) == 1
    captured = capsys.readouterr()
    assert "cannot open provider 'nosuch'" in captured.err
    assert captured.out.splitlines()[0] == "soft"


def test_info_to_a_closed_pipe_exits_quietly(fake_ndk_env):
    # `ndk info | head -1`: the reader is gone before the command writes; no traceback.
    import subprocess

    process = subprocess.Popen([sys.executable, "-m", "ndk", "info"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    process.stdout.close()  # no reader left: the first write (or flush) gets EPIPE
    err = process.stderr.read().decode()
    assert process.wait(timeout=60) == 141, err
    assert err == ""


def test_conformance_passes_its_arguments_to_run(monkeypatch):
    calls = []
    monkeypatch.setattr(conformance, "run", lambda **kwargs: calls.append(kwargs) or 7)
    argv = ["conformance", "--provider", "soft", "--provider", "lib/x.so", "--junit", "j.xml",
            "--html", "r.html", "--scenarios", "scen", "-k", "cq and not qp", "--progress",
            "plain", "-n", "2", "--timeout", "2.5", "--strict", "--expectations", "a.toml",
            "--expectations", "b.toml", "--rule", "CQ-*", "--rule", "QP", "--lf", "--json",
            "r.json", "--baseline", "b.json", "--fail-on-regression", "--", "-x",
            "--tb=short"]  # fmt: skip
    assert cli.main(argv) == 7
    assert calls == [
        dict(providers=["soft", "lib/x.so"], scenarios_dir="scen", junit="j.xml",
             keyword="cq and not qp", extra_args=["--lf", "-x", "--tb=short"], html="r.html",
             progress="plain", workers="2", timeout=2.5, strict=True,
             expectations=["a.toml", "b.toml"], rules=["CQ-*", "QP"], json_path="r.json",
             baseline="b.json", fail_on_regression=True),
    ]  # fmt: skip


def test_conformance_defaults(monkeypatch):
    calls = []
    monkeypatch.setattr(conformance, "run", lambda **kwargs: calls.append(kwargs) or 0)
    assert cli.main(["conformance"]) == 0
    assert calls == [dict(providers=[], scenarios_dir=None, junit=None, keyword=None, extra_args=[],
                          html=None, progress="auto", workers=None,
                          timeout=cli.DEFAULT_TIMEOUT, strict=False, rules=(), json_path=None,
                          baseline=None, fail_on_regression=False,
                          expectations=None)]


def test_conformance_timeout_zero_means_no_limit_and_ff_passes_through(monkeypatch):
    calls = []
    monkeypatch.setattr(conformance, "run", lambda **kwargs: calls.append(kwargs) or 0)
    assert cli.main(["conformance", "--timeout", "0", "--ff"]) == 0
    assert calls[0]["timeout"] is None and calls[0]["extra_args"] == ["--ff"]


@pytest.mark.parametrize("argv", [["-n", "two"], ["-n", "-1"], ["--timeout", "-1"],
                                  ["--timeout", "soon"]])
def test_conformance_rejects_bad_workers_and_timeouts(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["conformance", *argv])
    assert exit_info.value.code == 2
    assert argv[0] in capsys.readouterr().err


def test_double_dash_is_only_for_conformance(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["providers", "--", "-x"])
    assert exit_info.value.code == 2
    assert "only for 'conformance'" in capsys.readouterr().err


def test_a_command_is_required(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([])
    assert exit_info.value.code == 2


def test_cli_imports_and_shows_help_without_the_api(monkeypatch, capsys):
    # Load cli.py afresh while "import ndk" fails (a None entry in sys.modules makes it raise),
    # as it would with a broken extension: a module-level import of the API would fail here.
    monkeypatch.setitem(sys.modules, "ndk", None)
    spec = importlib.util.spec_from_file_location("isolated_ndk_cli", cli.__file__)
    isolated = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(isolated)
    with pytest.raises(SystemExit) as exit_info:
        isolated.main(["conformance", "--help"])
    assert exit_info.value.code == 0
    assert "--provider P" in capsys.readouterr().out
    with pytest.raises(ImportError):
        isolated.main(["providers"])


# --- info_fields on the shapes an info object can take -------------------------------------


class Flags(enum.IntFlag):
    A = 1
    B = 2


def test_info_fields_of_a_named_tuple_keep_their_order():
    Info = namedtuple("Info", "zeta alpha")
    assert cli.info_fields(Info(1, 2)) == [("zeta", 1), ("alpha", 2)]


def test_info_fields_of_a_dataclass():
    @dataclass
    class Info:
        zeta: int
        alpha: int

    assert cli.info_fields(Info(1, 2)) == [("zeta", 1), ("alpha", 2)]


def test_info_fields_of_a_plain_object_skip_private_names():
    class Info:
        def __init__(self):
            self.zeta, self.alpha, self._hidden = 1, 2, 3

    assert cli.info_fields(Info()) == [("zeta", 1), ("alpha", 2)]


def test_info_fields_of_properties_in_definition_order_without_methods():
    # The shape of a pybind11 class with def_readonly fields: properties, no instance __dict__.
    class Info:
        __slots__ = ()
        zeta = property(lambda self: 1)
        alpha = property(lambda self: 2)

        def method(self):
            return 0

    assert cli.info_fields(Info()) == [("zeta", 1), ("alpha", 2)]


def test_format_value_names_flags():
    assert cli.format_value(Flags.A | Flags.B) == "A|B (0x3)"
    assert cli.format_value(12) == "12"


def test_format_info_aligns_values():
    Info = namedtuple("Info", "a long_name flags")
    assert cli.format_info(Info(1, 2, Flags.B)).splitlines() == [
        "  a:         1",
        "  long_name: 2",
        "  flags:     B (0x2)",
    ]
