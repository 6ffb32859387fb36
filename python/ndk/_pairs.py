"""The ``pair`` fixture of the ``ndk.testing`` plugin: two connected endpoints whose passive
side lives where ``--ndk-peer`` puts it (``ndk._peer``: the test's process, another process,
another host, a network namespace).

A scenario asks for ``pair`` and gets ``(a, b)``, two ``ndk.scenario.resources.Side``s
connected by that resource builder (``b`` the passive side), whatever the peer's location:
with a remote peer, ``b``'s objects are rpyc proxies of the peer's own
(``ndk._peer_process``).  The adapters are opened
with the run's provider and ``--ndk-option``s (``b``'s with ``--ndk-peer-provider`` and
``--ndk-peer-option``s); the marker ``@pytest.mark.pair(...)`` gives the builder's keyword
arguments (``connect_pair``'s: the sides' sizes, ``private_data``) and each side's knobs
(``client_knobs=``, ``server_knobs=``).  When the
chosen provider cannot reach the peer's location (``ndk._peer.unreachable``), the fixture
skips with that reason.  Each test that used it records where its peer ran (the report's
``user_properties`` entry ``ndk_peer``).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

import pytest

from ._peer import LOCAL, NETNS, SSH, PeerSpec, parse_peer, picked_transport, unreachable
from ._report import PEER_PROPERTY
from ._skips import OPTION, skip_reason

if TYPE_CHECKING:
    from .scenario.resources import Side

PEER_DEST = "ndk_peer"
PEER_PROVIDER_DEST = "ndk_peer_provider"
OPTIONS_DEST = "ndk_options"
PEER_OPTIONS_DEST = "ndk_peer_options"
ADDRESSES_DEST = "ndk_pair_addresses"
# The pair's addresses (the soft provider's knob address=; the verbs provider opens the device
# that owns the address): TEST-NET-1, the ones the scenarios' own pairs use.
DEFAULT_ADDRESSES = "192.0.2.31,192.0.2.32"
NETNS_DIR = "/run/netns"  # where ip netns keeps the named namespaces
PAIR_TIMEOUT = 5.0  # seconds for the connection's steps in all (ndk.scenario.TIMEOUT)
Pair = tuple["Side", "Side"]  # what the pair fixture gives: (active side, passive side)
_CONNECT_KEYWORDS = ("cq_depth", "receive_queue_depth", "initiator_queue_depth",
                     "max_receive_request_sge", "max_initiator_request_sge", "inline_data_size",
                     "private_data")


def new_buffer(beside: Any, size: int) -> bytearray:
    """A zeroed ``bytearray`` of ``size`` bytes in the process where ``beside`` lives: this one,
    or the peer's when ``beside`` is a proxy of one of its objects (a buffer a peer's MR
    registers must be the peer's memory)."""
    netref = sys.modules.get("rpyc.core.netref")
    if netref is not None and isinstance(beside, netref.BaseNetref):
        return object.__getattribute__(beside, "____conn__").builtins.bytearray(size)
    return bytearray(size)


def add_options(group: Any) -> None:
    group.addoption(
        "--ndk-peer", dest=PEER_DEST, default=LOCAL, metavar="WHERE",
        help="where the passive side of the 'pair' fixture runs: local (the test's process, "
        "the default), popen (another python3 on this host), ssh=HOST, netns=NAME "
        "(docs/providers.md, 'Running across hosts').")
    group.addoption(
        "--ndk-peer-provider", dest=PEER_PROVIDER_DEST, default=None, metavar="NAME",
        help="the provider of the pair's passive side (default: the test's --ndk-provider).")
    group.addoption(
        "--ndk-option", dest=OPTIONS_DEST, action="append", default=None, metavar="KEY=VALUE",
        help="an option (knob) for every adapter the plugin's fixtures open, e.g. "
        "transport=shm; repeatable.")
    group.addoption(
        "--ndk-peer-option", dest=PEER_OPTIONS_DEST, action="append", default=None,
        metavar="KEY=VALUE",
        help="an option for the pair's passive adapter (default: the --ndk-option ones when "
        "its provider is the test's, none otherwise); repeatable.")
    group.addoption(
        "--ndk-pair-addresses", dest=ADDRESSES_DEST, default=DEFAULT_ADDRESSES,
        metavar="CLIENT,SERVER",
        help=f"the addresses of the pair's two adapters (default {DEFAULT_ADDRESSES}).")


