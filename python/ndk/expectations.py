"""Expectations files: a provider's known differences from the conformance rules, as data.

A scenario checks one rule for every provider and never asks which provider it runs on.  Where
a provider cannot follow a rule, or is known to fail it, the provider's team writes that down
in an expectations file (TOML, docs/expectations.md), the way libfabric's fabtests keep a
provider's exclusions in ``test_configs/<prov>/<prov>.exclude``::

    format = 1
    provider = "verbs:siw"          # the default for the entries below

    [[skip]]
    rules = ["MW-*", "BIND-TWICE"]
    reason = "siw implements no memory windows (ibv_alloc_mw fails with EOPNOTSUPP)"
    evidence = "docs/semantics.md, Quirks of the verbs provider; the verbs lane"

Each entry is ``[[skip]]`` (the scenario does not run), ``[[xfail]]`` (it runs and is expected
to fail; a pass is reported as XPASS, so a stale entry surfaces) or ``[[differs]]`` (a
reference-choice scenario, ``@pytest.mark.reference``, runs and is expected to differ from the
reference provider's choice).  It names rule IDs or globs (``CQ-*``), the reason, and the
evidence; and either a ``provider`` key or, for a pair scenario whose two sides are two
providers, ``active`` and ``passive``.

A provider key is looked up from the most specific to the least (:func:`keys`): ``verbs:siw0``
as itself, then ``verbs:siw`` (the device kind), then ``verbs``; a library given by path,
``.../libndk_NAME_provider.so``, as itself then ``NAME``.  Within one key an exact rule ID wins
over a glob, and among globs the entry read first.

This module only reads and validates files (:func:`load`) and answers lookups
(:meth:`Expectations.lookup`); the ``ndk.testing`` plugin applies them to the scenarios, and
the installed files (``share/ndk-harness/expectations/NAME.toml``) are found by provider name
(:func:`default_files`).
"""

from __future__ import annotations

import fnmatch
import importlib
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

FORMAT = 1
SKIP, XFAIL, DIFFERS = "skip", "xfail", "differs"
ACTIONS = (SKIP, XFAIL, DIFFERS)
PAIR_SEPARATOR = "|"

_TOP_KEYS = {"format", "provider", *ACTIONS}
_ENTRY_KEYS = {"provider", "active", "passive", "rules", "reason", "evidence"}
# A rule ID (CQ-CREATE-DEPTH) or a glob of them (CQ-*, MR-FRMR-?, [AB]-X).
_RULE_PATTERN = re.compile(r"[A-Z0-9*?\[\]!][A-Z0-9*?\[\]!-]*")
_GLOB_CHARS = frozenset("*?[")
_HEADER = re.compile(r"^\s*\[\[?\s*([^\]\s]+)\s*\]\]?")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\"'.-]+)\s*=")
_TOML_LINE = re.compile(r"\(at line (\d+), column \d+\)")


class ExpectationsError(Exception):
    """An expectations file that cannot be read or does not follow the format; its text names
    the file and the line (``path:line: what is wrong``)."""

    def __init__(self, path: str | os.PathLike, line: int | None, message: str) -> None:
        self.path, self.line, self.message = str(path), line, message
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Expectation:
    """One entry: what ``key`` (a provider key or ``ACTIVE|PASSIVE``) is expected to do on
    ``rules`` (IDs or globs), why, and what says so; ``source`` is ``path:line``."""

    action: str
    key: str
    rules: tuple[str, ...]
    reason: str
    evidence: str
    source: str

    def matches(self, rule: str) -> str | None:
        """The first of this entry's patterns that ``rule`` matches, or None."""
        return next((pattern for pattern in self.rules
                     if fnmatch.fnmatchcase(rule, pattern)), None)

    def describe(self, who: str) -> str:
        """The reason as a report shows it: ``skip for verbs:siw0 (verbs.toml:12): ...``."""
        return f"{self.action} for {who} ({self.source}): {self.reason}"


def pair_key(active: str, passive: str) -> str:
    """The key of a pair of providers: ``soft:tcp|verbs:siw0`` (``active`` connects,
    ``passive`` accepts)."""
    return f"{active}{PAIR_SEPARATOR}{passive}"


_LIBRARY = re.compile(r"(?:.*/)?libndk_(\w+)_provider\.so")


def keys(provider: str, peer: str | None = None) -> list[str]:
    """The keys that apply to ``provider``, most specific first.

    ``verbs:siw0`` (the verbs provider on RDMA device siw0) is looked up as itself, then as
    ``verbs:siw`` (every siw device: the device kind is the name without its trailing number),
    then as ``verbs`` (every device).  A provider library given by path,
    ``.../libndk_NAME_provider.so``, is looked up as itself, then as ``NAME``.

    With ``peer``, the provider of a pair scenario's passive side when it is not ``provider``,
    the keys are the pair's: each key of ``provider`` with each key of ``peer``
    (``soft:tcp|verbs:siw0``, ``soft:tcp|verbs:siw``, ``soft:tcp|verbs``); the providers' own
    keys do not apply (they say what two adapters of one provider do).
    """
    if peer is not None and peer != provider:
        return [pair_key(active, passive) for active in keys(provider) for passive in keys(peer)]
    found = [provider]
    library = _LIBRARY.fullmatch(provider)
    if library is not None:
        found.append(library.group(1))
    if provider.startswith("verbs:"):
        kind = provider.rstrip("0123456789")
        if kind != provider and kind != "verbs:":
            found.append(kind)
        found.append("verbs")
    return found


