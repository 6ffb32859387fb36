"""The ``ndk`` command line: ``ndk info``, ``ndk providers``, ``ndk rules``, ``ndk conformance``.

``ndk`` (the compiled API) is imported inside the commands, never at module level, so that
``ndk --help`` and argument errors do not depend on the extension loading.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import os
import signal
import sys
from typing import Any, Sequence


# --- ndk info ------------------------------------------------------------------------------


def info_fields(info: Any) -> list[tuple[str, Any]]:
    """The (name, value) pairs of an adapter info object, in declaration order where known.

    Accepts a named tuple (``_fields``), a dataclass, a plain object (``vars()``) or an object
    whose fields are class properties, as a pybind11 class exposes them.
    """
    if hasattr(info, "_fields"):
        return [(name, getattr(info, name)) for name in info._fields]
    if dataclasses.is_dataclass(info):
        return [(f.name, getattr(info, f.name)) for f in dataclasses.fields(info)]
    names = [name for name in getattr(info, "__dict__", {}) if not name.startswith("_")]
    if not names:
        # Properties in class definition order first (dir() would sort them), then the rest.
        for klass in type(info).__mro__:
            names += [n for n, v in vars(klass).items() if isinstance(v, property) and n not in names]
        names += sorted(n for n in dir(info) if n not in names)
    fields = []
    for name in names:
        if name.startswith("_"):
            continue
        value = getattr(info, name)
        if not callable(value):
            fields.append((name, value))
    return fields


def format_value(value: Any) -> str:
    """Show enum and flag values by name and number, everything else with str()."""
    if isinstance(value, enum.Enum) and isinstance(value, int):
        return f"{value.name} ({int(value):#x})" if value.name else f"{int(value):#x}"
    return str(value)


def format_info(info: Any) -> str:
    """An aligned "field: value" table of an adapter info object, indented by two spaces."""
    fields = info_fields(info)
    width = max((len(name) for name, _ in fields), default=0) + 1
    return "\n".join(f"  {name + ':':<{width}} {format_value(value)}" for name, value in fields)


def cmd_info(args: argparse.Namespace) -> int:
    """Show each provider's adapter info.

    Without ``--provider``, every registered provider is listed and one that cannot open an
    adapter here (verbs on a host without an RDMA device) is shown as not available, with the
    reason, without failing the command.  A provider named with ``--provider`` that cannot open
    fails it (exit 1), after the others are shown.
    """
    import ndk

    status = 0
    named = bool(args.providers)
    for provider in args.providers or ndk.providers():
        try:
            adapter = ndk.open_adapter(provider)
        except Exception as exc:  # report every provider, then fail if it was asked for
            if named:
                print(f"ndk info: cannot open provider {provider!r}: {exc}", file=sys.stderr)
                status = 1
            else:
                print(provider)
                print(f"  not available: {exc}")
            continue
        try:
            print(provider)
            print(format_info(adapter.query_info()))
        finally:
            adapter.close()
    return status


# --- ndk providers -------------------------------------------------------------------------


# What each built-in provider's spellings open (the registry: core/src/registry.cpp).
_SPELLINGS = {
    "soft": [("soft", "the reference provider: adapters of this process (transport=inproc)"),
             ("soft:shm", "soft between processes of this user on this host (transport=shm)"),
             ("soft:tcp", "soft over kernel TCP, speaking iWARP (transport=tcp): its addresses "
                          "must be this host's (docs/transport.md)")],
    "loop": [("loop", "the provider kit's example provider: an RNIC with no wire")],
    "verbs": [("verbs", "the verbs provider (libibverbs) on the host's first RDMA device")],
}
RDMA_DEVICES = "/sys/class/infiniband"  # the kernel's RDMA devices, as libibverbs finds them


def rdma_devices(folder: str = RDMA_DEVICES) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def provider_spellings(names: Sequence[str], devices: Sequence[str],
                       library: str | None = None) -> list[tuple[str, str]]:
    """(spelling, what it opens) for every way a user may name a provider: each registered
    provider's names (``soft:tcp``, ``verbs:DEVICE`` for the devices present), then a path."""
    rows: list[tuple[str, str]] = []
    for name in names:
        rows += _SPELLINGS.get(name, [(name, "")])
        if name == "verbs":
            rows += [(f"verbs:{device}", f"the verbs provider on the RDMA device {device}")
                     for device in devices]
            if not devices:
                rows.append(("verbs:DEVICE", "the verbs provider on that device (none here)"))
    example = library or "/path/to/libprovider.so"
    rows.append((example, "a provider library by its path (docs/adding-a-provider.md)"))
    return rows


