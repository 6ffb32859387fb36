"""Can the scenarios run against a provider here?  Checked once, before any scenario is collected.

A provider that does not load, loads but does not open an adapter, has no device on this host,
or cannot take the scenarios' addresses here is an error of the environment: every scenario
would fail (or skip) for the same reason, and the report would blame the provider's rules for
it.  :func:`problem` opens an adapter the way the scenarios' fixtures do and, when it cannot,
gives one line naming the cause and the fix.  ``ndk conformance`` calls it before it starts
pytest (exit code :data:`EXIT_ENVIRONMENT`, nothing collected), and the ``ndk.testing`` plugin at
the start of a session that names its providers (``--ndk-provider``, ``--ndk-option``), so a
plain ``pytest`` run stops the same way.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

EXIT_ENVIRONMENT = 2  # the exit code of a run the environment cannot hold
# The addresses the scenarios give their adapters (scenarios/scenario_support.py, the pair
# fixture's defaults): TEST-NET-1 and the IPv6 documentation prefix.  A provider that takes an
# address knob and needs its addresses to be the host's (soft with transport=tcp) must find
# these local; a provider without the knob skips the scenarios that set it, saying why.
SCENARIO_ADDRESSES = "192.0.2.10,2001:db8::10"
_ADDRESS_FIX = ("run the scenarios in a network namespace whose loopback holds 192.0.2.0/24, "
                "2001:db8::/64, 198.18.0.0/15 and fd00:6e64:6b::/64 (as root, tests/tcp/in-netns.sh "
                "in the source tree; docs/transport.md, 'The tcp transport in the soft provider'), "
                "or choose a transport that needs no host address (soft, soft:shm)")



def run_problem(providers: Sequence[str], options: Mapping[str, str], peer_local: bool = True,
                peer_provider: str | None = None,
                peer_options: Mapping[str, str] | None = None,
                pair_addresses: tuple[str, str] | None = None,
                setup: bool = False) -> str | None:
    """The first :func:`problem` of a run's providers, each with the run's knobs ``options``,
    and of its pairs' passive side when that runs here (``peer_local``) as another provider
    (``peer_provider``, with ``peer_options``, the run's when None).

    ``pair_addresses``: the (client, server) addresses the run gives its pairs
    (``--ndk-pair-addresses``): the providers are checked with those instead of their own and
    the scenarios' (a namespace that holds only them, tests/tcp/two-namespaces.sh).
    ``setup``: a ``--ndk-provider-setup`` command prepares each provider's device and addresses
    when its turn comes: only a provider that does not load is an error before the run."""
    def check(provider: str, knobs: Mapping[str, str], address: str | None) -> str | None:
        if address is not None and "address" not in knobs:
            knobs = {**knobs, "address": address}
        line = problem(provider, knobs)
        return line if line and (not setup or line in _load_errors) else None

    client, server = pair_addresses or (None, None)
    for provider in providers:
        line = check(provider, options, client)
        if line:
            return line
    if peer_local and peer_provider and peer_provider not in providers:
        return check(peer_provider, options if peer_options is None else peer_options, server)
    return None


_checked: dict[tuple[str, tuple[tuple[str, str], ...]], str | None] = {}
_load_errors: set[str] = set()  # the lines of _checked that say a provider does not load


def problem(provider: str, options: Mapping[str, str] | None = None) -> str | None:
    """Why ``provider`` (with the run's ``--ndk-option`` knobs ``options``) cannot run the
    scenarios on this host, in one line naming the cause and the fix; None when it can.

    Remembered per process: the runner's check and the plugin's are one."""
    key = (provider, tuple(sorted((options or {}).items())))
    if key not in _checked:
        _checked[key] = _problem(provider, dict(options or {}))
    return _checked[key]


def open_problem(provider: str, options: Mapping[str, Any] | None = None) -> str | None:
    """Why an adapter of ``provider`` (with the knobs ``options``) does not open here, in one
    line naming the cause and the fix; None when it opens.  What ``ndk walk`` checks first."""
    options = dict(options or {})
    try:
        import ndk
    except ImportError as exc:
        return (f"cannot import the ndk extension ({exc}): reinstall ndk-harness for this "
                "Python, or set PYTHONPATH to a build's python/ folder")
    from ._pairs import with_run_knobs

    options = with_run_knobs(provider, options)
    try:
        ndk.open_adapter(provider, validate=False, **options).close()
    except ndk.KnobsNotSupported as exc:
        return (f"provider {provider!r} does not take the --ndk-option knobs the run gives "
                f"({', '.join(sorted(options))}): {exc}; drop them (docs/knobs.md says which "
                "knobs are whose)")
    except ndk.NdkError as exc:
        return describe(ndk, provider, exc, options)
    return None


def _problem(provider: str, options: dict[str, Any]) -> str | None:
    line = open_problem(provider, options)
    if line:
        return line
    import ndk

    if "address" in options:
        return None  # the run chose its addresses: the open above has checked them
    try:
        ndk.open_adapter(provider, validate=False, **options, address=SCENARIO_ADDRESSES).close()
    except ndk.KnobsNotSupported:
        return None  # no address knob: the scenarios that set one skip there, saying why
    except ndk.NdkError as exc:
        # Only an address the host does not hold (soft:tcp) is the environment's; any other
        # refusal (verbs: no device owns it) is for the scenarios that set it to report.
        if exc.status == ndk.Status.INVALID_ADDRESS:
            return describe(ndk, provider, exc, options)
    return None


def describe(ndk: Any, provider: str, exc: Any, options: Mapping[str, str] = {}) -> str:
    """The line for an adapter of ``provider`` that failed to open with ``exc`` (an NdkError)."""
    status = getattr(exc, "status", None)
    text = str(exc)
    if status == ndk.Status.NOT_SUPPORTED and text.startswith(("cannot load provider",
                                                               "no provider named")):
        return _load_error(f"provider {provider!r} does not load ({text}): give a provider name that "
                "`ndk providers` lists, or the path of a provider library (.so)")
    if status == ndk.Status.NOT_SUPPORTED and "does not export a valid" in text:
        return _load_error(f"{provider!r} loads but is not an NDK provider ({text}): give the "
                           "path of a library built against ndkpi.h and provider.h "
                           "(docs/adding-a-provider.md)")
    if status == ndk.Status.DEVICE_NOT_READY:
        return (f"provider {provider!r} has no device here ({text}): choose a device "
                "`ndk providers` lists, or run where the device is")
    if status == ndk.Status.INVALID_ADDRESS:
        given = options.get("address")
        whose = f"the address {given}" if given else "its own or the scenarios' addresses"
        return (f"provider {provider!r} cannot use {whose} on this host ({text}): "
                + ("give an address of this host" if given else _ADDRESS_FIX))
    return (f"provider {provider!r} loads but its adapter does not open ({text}): "
            f"`ndk info --provider {provider}` shows the same; fix the provider's setup")


def _load_error(line: str) -> str:
    _load_errors.add(line)
    return line


def config_problem(config: Any) -> str | None:
    """:func:`run_problem` for a pytest run: its ``--ndk-provider``s, ``--ndk-option``s and
    pairs' passive side (``--ndk-peer``, ``--ndk-peer-provider``, ``--ndk-peer-option``)."""
    from . import _pairs
    from ._selection import selected_providers

    providers = selected_providers(config)
    peer = _pairs.peer_provider(config, providers[0])
    # The run's own pair addresses only when it names them (they may equal the default).
    named = any(str(arg).startswith("--ndk-pair-addresses")
                for arg in config.invocation_params.args)
    chosen = _pairs.pair_addresses(config) if named else None
    return run_problem(providers, _pairs.run_options(config),
                       peer_local=not _pairs.peer_spec(config).remote,
                       peer_provider=peer, peer_options=_pairs.peer_options(config, providers[0]),
                       pair_addresses=chosen,
                       setup=bool(config.getoption("ndk_provider_setup", default=None)))


def args_problem(providers: Sequence[str], pytest_args: Sequence[str]) -> str | None:
    """:func:`run_problem` for ``ndk conformance``: ``providers`` (its ``--provider``s) and
    the plugin's options among the pytest arguments it passes on."""
    import argparse

    from . import _pairs
    from ._peer import parse_peer

    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--ndk-provider", action="append", default=[])
    parser.add_argument("--ndk-option", action="append", default=None)
    parser.add_argument("--ndk-peer", default=None)
    parser.add_argument("--ndk-peer-provider", default=None)
    parser.add_argument("--ndk-peer-option", action="append", default=None)
    parser.add_argument("--ndk-pair-addresses", default=None)
    parser.add_argument("--ndk-provider-setup", default=os.environ.get("NDK_PROVIDER_SETUP"))
    known, _ = parser.parse_known_args(list(pytest_args))
    chosen = list(dict.fromkeys([*providers, *known.ndk_provider])) or ["soft"]
    try:
        options = _pairs.parse_options(known.ndk_option, "--ndk-option")
        peer_options = (None if known.ndk_peer_option is None
                        else _pairs.parse_options(known.ndk_peer_option, "--ndk-peer-option"))
        remote = parse_peer(known.ndk_peer).remote if known.ndk_peer else False
        client, comma, server = (known.ndk_pair_addresses or "").partition(",")
    except ValueError:
        return None  # a malformed option: the plugin refuses it as a usage error, saying why
    pair = (client.strip(), server.strip()) if comma and client.strip() and server.strip() else None
    return run_problem(chosen, options, peer_local=not remote,
                       peer_provider=known.ndk_peer_provider, peer_options=peer_options,
                       pair_addresses=pair, setup=bool(known.ndk_provider_setup))