@dataclass
class Expectations:
    """The entries of one or more files, in the order they were read."""

    entries: list[Expectation] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def lookup(self, provider: str | None, rule: str | None,
               peer: str | None = None) -> Expectation | None:
        """The entry that applies to ``rule`` on ``provider`` (with ``peer``: on that pair), or
        None: the most specific key first, then an exact rule ID before a glob, then the entry
        read first."""
        if provider is None or rule is None:
            return None
        for key in keys(provider, peer):
            candidates = [entry for entry in self.entries if entry.key == key]
            exact = next((e for e in candidates if rule in e.rules), None)
            if exact is not None:
                return exact
            glob = next((e for e in candidates if e.matches(rule) is not None), None)
            if glob is not None:
                return glob
        return None

    def extend(self, other: Expectations) -> None:
        """Add ``other``'s entries after these; the same rule ID named for the same key by two
        entries is an error (which one holds would depend on the order of the files)."""
        seen = {(entry.key, rule): entry for entry in self.entries
                for rule in entry.rules if not _is_glob(rule)}
        for entry in other.entries:
            for rule in entry.rules:
                first = seen.get((entry.key, rule))
                if first is not None and not _is_glob(rule):
                    path, _, line = entry.source.rpartition(":")
                    raise ExpectationsError(path, int(line), (
                        f"{rule} for {entry.key} already has an entry at {first.source}"))
                seen[(entry.key, rule)] = entry
        self.entries += other.entries
        self.files += other.files


def _is_glob(rule: str) -> bool:
    return any(char in _GLOB_CHARS for char in rule)


class _Lines:
    """Where things are in a TOML file's text, for error messages (tomllib gives no
    positions): the line of the n-th ``[[action]]`` header and of a key under a header."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()

    def header(self, name: str, index: int) -> int | None:
        seen = 0
        for number, line in enumerate(self.lines, 1):
            match = _HEADER.match(line)
            if match and match.group(1) == name:
                if seen == index:
                    return number
                seen += 1
        return None

    def key(self, name: str, after: int | None = None) -> int | None:
        """The line of ``name = ...`` in the table that starts at line ``after`` (None: before
        the first header), or None."""
        for number, line in enumerate(self.lines[after or 0:], (after or 0) + 1):
            if _HEADER.match(line):
                break
            match = _KEY.match(line)
            if match and match.group(1).strip("\"'") == name:
                return number
        return after


def load(path: str | os.PathLike) -> Expectations:
    """Read and validate one expectations file; raise :class:`ExpectationsError` naming the
    file and line of the first problem (an unreadable file, bad TOML, an unknown key or
    action, a missing or mistyped field)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ExpectationsError(path, None, f"cannot read: {getattr(exc, 'strerror', None) or exc}")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = _TOML_LINE.search(str(exc))
        raise ExpectationsError(path, int(line.group(1)) if line else None,
                                f"not valid TOML: {_TOML_LINE.sub('', str(exc)).strip()}")
    return _parse(path, data, _Lines(text))


def _parse(path: str | os.PathLike, data: dict[str, Any], lines: _Lines) -> Expectations:
    def fail(line: int | None, message: str) -> ExpectationsError:
        return ExpectationsError(path, line, message)

    for name in data:
        if name not in _TOP_KEYS:
            line = lines.header(name, 0) or lines.key(name)
            raise fail(line, f"unknown key {name!r} (expected format, provider, or entries "
                             f"[[skip]], [[xfail]], [[differs]])")
    if data.get("format") != FORMAT:
        raise fail(lines.key("format"), f"format = {FORMAT} is required (this harness reads "
                                        f"format {FORMAT}), got {data.get('format')!r}")
    default = data.get("provider")
    if default is not None:
        _check_name(default, "provider", lambda m: fail(lines.key("provider"), m))
    expectations = Expectations(files=[str(path)])
    for action in ACTIONS:
        tables = data.get(action, [])
        if not isinstance(tables, list):
            raise fail(lines.header(action, 0) or lines.key(action),
                       f"{action} must be a list of tables: write [[{action}]]")
        for index, table in enumerate(tables):
            line = lines.header(action, index) or lines.key(action)
            if not isinstance(table, dict):
                raise fail(line, f"{action} must be a list of tables: write [[{action}]]")
            expectations.entries.append(_entry(path, action, table, default, lines, line))
    return expectations


