"""Where the passive side of a pair runs (``--ndk-peer``), and which providers can reach it.

A pair scenario is written once; its peer (the passive side ``b`` of the ``pair`` fixture)
lives where the command line puts it:

==============  =============================================================  ============
``--ndk-peer``  the peer's interpreter                                          its location
==============  =============================================================  ============
``local``       the test's own process (the default)                           ``process``
``popen``       another ``/usr/bin/python3`` on this host                      ``host``
``ssh=HOST``    ``/usr/bin/python3`` on HOST, started with ``ssh HOST``         ``network``
``netns=NAME``  ``ip netns exec NAME /usr/bin/python3``: this host, another     ``network``
                network stack (reached only over a network, like another host)
==============  =============================================================  ============

Whether a provider can connect to a peer there follows from how it moves data, its transport:
:data:`REACH` is that rule, in one table, and :func:`unreachable` applies it.  This module is
plain Python (no pytest, no extension), so the plugin, the CLI and the tests share it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

LOCAL = "local"
POPEN = "popen"
SSH = "ssh"
NETNS = "netns"

# How far apart two adapters may be, nearest first.
PROCESS = "process"   # both in one process
HOST = "host"         # two processes on one host, one network stack
NETWORK = "network"   # two hosts, or two network namespaces: only a network joins them
_DISTANCE = {PROCESS: 0, HOST: 1, NETWORK: 2}

# provider -> its transport's default, and transport -> the farthest peer it reaches.  A
# provider not listed (a library path, say) is not judged: its pairs are tried wherever the
# peer is, and a provider that cannot reach fails there with its own status.
DEFAULT_TRANSPORT = {"soft": "inproc", "loop": "inproc", "verbs": "verbs"}
REACH = {
    ("soft", "inproc"): PROCESS,   # the in-process fabric (docs/transport.md)
    ("soft", "shm"): HOST,         # shared memory between processes of one host
    ("soft", "tcp"): NETWORK,
    ("loop", "inproc"): PROCESS,   # one fabric per process (docs/providers.md)
    ("verbs", "verbs"): NETWORK,   # RDMA devices: rxe, siw, real RNICs
}
_WIRES = {"tcp", "verbs"}  # transports that are a network protocol, not one provider's fabric
# What to ask for instead, per provider, when its transport does not reach far enough.
_FARTHER = {"soft": {HOST: "transport=shm or tcp", NETWORK: "transport=tcp"}}
# The transport the pair fixture picks, per provider and peer location, when the run did not
# choose one and the default does not reach the peer: a peer in another process of this host
# is what shared memory is for.  (A network peer is not picked for: tcp needs the addresses
# on an interface of each side, which the run sets up and names, tests/tcp/.)
_PICKED = {("soft", HOST): "shm"}


@dataclass(frozen=True)
class PeerSpec:
    """A parsed ``--ndk-peer`` value: ``mode`` (local, popen, ssh, netns) and, for ssh and
    netns, ``target`` (the host, the namespace's name)."""

    mode: str
    target: Optional[str] = None

    def __str__(self) -> str:
        """The spelling of ``--ndk-peer`` (and what the report shows): local, ssh=HOST, ..."""
        return self.mode if self.target is None else f"{self.mode}={self.target}"

    @property
    def location(self) -> str:
        """How far the peer is from the test's process: process, host or network."""
        return {LOCAL: PROCESS, POPEN: HOST}.get(self.mode, NETWORK)

    @property
    def remote(self) -> bool:
        return self.mode != LOCAL


def parse_peer(text: str) -> PeerSpec:
    """``local`` | ``popen`` | ``ssh=HOST`` | ``netns=NAME``; ValueError saying what is accepted
    otherwise."""
    mode, has_target, target = text.strip().partition("=")
    if mode in (LOCAL, POPEN) and not has_target:
        return PeerSpec(mode)
    if mode in (SSH, NETNS) and target.strip():
        return PeerSpec(mode, target.strip())
    raise ValueError(f"--ndk-peer {text!r}: use local, popen, ssh=HOST or netns=NAME")


def base_provider(provider: str) -> str:
    """The provider's name without its device (``verbs:rxe0`` -> ``verbs``)."""
    return provider.partition(":")[0]


def transport_of(provider: str, options: Mapping[str, object]) -> Optional[str]:
    """The transport an adapter of ``provider`` opened with ``options`` uses; None when the
    provider is not one :data:`REACH` knows."""
    base = base_provider(provider)
    if base not in DEFAULT_TRANSPORT:
        return None
    if base == "soft":
        named = provider.partition(":")[2]  # soft:tcp names its transport
        return str(options.get("transport", named or DEFAULT_TRANSPORT[base]))
    return DEFAULT_TRANSPORT[base]


def reach_of(provider: str, options: Mapping[str, object]) -> Optional[str]:
    """The farthest location an adapter of ``provider`` with ``options`` connects to (process,
    host, network); None when not known (the pair is then tried)."""
    transport = transport_of(provider, options)
    if transport is None:
        return None
    return REACH.get((base_provider(provider), transport))


def picked_transport(provider: str, options: Mapping[str, object],
                     peer: PeerSpec) -> Optional[str]:
    """The transport to open ``provider``'s adapter with so that it reaches ``peer``, when the
    run chose none (no ``transport`` option, no ``soft:TRANSPORT`` spelling) and the default
    does not reach it; None when nothing is to be picked."""
    if "transport" in options or provider.partition(":")[2]:
        return None
    reach = reach_of(provider, options)
    if reach is None or _DISTANCE[reach] >= _DISTANCE[peer.location]:
        return None
    return _PICKED.get((base_provider(provider), peer.location))


def _describe(provider: str, options: Mapping[str, object]) -> str:
    base = base_provider(provider)
    if base == "soft":
        return f"{provider} with transport={transport_of(provider, options)}"
    return provider


def _cannot(provider: str, options: Mapping[str, object], reach: str, peer: PeerSpec) -> str:
    what = {PROCESS: "only adapters of its own process", HOST: "only adapters on its own host",
            NETWORK: "adapters on other hosts"}[reach]
    instead = _FARTHER.get(base_provider(provider), {}).get(peer.location)
    needs = f"; --ndk-peer {peer} needs {instead}" if instead else ""
    return f"{_describe(provider, options)} reaches {what}{needs}"


def unreachable(provider: str, options: Mapping[str, object], peer_provider: str,
                peer_options: Mapping[str, object], peer: PeerSpec) -> Optional[str]:
    """Why an adapter of ``provider`` (with ``options``) in the test's process cannot connect
    to one of ``peer_provider`` (with ``peer_options``) where ``peer`` puts it; None when both
    reach that far (or are not known).  The reason is the skip message of the ``pair``
    fixture, e.g. "soft with transport=inproc reaches only adapters of its own process;
    --ndk-peer popen needs transport=shm or tcp"."""
    needed = _DISTANCE[peer.location]
    for name, opts in ((provider, options), (peer_provider, peer_options)):
        reach = reach_of(name, opts)
        if reach is not None and _DISTANCE[reach] < needed:
            return _cannot(name, opts, reach, peer)
    if base_provider(provider) != base_provider(peer_provider):
        # Two providers meet only on a wire: each in-process or shared-memory fabric is the
        # provider's own.
        theirs = {transport_of(provider, options), transport_of(peer_provider, peer_options)}
        if None not in theirs and not theirs <= _WIRES:
            return (f"{_describe(provider, options)} and {_describe(peer_provider, peer_options)} "
                    "share no transport: two providers connect only over a network (tcp, verbs)")
    return None