def cmd_providers(args: argparse.Namespace) -> int:
    import ndk

    try:  # the soft provider's own library, as the example of a path
        from ._build_info import SOFT_PROVIDER_LIBRARY as library
    except ImportError:
        library = None
    rows = provider_spellings(ndk.providers(), rdma_devices(),
                              library if library and os.path.exists(library) else None)
    width = max(len(spelling) for spelling, _ in rows)
    for spelling, what in rows:
        print(f"{spelling:<{width}}  {what}".rstrip())
    return 0


# --- ndk rules -----------------------------------------------------------------------------


def cmd_rules(args: argparse.Namespace) -> int:
    import ndk
    from ndk._rules_doc import rules_markdown, rules_table

    rules = ndk.rules()
    if args.markdown:
        sys.stdout.write(rules_markdown(rules))
    else:
        print(rules_table(rules))
    return 0


# --- ndk conformance -----------------------------------------------------------------------

# Each scenario's time limit unless --timeout says otherwise: a provider that deadlocks is a
# TIMEOUT, not a run that never ends.  The slowest scenario on soft takes 5.5 s (measured,
# docs/scenarios.md); the limit leaves ten times that for slower providers and loaded machines.
DEFAULT_TIMEOUT = 60.0

def cmd_conformance(args: argparse.Namespace) -> int:
    from ndk import conformance

    return conformance.run(
        providers=args.providers or [],
        scenarios_dir=args.scenarios,
        junit=args.junit,
        keyword=args.keyword,
        extra_args=_plugin_args(args) + args.pytest_args,
        html=args.html,
        progress=args.progress,
        workers=args.workers,
        timeout=_timeout(args.timeout),
        strict=args.strict,
        expectations=args.expectations,
        rules=args.rules or (),
        json_path=args.json,
        baseline=args.baseline,
        fail_on_regression=args.fail_on_regression,
    )


def _plugin_args(args: argparse.Namespace) -> list[str]:
    """The pair options, passed through to the plugin as they are, and pytest's --lf / --ff."""
    passed = [("--ndk-peer", args.peer), ("--ndk-peer-provider", args.peer_provider)]
    passed += [("--ndk-option", option) for option in args.options or ()]
    words = [word for option, value in passed if value is not None for word in (option, value)]
    return words + [flag for flag, on in (("--lf", args.last_failed), ("--ff", args.failed_first))
                    if on]


def _timeout(seconds: float) -> float | None:
    return seconds or None  # --timeout 0: no limit


def _workers(text: str) -> str:
    if text == "auto" or (text.isdigit() and int(text) >= 0):
        return text
    raise argparse.ArgumentTypeError(f"{text!r}: a number of worker processes, or auto")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a time limit in seconds (0: none)")
    return value