def _entry(path: str | os.PathLike, action: str, table: dict[str, Any], default: str | None,
           lines: _Lines, start: int | None) -> Expectation:
    def fail(name: str | None, message: str) -> ExpectationsError:
        return ExpectationsError(path, lines.key(name, start) if name else start, message)

    for name in table:
        if name not in _ENTRY_KEYS:
            raise fail(name, f"unknown key {name!r} in [[{action}]] (expected "
                             f"{', '.join(sorted(_ENTRY_KEYS))})")
    pair = [name for name in ("active", "passive") if name in table]
    if pair and "provider" in table:
        raise fail("provider", f"[[{action}]] names a provider and a pair (active, passive): "
                               "one or the other")
    if pair:
        if len(pair) != 2:
            missing = ({"active", "passive"} - set(pair)).pop()
            raise fail(pair[0], f"[[{action}]] has {pair[0]} but no {missing}: a pair needs both")
        for name in pair:
            _check_name(table[name], name, lambda m, n=name: fail(n, m))
        key = pair_key(table["active"], table["passive"])
    else:
        key = table.get("provider", default)
        if key is None:
            raise fail(None, f"[[{action}]] names no provider: give provider = \"NAME\" (here "
                             "or at the top of the file) or active and passive")
        _check_name(key, "provider", lambda m: fail("provider", m))
    rules = table.get("rules")
    if (not isinstance(rules, list) or not rules
            or not all(isinstance(rule, str) for rule in rules)):
        raise fail("rules" if "rules" in table else None,
                   f"[[{action}]] needs rules = [\"RULE-ID\", \"FAMILY-*\", ...] (a non-empty "
                   "list of rule IDs or globs)")
    for rule in rules:
        if not _RULE_PATTERN.fullmatch(rule):
            raise fail("rules", f"{rule!r} is not a rule ID or a glob of them (upper case, "
                                "digits and '-', with * ? [ ])")
    for name in ("reason", "evidence"):
        value = table.get(name)
        if not isinstance(value, str) or not value.strip():
            raise fail(name if name in table else None,
                       f"[[{action}]] needs {name} = \"...\" (a non-empty string: "
                       + ("why the provider differs)" if name == "reason" else
                          "where it was seen, or what says so)"))
    return Expectation(action=action, key=key, rules=tuple(rules), reason=table["reason"].strip(),
                       evidence=table["evidence"].strip(), source=f"{path}:{start}")


def _check_name(value: Any, name: str, fail: Any) -> None:
    if not isinstance(value, str) or not value or any(c.isspace() for c in value) \
            or PAIR_SEPARATOR in value:
        raise fail(f"{name} must be a provider name (soft, verbs:siw, a library path), got "
                   f"{value!r}" + (": give a pair as active and passive"
                                   if isinstance(value, str) and PAIR_SEPARATOR in value else ""))


def load_all(paths: Iterable[str | os.PathLike]) -> Expectations:
    """Read every file, in order, into one set (see :meth:`Expectations.extend`)."""
    merged = Expectations()
    for path in paths:
        merged.extend(load(path))
    return merged


# --- the installed files ---------------------------------------------------------------------


def expectations_dir() -> Path | None:
    """The folder of the harness's own expectations files: the build's
    ``ndk._build_info.EXPECTATIONS_DIR`` (the source tree's ``python/expectations/``, or the
    installed ``share/ndk-harness/expectations``), else ``expectations/`` beside this package's
    source (``python/expectations/``)."""
    try:
        build_info = importlib.import_module("ndk._build_info")
    except ModuleNotFoundError as exc:
        if exc.name != "ndk._build_info":
            raise
        build_info = None
    built = getattr(build_info, "EXPECTATIONS_DIR", None)
    if built and Path(built).is_dir():
        return Path(built)
    source = Path(__file__).resolve().parent.parent / "expectations"
    return source if source.is_dir() else None


def file_name(provider: str) -> str | None:
    """The name of the file that holds ``provider``'s expectations: the provider's name
    before any ``:`` (``verbs:siw0`` -> ``verbs.toml``, ``soft:tcp`` -> ``soft.toml``), or the
    NAME of a library ``libndk_NAME_provider.so``; None for another library path."""
    library = _LIBRARY.fullmatch(provider)
    if library is not None:
        return f"{library.group(1)}.toml"
    if "/" in provider or provider.endswith(".so"):
        return None
    return f"{provider.split(':', 1)[0]}.toml"


def default_files(providers: Sequence[str], directory: Path | None = None) -> list[Path]:
    """The harness's files for ``providers`` (the run's providers and their pair peers), in
    order, each once: those of :func:`expectations_dir` that exist."""
    directory = directory if directory is not None else expectations_dir()
    if directory is None:
        return []
    names = dict.fromkeys(name for name in map(file_name, providers) if name is not None)
    return [directory / name for name in names if (directory / name).is_file()]