def parse_options(values: Optional[list[str]], option: str) -> dict[str, str]:
    """``["transport=shm", ...]`` -> ``{"transport": "shm"}``; ValueError naming the option."""
    options: dict[str, str] = {}
    for text in values or ():
        key, has_value, value = text.partition("=")
        if not has_value or not key.strip():
            raise ValueError(f"{option} {text!r}: use KEY=VALUE")
        options[key.strip()] = value.strip()
    return options


def peer_spec(config: pytest.Config) -> PeerSpec:
    return parse_peer(config.getoption(PEER_DEST, default=LOCAL) or LOCAL)


def run_options(config: pytest.Config) -> dict[str, str]:
    """The ``--ndk-option`` knobs, for every adapter the fixtures open (each provider's
    run-scoped knobs added at open: :func:`with_run_knobs`)."""
    return parse_options(config.getoption(OPTIONS_DEST, default=None), "--ndk-option")


def with_run_knobs(provider: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` and the knobs ``provider`` declares a run sets to a name of its own, named
    for this test process (the soft provider's shm_fabric with transport=shm: the scenarios'
    fixed addresses are claimed host-wide within a fabric, so two xdist workers, or two runs,
    must not share one; docs/transport.md, "Addresses and fabrics").  A peer the process
    starts gets the same options, so it joins the same fabric.  A provider that does not load
    gets none: its open says why."""
    import ndk

    try:
        needed = ndk._run_scoped_knobs(provider, options)
    except ndk.NdkError:
        return dict(options)
    return {**options, **{knob: f"run-{os.getpid()}" for knob in needed}}


def _reaching(provider: str, options: dict[str, str], spec: PeerSpec) -> dict[str, str]:
    """The knobs that make ``provider``'s adapter reach the peer of ``spec`` when the run
    chose no transport (``--ndk-peer popen`` with soft: transport=shm, in this run's fabric),
    else none."""
    transport = picked_transport(provider, options, spec)
    if transport is None:
        return {}
    picked = with_run_knobs(provider, {**options, "transport": transport})
    return {key: value for key, value in picked.items() if key not in options}


def peer_provider(config: pytest.Config, provider: str) -> str:
    return config.getoption(PEER_PROVIDER_DEST, default=None) or provider


def peer_options(config: pytest.Config, provider: str) -> dict[str, str]:
    given = config.getoption(PEER_OPTIONS_DEST, default=None)
    if given is not None:
        return parse_options(given, "--ndk-peer-option")
    return run_options(config) if peer_provider(config, provider) == provider else {}


def pair_addresses(config: pytest.Config) -> tuple[str, str]:
    text = config.getoption(ADDRESSES_DEST, default=DEFAULT_ADDRESSES) or DEFAULT_ADDRESSES
    client, comma, server = text.partition(",")
    if not comma or not client.strip() or not server.strip():
        raise ValueError(f"--ndk-pair-addresses {text!r}: use CLIENT,SERVER")
    return client.strip(), server.strip()


def check_options(config: pytest.Config) -> None:
    """A malformed --ndk-peer, --ndk-option or --ndk-pair-addresses is a usage error at the
    start of the run, not a failure of every pair scenario."""
    try:
        spec = peer_spec(config)
        run_options(config)
        parse_options(config.getoption(PEER_OPTIONS_DEST, default=None), "--ndk-peer-option")
        pair_addresses(config)
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    import importlib.util

    if spec.remote and importlib.util.find_spec("rpyc") is None:
        raise pytest.UsageError(f"--ndk-peer {spec} reaches the peer through rpyc, which is not "
                                "installed here (Debian: apt-get install python3-rpyc)")
    problem = _cannot_start(spec)
    if problem is not None:
        raise pytest.UsageError(f"--ndk-peer {spec}: {problem}; docs/providers.md, 'Running "
                                "across hosts'")


def _cannot_start(spec: PeerSpec) -> Optional[str]:
    """What this host lacks to start the peer of ``spec`` (the tool, root, the namespace), known
    before any scenario runs; None when nothing is missing here (a host that does not answer
    is found when the peer starts)."""
    import shutil

    if spec.mode == SSH and shutil.which("ssh") is None:
        return ("the peer is started with ssh, which is not installed here (Debian: apt-get "
                "install openssh-client; the peer host needs sshd)")
    if spec.mode == NETNS:
        if shutil.which("ip") is None:
            return ("the peer is started with ip netns exec, and ip is not installed here "
                    "(Debian: apt-get install iproute2)")
        if os.geteuid() != 0:
            return "ip netns exec needs root"
        if not os.path.exists(os.path.join(NETNS_DIR, str(spec.target))):
            return (f"there is no network namespace {spec.target} here (ip netns add "
                    f"{spec.target}; tests/tcp/two-namespaces.sh makes two and runs the pair "
                    "scenarios in them)")
    return None


class PeerKeeper:
    """The run's peer interpreter (one per pytest process: each xdist worker has its own),
    started on first use and started again after one died."""

    def __init__(self, spec: PeerSpec) -> None:
        self.spec = spec
        self._peer: Any = None
        self._failed: Optional[str] = None  # why the peer could not start, once it could not
        self.death_reported = False  # the test's failure already named the peer's death

    def death(self) -> Optional[str]:
        """What happened to the current peer, if it died (None while it runs, or if none)."""
        return self._peer.death() if self._peer is not None else None

    def peer(self) -> Any:
        """The running peer; PeerError when it cannot start.  A start that failed is not tried
        again: the run's later pair scenarios error at once with the same reason (an
        unreachable host would otherwise cost each of them the start timeout)."""
        from ._peer_process import PeerError, start_peer

        if self._failed is not None:
            raise PeerError(f"{self._failed} (not started again in this run)")
        if self._peer is not None and not self._peer.alive:
            self._peer.close()
            self._peer = None
        if self._peer is None:
            try:
                self._peer = start_peer(self.spec)
            except PeerError as error:
                self._failed = str(error)
                raise
        self.death_reported = False
        return self._peer

    def close(self) -> None:
        if self._peer is not None:
            self._peer.close()
            self._peer = None


@pytest.fixture(scope="session")
def _ndk_peer_keeper(request: pytest.FixtureRequest) -> Iterator[PeerKeeper]:
    keeper = PeerKeeper(peer_spec(request.config))
    yield keeper
    keeper.close()


def peer_for_test(request: pytest.FixtureRequest, keeper: PeerKeeper) -> Iterator[Any]:
    """The running peer for one test (None for ``local``); at teardown, a peer that died
    fails the test with what happened to it (unless its failure already said so), else the
    adapters the test opened there are closed."""
    if not keeper.spec.remote:
        yield None
        return
    from ._peer_process import PeerError

    try:
        peer = keeper.peer()
    except PeerError as error:  # the reason and the peer's stderr say it all: no traceback
        pytest.fail(f"ndk peer: {error}", pytrace=False)
    yield peer
    death = peer.death()
    if death is not None and not keeper.death_reported:
        pytest.fail(f"ndk peer: {death}", pytrace=False)
    peer.close_adapters()


@pytest.fixture
def ndk_peer(request: pytest.FixtureRequest, _ndk_peer_keeper: PeerKeeper) -> Iterator[Any]:
    """The peer interpreter of ``--ndk-peer`` (an ``ndk._peer_process.Peer``: ``.ndk`` is its
    ``ndk`` module, ``.open_adapter(provider, **knobs)``), running; None with ``--ndk-peer
    local``.  The adapters the test opened there are closed at teardown.  A peer that died
    during the test fails it with what happened to the peer."""
    request.node.user_properties.append((PEER_PROPERTY, str(_ndk_peer_keeper.spec)))
    yield from peer_for_test(request, _ndk_peer_keeper)


class _PeerValidation:
    """A peer adapter's validation session as the validation watch sees it: its violations
    are copied into this process (:meth:`copy`) when the test's peer adapters are closed, as
    the watch judges them later, when the peer may be gone (the run's last test)."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self._copied: Optional[list[Any]] = None

    def copy(self) -> None:
        import ndk

        if self._copied is None:
            self._copied = [ndk.Violation(str(v.rule), str(v.object), str(v.call),
                                          str(v.message), str(v.section), str(v.side),
                                          str(v.severity))
                            for v in self._session.violations()]

    def violations(self) -> list[Any]:
        if self._copied is not None:
            return self._copied
        try:
            return list(self._session.violations())
        except EOFError:  # the peer died before its record was copied: nothing to judge
            return []


class _PeerAdapterSeen:
    """What the open hooks are told of an adapter opened in the peer (they read these)."""

    def __init__(self, adapter: Any) -> None:
        self.validated = bool(adapter.validated)
        self.provider = str(adapter.provider)
        self.validation = _PeerValidation(adapter.validation) if self.validated else None


def _open_peer_adapter(peer: Any, provider: str, **knobs: Any) -> tuple[Any, Any]:
    """An adapter in the peer, validated as the run's adapters are, and watched like them (the
    open hooks: the validation layer's watch judges its violations after the test).  Returns
    (adapter, what the hooks saw)."""
    import ndk

    adapter = peer.open_adapter(provider, validate=ndk.validate_default(), **knobs)
    seen = _PeerAdapterSeen(adapter)
    for hook in list(ndk._open_hooks):
        hook(seen)  # type: ignore[arg-type]  # what the hooks read of an Adapter
    return adapter, seen


def open_pair(request: pytest.FixtureRequest, provider: str, open_local: Callable[..., Any],
              keeper: PeerKeeper) -> Iterator[Pair]:
    """The ``pair`` fixture's work: skip when the providers cannot reach the peer (before any
    peer is started), open the two adapters (``open_local(provider, **knobs)`` for one in this
    process, closed by its caller), connect them (``ndk.scenario.resources.connected_pair``,
    imported here: ``ndk.scenario`` imports this plugin)."""
    from .scenario.resources import connected_pair

    config = request.config
    spec = peer_spec(config)
    server_provider = peer_provider(config, provider)
    options, server_options = run_options(config), peer_options(config, provider)
    # A peer the default transport cannot reach gets one that can (soft, popen: shm).
    client_picked = _reaching(provider, options, spec)
    options = with_run_knobs(provider, {**options, **client_picked})
    server_options = with_run_knobs(server_provider, {
        **server_options, **_reaching(server_provider, server_options, spec)})
    # Noted first: a pair skipped as unreachable is reported with the place it could not reach.
    request.node.user_properties.append((PEER_PROPERTY, str(spec)))
    reason = unreachable(provider, options, server_provider, server_options, spec)
    if reason is not None:
        pytest.skip(skip_reason(OPTION, reason))
    marker = request.node.get_closest_marker("pair")
    settings = dict(marker.kwargs) if marker is not None else {}
    client_knobs = settings.pop("client_knobs", None) or {}
    server_knobs = settings.pop("server_knobs", None) or {}
    unknown = sorted(set(settings) - set(_CONNECT_KEYWORDS))
    if unknown:
        raise pytest.UsageError(f"{request.node.nodeid}: @pytest.mark.pair takes "
                                f"client_knobs, server_knobs and connect_pair's "
                                f"{', '.join(_CONNECT_KEYWORDS)}, not {', '.join(unknown)}")
    client_address, server_address = pair_addresses(config)
    client = open_local(provider, address=client_address, **{**client_picked, **client_knobs})
    seen = None
    for peer in peer_for_test(request, keeper):
        if peer is None:
            server = open_local(server_provider, address=server_address, **server_knobs)
        else:
            server, seen = _open_peer_adapter(peer, server_provider, address=server_address,
                                              **{**server_options, **server_knobs})
        try:
            pair = connected_pair(client, server, timeout=PAIR_TIMEOUT, **settings)
        except BaseException:
            # The test ends here, and peer_for_test with it, before its teardown closes what
            # the test opened in the peer: the passive adapter would hold its address there
            # and every later pair would fail to open one.
            if peer is not None:
                peer.close_adapters()
            raise
        yield pair
        if seen is not None and seen.validation is not None and peer.alive:
            if not server.closed:
                server.close()  # its close judges its pending calls (the layer), then copy
            seen.validation.copy()


class PeerWatch:
    """The plugin object of the pairs: marks the pair scenarios, names a peer's death as the
    failure of the test it broke, and counts, for the terminal summary, where the pair
    scenarios' peers ran (on the xdist controller too: the entry travels with each report)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Every test that takes the ``pair`` fixture carries the ``pair`` marker (an empty
        one when it has none of its own), so ``-m pair`` selects the pair scenarios, as a lane
        with a remote peer runs them; before ``-m`` deselects (tryfirst)."""
        for item in items:
            if ("pair" in getattr(item, "fixturenames", ())
                    and item.get_closest_marker("pair") is None):
                item.add_marker(pytest.mark.pair)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        """A test that failed because its peer died (rpyc raises EOFError, a broken pipe)
        fails with what happened to the peer, not with the pipe's error."""
        outcome = yield
        report = outcome.get_result()
        keeper = getattr(item, "funcargs", {}).get("_ndk_peer_keeper")
        if not report.failed or call.excinfo is None or not isinstance(keeper, PeerKeeper):
            return
        death = keeper.death()
        if death is not None:
            keeper.death_reported = True
            report.longrepr = (f"ndk peer: {death}\n(the test saw "
                               f"{call.excinfo.typename}: {call.excinfo.value})")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "setup":
            return
        for name, value in report.user_properties:
            if name == PEER_PROPERTY:
                self.counts[str(value)] = self.counts.get(str(value), 0) + 1
                return

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.counts:
            where = ", ".join(f"{count} with the peer {place}"
                              for place, count in sorted(self.counts.items()))
            terminalreporter.write_line(f"ndk pairs: {where}")
