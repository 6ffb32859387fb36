"""Expectations files (python/ndk/expectations.py, docs/expectations.md): the loader accepts
the format and names the file and line of every mistake; lookups go from the most specific key
to the least, exact rule IDs before globs; the harness's own files (python/expectations/) name rules
the scenarios check, with their evidence in docs/semantics.md."""

from __future__ import annotations

import fnmatch
import re
import textwrap
from pathlib import Path

import pytest

from ndk import expectations
from ndk.expectations import ExpectationsError, keys, load, load_all

ROOT = Path(__file__).resolve().parents[2]
IN_TREE = sorted((ROOT / "python" / "expectations").glob("*.toml"))

VALID = """\
    # a provider's known differences
    format = 1
    provider = "verbs:siw"

    [[skip]]
    rules = ["MW-*", "BIND-TWICE"]
    reason = "no memory windows"
    evidence = "ibv_alloc_mw: EOPNOTSUPP (the lane)"

    [[xfail]]
    provider = "verbs"
    rules = ["REJECT-ABORTED"]
    reason = "rdma_reject still finds the request"
    evidence = "the lane, run 12"

    [[differs]]
    active = "soft:tcp"
    passive = "verbs:siw"
    rules = ["CQ-CHOICE"]
    reason = '''
    the pair chooses otherwise'''
    evidence = "docs/semantics.md"
"""


