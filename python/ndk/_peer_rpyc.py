"""The rpyc pieces both ends of a remote peer share: the connection's settings, how ndk's
enumerations cross, and the peer's own main loop.

The peer is a classic rpyc "slave" (python3-rpyc, Debian) serving over its standard input
and output: the test's process reaches its ``ndk`` module, and every object that module makes,
through rpyc's transparent proxies, so a scenario calls ``b.qp.send(...)`` the same whether
``b`` lives in its own process or in the peer.  No protocol of ours goes over the pipe.
"""

from __future__ import annotations

import enum
import os
from typing import Any

# Both ends: a remote ndk.NdkError arrives as ndk.NdkError (the class is imported by name on
# the receiving side, which has the same package), not as rpyc's GenericException, so the
# scenarios' ``except ndk.NdkError`` holds.  A call the peer does not answer within the
# timeout raises TimeoutError instead of waiting for ever; the scenarios' own waits are
# shorter (scenario_support.TIMEOUT).
CONFIG = {
    "allow_public_attrs": True,
    "import_custom_exceptions": True,
    "instantiate_custom_exceptions": True,
    "sync_request_timeout": 30,
}


def send_ndk_enums_by_value() -> None:
    """Make rpyc send ndk's IntEnum and IntFlag values (ndk.Status, ndk.OpType, ndk.MrFlag...)
    as their integers instead of as proxies.

    rpyc passes only builtin types by value; an enumeration member would arrive as a proxy,
    and ``proxy == ndk.Status.SUCCESS`` compares the two interpreters' objects, which never
    match.  As plain integers they compare equal to the receiving side's members, and the
    provider side takes them where its enumerations are expected.  Called on both ends.
    """
    import ndk
    from rpyc.core import brine

    int_dumper = brine._dump_registry[int]
    kinds = {value for value in vars(ndk).values()
             if isinstance(value, type) and issubclass(value, (enum.IntEnum, enum.IntFlag))}
    members = {cls for kind in kinds for cls in (kind, *_subclasses(kind))}
    for cls in members:
        brine._dump_registry[cls] = lambda obj, stream: int_dumper(int(obj), stream)
    brine.simple_types = brine.simple_types | frozenset(members)


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def serve(incoming_fd: int, outgoing_fd: int) -> None:
    """The peer's main loop: serve the test's process over the two file descriptors until it
    closes them (or exits), then return (the peer process ends)."""
    from rpyc.core.service import SlaveService
    from rpyc.core.stream import PipeStream
    from rpyc.utils.factory import connect_stream

    send_ndk_enums_by_value()
    stream = PipeStream(os.fdopen(incoming_fd, "rb", buffering=0),
                        os.fdopen(outgoing_fd, "wb", buffering=0))
    connection: Any = connect_stream(stream, SlaveService, dict(CONFIG))
    try:
        connection.serve_all()
    finally:
        connection.close()


# What the peer process runs (python3 -c): the pipe to the test's process is the original
# standard output, moved aside first so that anything else written to stdout (a provider's
# printf) goes to stderr instead of into the rpyc stream.
BOOTSTRAP = (
    "import os, sys; channel = os.dup(1); os.dup2(2, 1); sys.stdout = sys.stderr; "
    "from ndk._peer_rpyc import serve; serve(0, channel)"
)
