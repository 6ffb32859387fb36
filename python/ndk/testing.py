"""pytest plugin for NDK conformance scenarios.

Load it from a conftest with ``pytest_plugins = ["ndk.testing"]`` (or through the ``pytest11``
entry point, which must then be *named* ``ndk.testing`` so that pytest sees one plugin, not two).

What it provides:

* ``--ndk-provider NAME`` (repeatable, default ``soft``): every test that uses the
  ``ndk_provider`` fixture, directly or through ``open_adapter``/``adapter``/``pd``/``cq``,
  runs once per provider, with the provider name as the test id.
* markers ``rule(ID)`` (the conformance rule a scenario checks) and ``digest(SECTION)``;
  ``--ndk-rule ID`` (repeatable: an ID, a glob such as ``CQ-*``, or a family such as ``CQ``)
  runs only the scenarios of those rules.
* the validation layer (docs/validation.md), on by default: ``--ndk-validate`` /
  ``--ndk-no-validate`` set what ``ndk.open_adapter`` does without ``validate=``.  Every
  validated adapter a test opens (through the fixtures or ``ndk.open_adapter``) is watched;
  after the test's teardown, an error-severity violation fails the test (in its teardown phase)
  unless the test declares its rule with ``@pytest.mark.expect_violation("RULE-ID", ...)``,
  and a declared rule that was not reported fails it too.  Warnings never fail.  Every
  violation goes into the report's ``user_properties`` (``ndk conformance`` counts them).
  Tests with ``expect_violation`` are skipped under ``--ndk-no-validate``.
* ``ndk.testing.raw``: raw NDK calls for scenarios that break a consumer rule on purpose.
* fixtures ``ndk_provider``, ``open_adapter``, ``adapter``, ``pd``, ``cq``, ``buffer``, ``mr``
  (registered over ``buffer``), ``qp`` (on ``pd`` and ``cq``), and ``pair``: two
  connected endpoints whose passive side runs where ``--ndk-peer`` puts it (local, popen,
  ssh=HOST, netns=NAME; ``ndk._pairs``, ``ndk._peer``), ``ndk_peer``: that peer interpreter.
* ``--ndk-option KEY=VALUE``: knobs for every adapter the fixtures open (e.g. transport=shm).
* ``requires(adapter, **minimums)``: skip unless the adapter reports enough capability.
* ``connect_pair(client, server)``: two connected QPs (``ndk._connect``), for data-path
  scenarios; also reachable as ``ndk.testing.connect_pair`` after a plain ``import ndk``.
* expectations files (``--ndk-expectations FILE``, repeatable; by default the harness's own
  file for each provider, :mod:`ndk.expectations`, docs/expectations.md): per provider and
  rule (a pair scenario whose passive side is another provider's, per pair), a ``skip``, an
  expected failure (``xfail``; a pass is reported as XPASS) or an expected difference from a
  reference choice (``differs``).
* every skip says its kind (:mod:`ndk._skips`: capability, expectation, knob, option,
  environment) at the start of its reason; ``skip(kind, why)`` skips with one.
* ``--ndk-provider-setup CMD`` (or ``$NDK_PROVIDER_SETUP``): the tests run grouped by provider,
  and ``CMD PROVIDER`` runs before the first test of each provider's group.  The VM lane uses it
  to put the scenarios' addresses on the RDMA device under test (tests/vm/give-addresses.sh), so
  one run, and one matrix, covers several devices.

The ``ndk`` API itself is imported inside the fixtures only: this module is pure pytest glue,
and importing it must not need the compiled extension.  The extension is loaded when a test
uses the fixtures (a test errors with one line when it cannot load) or the run is given an
``--ndk-*`` option (a usage error then); a pytest run that uses neither never loads it, so an
installed package whose extension is broken cannot break unrelated test suites.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shlex
import subprocess
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol

import pytest

from . import _cache, _pairs
# Re-exported ("as" marks them public for type checkers: mypy --strict on a user's scenario).
from ._connect import Endpoint as Endpoint, connect_pair as connect_pair
from ._pairs import Pair as Pair, new_buffer as new_buffer
from ._pairs import _ndk_peer_keeper, ndk_peer  # noqa: F401  (fixtures of the plugin)
from ._isolation import Isolation
from ._report import (EXPECTATION_PROPERTY, PEER_PROVIDER_PROPERTY, STATED_PROPERTY,
                      VIOLATION_PROPERTY, ViolationRecord)
from ._selection import (OPTION_DEST, RULE_DEST, provider_of, reference_of, rule_of,
                         rule_selected, selected_providers)
from ._skips import has_kind, skip_reason
# The kinds of skip, for skip(kind, why) in scenarios (re-exported).
from ._skips import CAPABILITY as CAPABILITY, ENVIRONMENT as ENVIRONMENT
from ._skips import EXPECTATION as EXPECTATION, KNOB as KNOB, OPTION as OPTION
from .expectations import (DIFFERS, SKIP, Expectations, ExpectationsError, default_files,
                           load_all, pair_key)

if TYPE_CHECKING:
    import ndk

VALIDATE_DEST = "ndk_validate"
SETUP_DEST = "ndk_provider_setup"
SETUP_ENV = "NDK_PROVIDER_SETUP"
EXPECT_VIOLATION = "expect_violation"
EXPECTATIONS_DEST = "ndk_expectations"
_EXPECTATIONS = pytest.StashKey[Expectations]()
_VALIDATION_PLUGIN = "ndk.testing.validation"
_ISOLATION_PLUGIN = "ndk.testing.isolation"
_PEER_WATCH_PLUGIN = "ndk.testing.peers"


# The scenarios' helpers (ndk.scenario) assert with pytest's detailed messages too; registered
# here, before any scenario imports them.
pytest.register_assert_rewrite("ndk.scenario")


def __getattr__(name: str) -> Any:
    # ndk.testing.raw is the binding's submodule: imported on first use, so that importing this
    # plugin never needs the compiled extension.
    if name == "raw":
        from . import _core

        return _core.raw
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- options and markers -------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ndk", "NDK conformance")
    group.addoption(
        "--ndk-provider",
        action="append",
        dest=OPTION_DEST,
        default=None,  # None, not ["soft"]: with append, a list default would be appended to
        metavar="NAME",
        help="NDK provider to run the scenarios against (name or path to a provider "
        "library); repeat for several. Default: soft.",
    )
    group.addoption(
        "--ndk-validate",
        action="store_true",
        dest=VALIDATE_DEST,
        default=True,
        help="open adapters through the validation layer unless a test says otherwise, and "
        "fail a test that leaves an undeclared violation (the default).",
    )
    group.addoption(
        "--ndk-no-validate",
        action="store_false",
        dest=VALIDATE_DEST,
        default=True,
        help="open adapters without the validation layer by default (tests marked "
        "expect_violation are then skipped).",
    )
    group.addoption(
        "--ndk-provider-setup",
        dest=SETUP_DEST,
        default=os.environ.get(SETUP_ENV) or None,
        metavar="CMD",
        help="run the tests grouped by provider, and 'CMD PROVIDER' (a shell command) before "
        f"the first test of each provider; a failure errors that provider's tests. Default: ${SETUP_ENV}.",
    )
    group.addoption(
        "--ndk-expectations",
        action="append",
        dest=EXPECTATIONS_DEST,
        default=None,
        metavar="FILE",
        help="an expectations file (TOML, docs/expectations.md): the providers' known "
        "differences, skipped, expected to fail or to differ; repeatable. Default: the "
        "harness's own file for each provider, when it has one.",
    )
    group.addoption(
        "--ndk-rule",
        action="append",
        dest=RULE_DEST,
        default=None,
        metavar="ID",
        help="only the scenarios of this rule (their @pytest.mark.rule): an ID "
        "(CQ-CREATE-DEPTH), a glob (CQ-*) or a family (CQ); repeat for several.",
    )
    _pairs.add_options(group)


def skip(kind: str, why: str) -> None:
    """Skip the current test with a reason of ``kind`` (``ndk._skips``: capability,
    expectation, knob, option, environment)."""
    pytest.skip(skip_reason(kind, why))


def expectations_of(config: pytest.Config) -> Expectations:
    """The expectations this run applies: the ``--ndk-expectations`` files, in order, or
    without any the harness's own files for the run's providers and pair peers."""
    given = config.getoption(EXPECTATIONS_DEST, default=None)
    if given is None:
        providers = selected_providers(config)
        given = default_files(providers + [_pairs.peer_provider(config, p) for p in providers])
    return load_all(given)


@pytest.hookimpl(tryfirst=True)  # before pytest's cacheprovider opens the cache
def pytest_configure(config: pytest.Config) -> None:
    _keep_cache_out_of_foreign_folders(config)
    config.addinivalue_line(
        "markers", "rule(id): the conformance rule this scenario checks, e.g. CQ-CREATE-DEPTH"
    )
    config.addinivalue_line(
        "markers", "digest(section): the section of spec/ndkpi.md the rule comes from"
    )
    config.addinivalue_line(
        "markers",
        "reference(semantics_id): the scenario's expectation is the reference provider's "
        "choice where NDK is silent, recorded in docs/semantics.md under that ID (conformance "
        "level 'reference choice'; without it, 'required')",
    )
    config.addinivalue_line(
        "markers",
        "expect_violation(*rule_ids): the validation layer rules this test breaks (or makes the "
        "provider break) on purpose; each must be reported, and no other error may be",
    )
    if not config.pluginmanager.has_plugin(_VALIDATION_PLUGIN):
        config.pluginmanager.register(ValidationWatch(config), _VALIDATION_PLUGIN)
    if not config.pluginmanager.has_plugin(_ISOLATION_PLUGIN):
        config.pluginmanager.register(Isolation(config), _ISOLATION_PLUGIN)
    config.addinivalue_line(
        "markers",
        "pair(client_knobs=None, server_knobs=None, **connect_pair_keywords): how the 'pair' "
        "fixture opens and connects its adapters")
    _pairs.check_options(config)
    try:
        config.stash[_EXPECTATIONS] = expectations_of(config)
    except ExpectationsError as error:
        raise pytest.UsageError(f"--ndk-expectations: {error}") from None
    if not config.pluginmanager.has_plugin(_PEER_WATCH_PLUGIN):
        config.pluginmanager.register(_pairs.PeerWatch(), _PEER_WATCH_PLUGIN)
    used = _options_used(config)
    if used:
        try:
            _ndk_api()
        except ImportError as error:
            raise pytest.UsageError(f"{used[0]}: {error}") from None
    if config.getoption(SETUP_DEST, default=None) and _distributed(config):
        raise pytest.UsageError(
            f"--ndk-provider-setup (or ${SETUP_ENV}) runs the providers one after another, each "
            "after its setup command changed the machine for it: it cannot run with -n / "
            "pytest-xdist, where several providers' tests would run at once; run it without -n")


def _keep_cache_out_of_foreign_folders(config: pytest.Config) -> None:
    """pytest's cache (``.pytest_cache`` under the rootdir) goes to the user's cache folder when
    the rootdir is not the user's, such as the installed /usr/share/ndk-harness/scenarios
    (``ndk._cache``); a ``cache_dir`` the run sets (ini file, ``-o``) stays."""
    overrides = config.getoption("override_ini", default=None) or ()
    if "cache_dir" in config.inicfg or any(o.startswith("cache_dir=") for o in overrides):
        return
    if _cache.foreign(config.rootpath):
        config.inicfg["cache_dir"] = str(_cache.user_cache_dir())


def _ndk_api() -> Any:
    """The ``ndk`` package with its compiled extension loaded; ImportError (one line, saying
    what to do) when the extension does not load."""
    import ndk

    ndk._compiled()
    return ndk


def _options_used(config: pytest.Config) -> list[str]:
    return [arg.split("=", 1)[0] for arg in config.invocation_params.args
            if isinstance(arg, str) and arg.startswith("--ndk-")]


def _distributed(config: pytest.Config) -> bool:
    """The run spreads its tests over pytest-xdist workers (this process is the controller or
    one of them)."""
    if hasattr(config, "workerinput"):
        return True
    numprocesses = config.getoption("numprocesses", default=None)
    return bool(numprocesses) and config.getoption("dist", default="no") != "no"


def _check_rule_marker(item: pytest.Item) -> None:
    # A malformed marker would silently drop the scenario into "(unmarked)"; fail loudly instead.
    marker = item.get_closest_marker("rule")
    if marker is None:
        return
    if len(marker.args) != 1 or not isinstance(marker.args[0], str) or marker.kwargs:
        raise pytest.UsageError(
            f"{item.nodeid}: use @pytest.mark.rule(\"RULE-ID\") with exactly one string, "
            f"got rule{marker.args!r}"
        )


# --- parametrization and expectations -----------------------------------------------------


def _parametrizes_provider_itself(metafunc: pytest.Metafunc) -> bool:
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0] if marker.args else marker.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = [name.strip() for name in names.split(",")]
        if "ndk_provider" in names:
            return True
    return False


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "ndk_provider" not in metafunc.fixturenames or _parametrizes_provider_itself(metafunc):
        return
    providers = selected_providers(metafunc.config)
    # indirect: the parameter goes through the session-scoped ndk_provider fixture, so pytest
    # groups the run by provider and broader-scoped fixtures may depend on the provider.
    metafunc.parametrize("ndk_provider", providers, ids=providers, indirect=True)


def _select_rules(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep only the scenarios of the ``--ndk-rule`` patterns (deselected, as ``-k`` does)."""
    patterns = config.getoption(RULE_DEST, default=None)
    if not patterns:
        return
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        (kept if rule_selected(rule_of(item), patterns) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _select_rules(config, items)
    _check_expect_violation_markers(config, items)
    if config.getoption(SETUP_DEST, default=None):
        # One group per provider, in --ndk-provider order (a stable sort keeps the rest), so
        # that the setup command runs once per provider.
        order = {name: index for index, name in enumerate(selected_providers(config))}
        items.sort(key=lambda item: order.get(provider_of(item) or "", -1))
    expectations = config.stash.get(_EXPECTATIONS, None) or Expectations()
    for item in items:
        _check_rule_marker(item)
        _apply_expectation(config, item, expectations)


def _apply_expectation(config: pytest.Config, item: pytest.Item,
                       expectations: Expectations) -> None:
    provider = provider_of(item)
    peer = _other_peer_provider(config, item, provider)
    entry = expectations.lookup(provider, rule_of(item), peer)
    if entry is None or provider is None:
        return
    if entry.action == DIFFERS and reference_of(item) is None:
        raise pytest.UsageError(
            f"--ndk-expectations: {entry.source}: [[differs]] names {rule_of(item)}, whose "
            f"scenario {item.nodeid} checks a required rule (NDK states it): only a "
            "reference-choice scenario (@pytest.mark.reference) can differ; use [[xfail]]")
    item.user_properties.append((EXPECTATION_PROPERTY, entry.action))
    text = entry.describe(pair_key(provider, peer) if peer is not None else provider)
    if entry.action == SKIP:
        # A skip marker (not pytest.skip at run time) so that no fixture is set up for a
        # scenario the provider is known not to satisfy.
        item.add_marker(pytest.mark.skip(reason=skip_reason(EXPECTATION, text)))
    else:
        # Still run: an expected failure or difference stays visible, and a fix shows up as
        # XPASS.
        item.add_marker(pytest.mark.xfail(reason=f"{EXPECTATION}: {text}", strict=False))


def _other_peer_provider(config: pytest.Config, item: pytest.Item,
                         provider: str | None) -> str | None:
    """The provider of a pair scenario's passive side (--ndk-peer-provider) when it is not the
    scenario's own, else None: such a scenario is judged as that pair (ndk.expectations)."""
    if provider is None or "pair" not in getattr(item, "fixturenames", ()):
        return None
    peer = _pairs.peer_provider(config, provider)
    return peer if peer != provider else None


class _ProviderSetup:
    """Runs ``--ndk-provider-setup CMD PROVIDER`` when the tests move on to another provider."""

    def __init__(self) -> None:
        self.current: str | None = None
        self.failure: str | None = None

    def enter(self, command: str, provider: str) -> None:
        if provider != self.current:
            self.current = provider
            done = subprocess.run(f"{command} {shlex.quote(provider)}", shell=True,
                                  capture_output=True, text=True)
            self.failure = None if done.returncode == 0 else (
                f"provider setup '{command} {provider}' exited {done.returncode}: "
                f"{(done.stderr or done.stdout).strip()[-500:]}")
        if self.failure is not None:
            raise RuntimeError(self.failure)


_provider_setup = _ProviderSetup()


def pytest_sessionstart(session: pytest.Session) -> None:
    global _provider_setup
    _provider_setup = _ProviderSetup()  # a session starts with no provider set up
    _check_environment(session.config)


def _check_environment(config: pytest.Config) -> None:
    """A run that names its providers or knobs stops before collection, with one line, when a
    provider cannot run the scenarios here (``ndk._environment``); an xdist worker leaves it
    to the controller, and a run that names nothing loads nothing compiled for it."""
    if hasattr(config, "workerinput"):
        return
    if not any(config.getoption(dest, default=None)
               for dest in (OPTION_DEST, _pairs.OPTIONS_DEST, _pairs.PEER_PROVIDER_DEST)):
        return
    from . import _environment

    problem = _environment.config_problem(config)
    if problem:
        pytest.exit(f"ndk.testing: {problem}", returncode=_environment.EXIT_ENVIRONMENT)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    command = item.config.getoption(SETUP_DEST, default=None)
    provider = provider_of(item)
    if command and provider is not None:
        _provider_setup.enter(command, provider)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """A knob the provider does not have, set during the test (``adapter.knobs.fail(...)``),
    means the scenario cannot be set up on it: a skip of kind knob with the provider's words,
    as for a knob given to ``open_adapter`` -- not a failure.  A skip whose reason gives no
    kind (a scenario's own ``pytest.skip``) is a capability skip: the scenarios skip when the
    adapter reports it lacks what they need (docs/scenarios.md).  A failure of what NDK states
    inside a reference-choice scenario (``ndk.scenario.stated``) is marked so, for the runner
    to count it a failure, not a difference."""
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and report.when == "call":
        import ndk
        from ._stated import Stated

        if call.excinfo.errisinstance(Stated):
            report.user_properties.append((STATED_PROPERTY, True))
        if call.excinfo.errisinstance(ndk.KnobsNotSupported):
            entry = call.excinfo.traceback[-1]
            report.outcome = "skipped"
            report.longrepr = (str(entry.path), entry.lineno + 1,
                               f"Skipped: {skip_reason(KNOB, str(call.excinfo.value))}")
            return
    longrepr = report.longrepr
    if report.skipped and not hasattr(report, "wasxfail") and isinstance(longrepr, tuple) \
            and len(longrepr) == 3 and str(longrepr[2]).startswith("Skipped: "):
        why = str(longrepr[2])[len("Skipped: "):]
        if not has_kind(why):
            report.longrepr = (longrepr[0], longrepr[1],
                               f"Skipped: {skip_reason(CAPABILITY, why)}")


# --- reports between processes ---------------------------------------------------------------

# pytest-xdist sends each worker's reports to the controller as plain data (execnet serializes
# only builtin types): the violations in user_properties go as tagged tuples and come back as
# ViolationRecord, so that the runner's report and the controller's JUnit XML see them as in a
# serial run.
_VIOLATION_TAG = "ndk.ViolationRecord"


@pytest.hookimpl(hookwrapper=True)
def pytest_report_to_serializable(config: pytest.Config, report: Any) -> Any:
    outcome = yield
    data = outcome.get_result()
    if isinstance(data, dict) and data.get("user_properties"):
        data["user_properties"] = [
            (name, (_VIOLATION_TAG, dataclasses.asdict(value)))
            if isinstance(value, ViolationRecord) else (name, value)
            for name, value in data["user_properties"]]


@pytest.hookimpl(hookwrapper=True)
def pytest_report_from_serializable(config: pytest.Config, data: Any) -> Any:
    outcome = yield
    report = outcome.get_result()
    properties = getattr(report, "user_properties", None)
    if properties:
        report.user_properties = [
            (name, ViolationRecord(**value[1]))
            if isinstance(value, (tuple, list)) and len(value) == 2 and value[0] == _VIOLATION_TAG
            and isinstance(value[1], dict) else (name, value)
            for name, value in properties]


# --- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def ndk_provider(request: pytest.FixtureRequest) -> str:
    """The name of the provider this test runs against (one of ``--ndk-provider``).  Every
    fixture that opens an adapter depends on it: it loads the compiled extension, and errors
    the test with one line when it cannot."""
    why = None
    try:
        _ndk_api()
    except ImportError as error:
        why = str(error)
    if why is not None:  # failed outside the except clause: no chained traceback
        pytest.fail(why, pytrace=False)
    param = getattr(request, "param", None)
    if param is None:  # requested where pytest_generate_tests could not parametrize it
        param = selected_providers(request.config)[0]
    return param


def close_quietly(obj: Any) -> None:
    """Close an NDK object at teardown unless the scenario already closed it.

    A scenario may close what a fixture gave it (that is often what it tests); the second close
    then fails with ``ndk.NdkError`` or ``ValueError``, which is not the fixture's business.
    """
    if getattr(obj, "closed", False):
        return
    import ndk

    try:
        obj.close()
    except (ndk.NdkError, ValueError):
        pass


class OpenAdapter(Protocol):
    """The type of the ``open_adapter`` fixture, for annotating scenarios:
    ``def test_x(open_adapter: OpenAdapter) -> None``."""

    def __call__(self, **knobs: Any) -> ndk.Adapter: ...


def _addresses(value: Any) -> set[str]:
    """The addresses of an ``address=`` knob value ("a,b", or a list of them), normalized."""
    import ipaddress

    items = value.split(",") if isinstance(value, str) else list(value)
    return {str(ipaddress.ip_address(str(item).strip())) for item in items if str(item).strip()}


def _open_holding_address(provider: str, knobs: dict[str, Any]) -> Any:
    """``ndk.open_adapter(provider, **knobs)``; where the provider refuses a knob and the
    scenario set ``address=``, the address is a convenience (a scenario names its adapters by
    the addresses it connects to): the adapter opened without the knob serves when it holds
    every address asked for, as a device given the scenarios' addresses does
    (tests/vm/give-addresses.sh).  Otherwise ndk.KnobsNotSupported, the plugin's knob skip."""
    import ndk

    try:
        return ndk.open_adapter(provider, **knobs)
    except ndk.KnobsNotSupported:
        if "address" not in knobs:
            raise
    wanted = _addresses(knobs["address"])
    adapter = ndk.open_adapter(provider, **{k: v for k, v in knobs.items() if k != "address"})
    held = _addresses(adapter.addresses or [])
    if not wanted <= held:
        adapter.close()
        raise ndk.KnobsNotSupported(
            f"provider {provider!r} takes no knob 'address', and its adapter does not hold "
            f"{', '.join(sorted(wanted - held))} (it holds {', '.join(sorted(held)) or 'none'})")
    return adapter


class _Opener:
    """Opens adapters for one test and closes them at its teardown; what ``open_adapter`` and
    the ``pair`` fixture share.  The run's ``--ndk-option`` knobs come first, the test's own
    override them."""

    def __init__(self, config: pytest.Config) -> None:
        self.options = _pairs.run_options(config)
        self.opened: list[Any] = []

    def open(self, provider: str, **knobs: Any) -> Any:
        import ndk

        knobs = _pairs.with_run_knobs(provider, {**self.options, **knobs})
        validate = knobs.get("validate")
        if not (ndk.validate_default() if validate is None else validate):
            # The layer's own options mean nothing without it (--ndk-no-validate).
            knobs = {key: value for key, value in knobs.items() if not key.startswith("validate_")}
        names = sorted(key for key in knobs if key not in ("validate", "version"))
        try:
            adapter = _open_holding_address(provider, knobs)
        except ndk.NdkError as exc:
            # A provider with no device here (the verbs provider without RDMA hardware)
            # reports STATUS_DEVICE_NOT_READY and why: the scenario cannot run, it is skipped.
            if exc.status != ndk.Status.DEVICE_NOT_READY:
                raise
            skip(ENVIRONMENT, f"provider {provider!r} cannot open an adapter here: {exc}")
        except ndk.KnobsNotSupported as exc:
            if not names:
                raise
            # The provider's words name the knob it lacks or the value it refuses; the list is
            # what the scenario set.
            skip(KNOB, f"provider {provider!r} cannot take the knobs the scenario sets "
                       f"({', '.join(names)}): {exc}")
        self.opened.append(adapter)
        return adapter

    def close(self) -> None:
        for adapter in reversed(self.opened):
            close_quietly(adapter)


@pytest.fixture
def _ndk_opener(request: pytest.FixtureRequest) -> Any:
    opener = _Opener(request.config)
    yield opener
    opener.close()


@pytest.fixture
def open_adapter(ndk_provider: str, _ndk_opener: _Opener) -> Any:
    """Factory ``open_adapter(**knobs)`` opening an adapter of the current provider.

    Every adapter it opened is closed at teardown. Knobs are a feature of the soft provider;
    when the provider rejects knobs (``ndk.KnobsNotSupported``) the test is skipped, since the
    scenario cannot be set up there, rather than failed -- except ``address=``, which an
    adapter opened without it serves when it holds that address (``_open_holding_address``).
    ``validate=`` and the validation layer's options (``validate_timeout_ms=``) pass through
    to ``ndk.open_adapter``; the layer's options are dropped when the adapter is opened
    without it.  The run's
    ``--ndk-option KEY=VALUE`` knobs are given to every adapter (the test's own win).
    """
    return functools.partial(_ndk_opener.open, ndk_provider)


@pytest.fixture
def pair(request: pytest.FixtureRequest, ndk_provider: str, _ndk_opener: _Opener,
         _ndk_peer_keeper: _pairs.PeerKeeper) -> Iterator[Pair]:
    """``(a, b)``: two connected ``ndk.scenario.resources.Side``s (each with a registered
    buffer; ``connect_pair``'s keyword arguments), ``a`` in the test's
    process, ``b`` (the passive side) where ``--ndk-peer`` puts it (``ndk._pairs``).  Skips
    with the reason when the provider cannot reach the peer's location.
    ``@pytest.mark.pair(client_knobs=..., server_knobs=..., **connect_pair_keywords)`` sets
    it up."""
    peer_provider = _pairs.peer_provider(request.config, ndk_provider)
    if peer_provider != ndk_provider:  # the report counts the pairs by their passive provider
        request.node.user_properties.append((PEER_PROVIDER_PROPERTY, peer_provider))
    yield from _pairs.open_pair(request, ndk_provider, _ndk_opener.open, _ndk_peer_keeper)


@pytest.fixture
def adapter(open_adapter: Callable[..., Any]) -> Any:
    """An adapter of the current provider, opened without knobs."""
    return open_adapter()


@pytest.fixture
def pd(adapter: Any) -> Any:
    """A protection domain on ``adapter``; closed at teardown, before the adapter."""
    domain = adapter.create_pd().get(timeout=5)
    yield domain
    close_quietly(domain)


@pytest.fixture
def cq(adapter: Any) -> Any:
    """A completion queue of depth 64 on ``adapter``; closed at teardown, before the adapter."""
    queue = adapter.create_cq(cq_depth=64).get(timeout=5)
    yield queue
    close_quietly(queue)


@pytest.fixture
def buffer() -> bytearray:
    """64 KiB of writable memory to register."""
    return bytearray(64 * 1024)


@pytest.fixture
def mr(pd: Any, buffer: bytearray) -> Any:
    """A normal MR on ``pd`` with ``buffer`` registered for local write; closed at teardown."""
    import ndk

    region = pd.create_mr().get(timeout=5)
    status = region.register(buffer, flags=ndk.MrFlag.ALLOW_LOCAL_WRITE).wait(timeout=5)
    assert status == ndk.Status.SUCCESS, f"registering the mr fixture's buffer: {status!r}"
    yield region
    close_quietly(region)


@pytest.fixture
def qp(pd: Any, cq: Any) -> Any:
    """A QP on ``pd`` using ``cq`` for both queues, depth 8 each, qp_context 0x51; closed at
    teardown."""
    pair = pd.create_qp(cq, cq, qp_context=0x51, receive_queue_depth=8,
                        initiator_queue_depth=8).get(timeout=5)
    yield pair
    close_quietly(pair)


# --- capability checks ---------------------------------------------------------------------


def requires(adapter: ndk.Adapter, **minimums: int) -> ndk.AdapterInfo:
    """Skip the current test unless ``adapter.query_info()`` meets every minimum.

    ``requires(adapter, max_srq_depth=1)`` skips with "needs max_srq_depth >= 1, provider
    reports 0" on a provider without SRQs. Field names are the snake_case NDK_ADAPTER_INFO
    fields; a misspelt one is an error, not a skip. Returns the info, for further use.
    """
    info = adapter.query_info()
    unmet = []
    for field, minimum in minimums.items():
        try:
            value = getattr(info, field)
        except AttributeError:
            raise AttributeError(
                f"requires(): adapter info has no field {field!r} "
                "(use the snake_case NDK_ADAPTER_INFO field names)"
            ) from None
        if value < minimum:
            unmet.append(f"needs {field} >= {minimum}, provider reports {value}")
    if unmet:
        skip(CAPABILITY, "; ".join(unmet))
    return info


# --- the validation layer -------------------------------------------------------------------


def _declared_rules(item: pytest.Item) -> set[str]:
    return {rule for marker in item.iter_markers(EXPECT_VIOLATION) for rule in marker.args}


def _check_expect_violation_markers(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A malformed or unknown rule in expect_violation is a usage error; under
    --ndk-no-validate the tests that carry it are skipped (nothing could report their rules)."""
    marked = [item for item in items if item.get_closest_marker(EXPECT_VIOLATION) is not None]
    if not marked:
        return
    try:
        known = {rule.id for rule in _ndk_api().rules()}
    except ImportError as error:
        raise pytest.UsageError(f"{marked[0].nodeid} is marked expect_violation: {error}") from None
    for item in marked:
        for marker in item.iter_markers(EXPECT_VIOLATION):
            if not marker.args or marker.kwargs or not all(isinstance(a, str) for a in marker.args):
                raise pytest.UsageError(
                    f"{item.nodeid}: use @pytest.mark.expect_violation(\"RULE-ID\", ...) with "
                    f"one or more rule IDs, got expect_violation{marker.args!r}"
                    + (f" with {marker.kwargs!r}" if marker.kwargs else "")
                )
            unknown = [rule for rule in marker.args if rule not in known]
            if unknown:
                raise pytest.UsageError(
                    f"{item.nodeid}: expect_violation names no rule of the validation layer: "
                    f"{', '.join(unknown)} (`ndk rules` lists them)"
                )
        if not config.getoption(VALIDATE_DEST):
            rules = ", ".join(sorted(_declared_rules(item)))
            item.add_marker(pytest.mark.skip(reason=skip_reason(
                OPTION, f"expects a violation of {rules}: needs the validation layer "
                "(--ndk-no-validate turned it off)")))


def _violation_line(record: ViolationRecord) -> str:
    return (f"  {record.rule} ({record.side} {record.severity}, digest {record.section}) "
            f"object {record.object}, call {record.call}: {record.message}")


class ValidationWatch:
    """Watches the validated adapters each test opens (the plugin registers one per run).

    ``ndk.open_adapter`` tells it about every adapter it opens; it keeps the validated ones'
    sessions (which outlive their adapters) from the test's setup to the end of its teardown,
    then judges what they recorded.
    """

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._ndk: Any = None  # the ndk module, once a test ran
        self._previous_default: bool | None = None
        self._sessions: list[tuple[str, Any]] | None = None  # (provider, session) of this test
        self._outcomes: dict[str, str] = {}  # phase -> outcome, for the current test

    # ndk is imported when the first test starts, not at import or configure time.
    def _install(self) -> bool:
        if self._ndk is None:
            try:
                import ndk
            except ImportError:
                return False  # nothing can open an adapter then
            self._ndk = ndk
            self._previous_default = ndk.set_validate_default(bool(self._config.getoption(VALIDATE_DEST)))
            ndk._open_hooks.append(self._opened)
        return True

    def pytest_unconfigure(self) -> None:
        if self._ndk is not None:
            if self._opened in self._ndk._open_hooks:
                self._ndk._open_hooks.remove(self._opened)
            self._ndk.set_validate_default(bool(self._previous_default))
            self._ndk = None

    def _opened(self, adapter: Any) -> None:
        if self._sessions is not None and getattr(adapter, "validated", False):
            self._sessions.append((adapter.provider, adapter.validation))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self._outcomes = {}
        self._sessions = [] if self._install() else None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when is not None:
            self._outcomes[report.when] = report.outcome

    # Judged after the runner's teardown (fixtures closed, so each adapter's close has judged
    # its pending calls): trylast.  If a fixture's teardown raised, this is not called; the
    # module's hookwrapper (pytest_runtest_teardown below) then still records the violations,
    # without a second failure.
    @pytest.hookimpl(trylast=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        failure = self.judge(item)
        if failure:
            pytest.fail(failure, pytrace=False)

    def judge(self, item: pytest.Item) -> str | None:
        """Record the test's violations in its user_properties; return the failure message."""
        sessions, self._sessions = self._sessions, None
        if sessions is None:
            return None
        declared = _declared_rules(item)
        records = []
        for provider, session in sessions:
            for v in session.violations():
                records.append(ViolationRecord(
                    rule=v.rule, object=v.object, call=v.call, message=v.message,
                    section=v.section, side=v.side, severity=v.severity, provider=provider,
                    expected=v.rule in declared))
        for record in records:
            item.user_properties.append((VIOLATION_PROPERTY, record))
        if records:
            item.add_report_section("teardown", "ndk validation",
                                    "\n".join(str(record) for record in records))
        unexpected = [r for r in records if r.severity == "error" and not r.expected]
        reported = {r.rule for r in records}
        # A test that did not run to its end (skipped, failed) may not have got to the
        # violation it expects: only unexpected ones count then.
        completed = self._outcomes.get("setup") == "passed" and self._outcomes.get("call") == "passed"
        missing = sorted(declared - reported) if completed else []
        if not unexpected and not missing:
            return None
        lines = []
        if unexpected:
            rules = ", ".join(dict.fromkeys(r.rule for r in unexpected))
            lines.append(f"validation layer: {len(unexpected)} violation(s) not declared with "
                         f"@pytest.mark.expect_violation: {rules}")
            lines += [_violation_line(r) for r in unexpected]
        for rule in missing:
            lines.append(f"expected violation {rule} was not reported")
        return "\n".join(lines)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Any:
    yield
    # Only does something when ValidationWatch.pytest_runtest_teardown did not run (a fixture's
    # teardown raised before it): the violations are still recorded.
    watch = item.config.pluginmanager.get_plugin(_VALIDATION_PLUGIN)
    if watch is not None:
        watch.judge(item)