def write(tmp_path: Path, text: str, name: str = "p.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_valid_file_gives_its_entries_in_order(tmp_path):
    path = write(tmp_path, VALID)
    loaded = load(path)
    assert loaded.files == [str(path)]
    assert [(e.action, e.key, e.rules, e.reason, e.evidence, e.source) for e in loaded.entries] == [
        ("skip", "verbs:siw", ("MW-*", "BIND-TWICE"), "no memory windows",
         "ibv_alloc_mw: EOPNOTSUPP (the lane)", f"{path}:5"),
        ("xfail", "verbs", ("REJECT-ABORTED",), "rdma_reject still finds the request",
         "the lane, run 12", f"{path}:10"),
        ("differs", "soft:tcp|verbs:siw", ("CQ-CHOICE",), "the pair chooses otherwise",
         "docs/semantics.md", f"{path}:16"),
    ]


# (the file's text, the line the error names, a part of its message)
ERRORS = {
    "bad TOML": ("format = 1\nprovider = \"x\n", 2, "not valid TOML"),
    "unknown top-level key": ("format = 1\nprovder = \"soft\"\n", 2, "unknown key 'provder'"),
    "unknown action": ("format = 1\nprovider = \"soft\"\n\n[[skp]]\nrules = [\"A-B\"]\n", 4,
                       "unknown key 'skp'"),
    "unknown entry key": ("format = 1\nprovider = \"soft\"\n[[skip]]\nrules = [\"A-B\"]\n"
                          "reason = \"r\"\nevidence = \"e\"\nseverity = 2\n", 7,
                          "unknown key 'severity' in [[skip]]"),
    "no format": ("provider = \"soft\"\n", None, "format = 1 is required"),
    "another format": ("format = 2\n", 1, "format = 1 is required"),
    "an action that is not a list of tables": ("format = 1\nskip = \"A-B\"\n", 2,
                                               "write [[skip]]"),
    "no provider": ("format = 1\n[[xfail]]\nrules = [\"A-B\"]\nreason = \"r\"\nevidence = \"e\"\n",
                    2, "names no provider"),
    "provider and pair": ("format = 1\n[[skip]]\nprovider = \"a\"\nactive = \"a\"\n"
                          "passive = \"b\"\nrules = [\"A-B\"]\nreason = \"r\"\nevidence = \"e\"\n",
                          3, "one or the other"),
    "half a pair": ("format = 1\n[[skip]]\nrules = [\"A-B\"]\nactive = \"a\"\nreason = \"r\"\n"
                    "evidence = \"e\"\n", 4, "has active but no passive"),
    "a pair as a provider key": ("format = 1\nprovider = \"a|b\"\n", 2, "give a pair as active"),
    "no rules": ("format = 1\nprovider = \"a\"\n[[skip]]\nreason = \"r\"\nevidence = \"e\"\n", 3,
                 "needs rules"),
    "empty rules": ("format = 1\nprovider = \"a\"\n[[skip]]\nreason = \"r\"\nrules = []\n"
                    "evidence = \"e\"\n", 5, "needs rules"),
    "a rule that is no rule ID": ("format = 1\nprovider = \"a\"\n[[skip]]\nrules = [\"cq-arm\"]\n"
                                  "reason = \"r\"\nevidence = \"e\"\n", 4, "'cq-arm' is not a rule"),
    "no reason": ("format = 1\nprovider = \"a\"\n[[skip]]\nrules = [\"A-B\"]\nevidence = \"e\"\n",
                  3, "needs reason"),
    "an empty evidence": ("format = 1\nprovider = \"a\"\n[[skip]]\nrules = [\"A-B\"]\n"
                          "reason = \"r\"\nevidence = \" \"\n", 6, "needs evidence"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_each_mistake_names_the_file_and_line(tmp_path, case):
    text, line, message = ERRORS[case]
    path = write(tmp_path, text)
    with pytest.raises(ExpectationsError) as error:
        load(path)
    assert (error.value.path, error.value.line) == (str(path), line)
    assert message in error.value.message
    where = f"{path}:{line}" if line else str(path)
    assert str(error.value).startswith(f"{where}: ")


def test_an_unreadable_file_is_an_error_naming_it(tmp_path):
    with pytest.raises(ExpectationsError, match=r"missing\.toml: cannot read"):
        load(tmp_path / "missing.toml")


def test_one_rule_of_one_key_in_two_entries_is_an_error_naming_both(tmp_path):
    entry = "[[skip]]\nrules = [\"A-B\"]\nreason = \"r\"\nevidence = \"e\"\n"
    first = write(tmp_path, f"format = 1\nprovider = \"soft\"\n{entry}", "first.toml")
    second = write(tmp_path, f"format = 1\nprovider = \"soft\"\n\n{entry}", "second.toml")
    with pytest.raises(ExpectationsError) as error:
        load_all([first, second])
    assert str(error.value) == f"{second}:4: A-B for soft already has an entry at {first}:3"
    other = write(tmp_path, f"format = 1\nprovider = \"loop\"\n{entry}", "other.toml")
    assert len(load_all([first, other]).entries) == 2  # another key: no conflict


def entries(tmp_path, text):
    return load(write(tmp_path, "format = 1\n" + textwrap.dedent(text)))


def test_a_glob_selects_every_rule_it_matches_and_an_exact_id_wins(tmp_path):
    loaded = entries(tmp_path, """
        provider = "p"
        [[skip]]
        rules = ["CQ-*"]
        reason = "no CQs"
        evidence = "e"
        [[xfail]]
        rules = ["CQ-ARM"]
        reason = "arms twice"
        evidence = "e"
        """)
    assert loaded.lookup("p", "CQ-DEPTH").reason == "no CQs"
    assert loaded.lookup("p", "CQ-ARM").reason == "arms twice"
    assert loaded.lookup("p", "QP-CQ-X") is None
    assert loaded.lookup("q", "CQ-DEPTH") is None
    assert loaded.lookup("p", None) is None and loaded.lookup(None, "CQ-ARM") is None


def test_the_most_specific_key_wins(tmp_path):
    loaded = entries(tmp_path, """
        [[skip]]
        provider = "verbs"
        rules = ["MW-*"]
        reason = "every device"
        evidence = "e"
        [[skip]]
        provider = "verbs:siw"
        rules = ["MW-*"]
        reason = "siw"
        evidence = "e"
        """)
    assert loaded.lookup("verbs:siw0", "MW-CREATE").reason == "siw"
    assert loaded.lookup("verbs:rxe0", "MW-CREATE").reason == "every device"
    assert loaded.lookup("soft", "MW-CREATE") is None


def test_a_pair_is_looked_up_under_its_own_keys_only(tmp_path):
    loaded = entries(tmp_path, """
        [[skip]]
        provider = "verbs:siw"
        rules = ["MW-CREATE"]
        reason = "siw alone"
        evidence = "e"
        [[xfail]]
        active = "verbs:siw"
        passive = "soft:tcp"
        rules = ["WRITE-*"]
        reason = "the pair"
        evidence = "e"
        """)
    assert loaded.lookup("verbs:siw0", "WRITE-DATA", "soft:tcp").reason == "the pair"
    assert loaded.lookup("verbs:siw0", "MW-CREATE", "soft:tcp") is None  # not the pair's
    assert loaded.lookup("soft:tcp", "WRITE-DATA", "verbs:siw0") is None  # the other way
    assert loaded.lookup("verbs:siw0", "WRITE-DATA") is None  # siw with siw
    assert loaded.lookup("verbs:siw0", "MW-CREATE", "verbs:siw0").reason == "siw alone"


def test_keys_go_from_device_to_kind_to_provider_and_from_library_to_name():
    assert keys("verbs:siw0") == ["verbs:siw0", "verbs:siw", "verbs"]
    assert keys("soft") == ["soft"]
    assert keys("soft:tcp", "verbs:siw0") == [
        "soft:tcp|verbs:siw0", "soft:tcp|verbs:siw", "soft:tcp|verbs"]
    assert keys("verbs:siw0", "verbs:siw0") == keys("verbs:siw0")
    path = "/work/build/core/libndk_loop_provider.so"
    assert keys(path) == [path, "loop"]
    assert keys("/opt/lib/libmyprovider.so") == ["/opt/lib/libmyprovider.so"]
    assert keys("/opt/lib/libndk_loop_provider.so.1") == ["/opt/lib/libndk_loop_provider.so.1"]


def test_the_harness_files_are_found_by_provider_name(tmp_path):
    for name in ("verbs.toml", "loop.toml"):
        (tmp_path / name).write_text("format = 1\n")
    found = expectations.default_files(
        ["verbs:siw0", "soft:tcp", "/b/libndk_loop_provider.so", "verbs:rxe0", "/x/libp.so"],
        tmp_path)
    assert found == [tmp_path / "verbs.toml", tmp_path / "loop.toml"]
    assert expectations.default_files(["soft"], tmp_path) == []


# --- the harness's own files ------------------------------------------------------------------


def scenario_rules() -> set[str]:
    rules = set()
    for path in (ROOT / "scenarios").glob("test_*.py"):
        rules.update(re.findall(r'@pytest\.mark\.rule\("([A-Z0-9-]+)"\)', path.read_text()))
    return rules


def test_the_harness_has_files_for_verbs_and_loop_and_they_load():
    assert [path.name for path in IN_TREE] == ["loop.toml", "verbs.toml"]
    assert expectations.expectations_dir() is not None
    loaded = load_all(IN_TREE)
    assert {entry.key for entry in loaded.entries} == {
        "loop", "verbs", "verbs:rxe", "verbs:siw", "soft:tcp|verbs:siw", "verbs:siw|soft:tcp"}


def test_every_entry_names_rules_a_scenario_checks():
    known = scenario_rules()
    unknown = [(entry.source, pattern) for entry in load_all(IN_TREE).entries
               for pattern in entry.rules
               if not any(fnmatch.fnmatchcase(rule, pattern) for rule in known)]
    assert not unknown


def test_every_entry_has_its_evidence_in_the_semantics_doc():
    semantics = (ROOT / "docs" / "semantics.md").read_text()
    evidence = semantics[semantics.index("## Quirks of the verbs provider"):]
    for entry in load_all(IN_TREE).entries:
        assert "docs/semantics.md" in entry.evidence, entry.source
        for rule in entry.rules:
            assert f"`{rule}`" in evidence, f"{entry.source} {rule}: no entry in docs/semantics.md"