# --- parsing -------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ndk`` command."""
    parser = argparse.ArgumentParser(prog="ndk", description="NDK provider harness.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    info = commands.add_parser("info", help="show each provider's adapter info")
    info.add_argument("--provider", dest="providers", action="append", metavar="P",
                      help="provider to show (repeatable; default: all registered)")
    info.set_defaults(handler=cmd_info)

    providers = commands.add_parser(
        "providers", help="list every provider spelling --provider takes, and what it opens")
    providers.set_defaults(handler=cmd_providers)

    rules = commands.add_parser(
        "rules", help="list the validation layer's rules (id, side, severity, digest section)")
    rules.add_argument("--markdown", action="store_true",
                       help="print docs/validation.md (the introduction and the rule table)")
    rules.set_defaults(handler=cmd_rules)

    conformance = commands.add_parser(
        "conformance",
        help="run the conformance scenarios and print the rules x providers matrix",
        usage="ndk conformance [options] [-- PYTEST_ARGS...]",
    )
    conformance.add_argument("--provider", dest="providers", action="append", metavar="P",
                             help="provider name or library path (repeatable; default: soft)")
    conformance.add_argument("--junit", metavar="FILE", help="write JUnit XML to FILE")
    conformance.add_argument("--html", metavar="FILE",
                             help="write a self-contained HTML report to FILE")
    conformance.add_argument("--scenarios", metavar="DIR", help="scenarios directory")
    conformance.add_argument("-k", dest="keyword", metavar="EXPR",
                             help="only scenarios matching the pytest -k expression")
    conformance.add_argument("--progress", choices=("auto", "live", "plain", "off"), default="auto",
                             help="progress display: live (rich, on a terminal), plain (a line "
                                  "per rule family finished), off; auto: live on a terminal, "
                                  "else plain")
    conformance.add_argument("-n", dest="workers", type=_workers, metavar="N",
                             help="run the scenarios in N worker processes (pytest-xdist; "
                                  "auto: one per CPU); a worker that crashes fails its "
                                  "scenario and is replaced")
    conformance.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                             default=DEFAULT_TIMEOUT,
                             help="fail a scenario that runs longer as TIMEOUT (pytest-timeout, "
                                  "method signal), and go on; 0: no limit (default: "
                                  f"{DEFAULT_TIMEOUT:g}; docs/scenarios.md)")
    conformance.add_argument("--rule", dest="rules", action="append", metavar="ID",
                             help="only the scenarios of this rule: an ID (CQ-CREATE-DEPTH), a "
                                  "glob (CQ-*) or a family (CQ); repeatable")
    conformance.add_argument("--lf", "--last-failed", dest="last_failed", action="store_true",
                             help="rerun only the scenarios that failed last time (pytest's "
                                  "cache, in $XDG_CACHE_HOME/ndk-harness or ~/.cache/ndk-harness)")
    conformance.add_argument("--ff", "--failed-first", dest="failed_first", action="store_true",
                             help="run the scenarios that failed last time first, then the rest")
    conformance.add_argument("--json", metavar="FILE",
                             help="write every scenario and every rule x provider (outcome, "
                                  "duration, message, violations) as JSON to FILE "
                                  "(docs/report-json.md)")
    conformance.add_argument("--baseline", metavar="FILE",
                             help="a --json FILE of an earlier run: print the new failures, new "
                                  "passes and newly skipped scenarios since then")
    conformance.add_argument("--fail-on-regression", action="store_true",
                             help="with --baseline: exit 1 when a scenario fails that did not in "
                                  "the baseline, else 0 (the baseline's failures are known)")
    conformance.add_argument("--strict", action="store_true",
                             help="fail on scenarios that differ from a reference choice "
                                  "(docs/semantics.md: where NDK is silent), not only report "
                                  "them")
    conformance.add_argument("--expectations", action="append", metavar="FILE",
                             help="an expectations file (TOML, docs/expectations.md): the "
                                  "providers' known differences (skip, xfail, differs per "
                                  "rule or glob); repeatable; replaces the harness's own file "
                                  "for each provider (share/ndk-harness/expectations/)")
    conformance.add_argument("--ndk-peer", dest="peer", metavar="WHERE",
                             help="where the passive side of each pair scenario runs: local "
                                  "(default), popen, ssh=HOST, netns=NAME (docs/providers.md, "
                                  "'Running across hosts')")
    conformance.add_argument("--ndk-peer-provider", dest="peer_provider", metavar="P",
                             help="the provider of that passive side (default: --provider)")
    conformance.add_argument("--ndk-option", dest="options", action="append",
                             metavar="KEY=VALUE",
                             help="an option (knob) for every adapter the scenarios' fixtures "
                                  "open, e.g. transport=shm (repeatable)")
    conformance.set_defaults(handler=cmd_conformance)

    try:
        from . import perf  # no compiled code: the timing runs in the ndk_perf helper
    except ImportError:  # cli.py loaded on its own, outside the package: no perf command
        return parser
    perf_parser = commands.add_parser(
        "perf", help="perftest-style latency / bandwidth / message-rate / poll-rate runs")
    perf.add_arguments(perf_parser)
    perf_parser.set_defaults(handler=perf.main_from_args)
    from . import walk  # no compiled code: the walk runs in the ndk_walk helper
    walk_parser = commands.add_parser("walk", help="random walk over every NDK function, validated")
    walk.add_arguments(walk_parser)
    walk_parser.set_defaults(handler=walk.main_from_args)
    return parser


def _version() -> str:
    try:
        from . import __version__
    except ImportError:  # cli.py loaded on its own, outside the package
        return "(version unknown)"
    return __version__


def _complete(parser: argparse.ArgumentParser) -> None:
    """Answer the shell's completion request, if this run is one, and exit.

    The bash completion script (register-python-argcomplete's, installed by the .deb) runs
    ``ndk`` with ``_ARGCOMPLETE`` set; python3-argcomplete completes from the parser.  Without
    python3-argcomplete there is no completion, and the command must not run either.
    """
    if "_ARGCOMPLETE" not in os.environ:
        return
    try:
        import argcomplete
    except ImportError:
        sys.exit(1)
    argcomplete.autocomplete(parser)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ndk`` command line; return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after "--" goes to pytest untouched; argparse would try to parse it.
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    parser = build_parser()
    _complete(parser)
    args = parser.parse_args(argv)
    if extra and args.command != "conformance":
        parser.error(f"'--' arguments are only for 'conformance', not {args.command!r}")
    args.pytest_args = extra
    try:
        code = args.handler(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit flush
        return code
    except BrokenPipeError:
        return _reader_went_away()


def _reader_went_away() -> int:
    """The reader of stdout closed it (``ndk info | head -1``): stop quietly, as a program that
    SIGPIPE kills does, and exit 141 (128 + SIGPIPE), the status a shell shows for one."""
    try:  # the interpreter flushes stdout again at exit: point it at /dev/null first
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real file descriptor behind sys.stdout
        pass
    return 128 + signal.SIGPIPE
