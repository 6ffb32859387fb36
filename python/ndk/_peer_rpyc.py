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
import struct
from typing import Any

# Both ends: a remote ndk.NdkError arrives as ndk.NdkError (the class is imported by name on
# the receiving side, which has the same package), not as rpyc's GenericException, so the
# scenarios' ``except ndk.NdkError`` holds.  A call the peer does not answer within the
# timeout raises TimeoutError instead of waiting for ever; the scenarios' own waits are
# shorter (ndk.scenario.TIMEOUT).
CONFIG = {
    "allow_public_attrs": True,
    "import_custom_exceptions": True,
    "instantiate_custom_exceptions": True,
    "sync_request_timeout": 30,
}


def send_ndk_values_by_value() -> None:
    """Make rpyc send ndk's IntEnum and IntFlag values (ndk.Status, ndk.OpType, ndk.MrFlag...)
    ndk.Sge values, and lists of plain values by value instead of as proxies.

    rpyc passes only builtin immutable types by value; an enumeration member would arrive as a
    proxy, and ``proxy == ndk.Status.SUCCESS`` compares the two interpreters' objects, which
    never match; so would ``cq.get_results_ex(16) == []`` for the peer's empty list.  A member
    goes as its class's name and value and arrives as the receiving side's own member (so
    ``is`` holds too); a list of plain values (addresses, an empty result list) arrives as a
    copy, a list holding any object stays a proxy.  Called on both ends: the two tags must be
    known to both.
    """
    import ndk
    from rpyc.core import brine

    if _LIST_TAG in brine._load_registry:
        return  # done before
    kinds = {value for value in vars(ndk).values()
             if isinstance(value, type) and issubclass(value, (enum.IntEnum, enum.IntFlag))}
    _ENUMS.update({cls.__name__: cls for kind in kinds for cls in (kind, *_subclasses(kind))})
    for cls in _ENUMS.values():
        brine._dump_registry[cls] = _dump_enum
    brine.simple_types = brine.simple_types | frozenset(_ENUMS.values())
    brine._load_registry[_ENUM_TAG] = _load_enum
    # ndk.Sge is a value (NDK_SGE: address, length, token): one made here for the peer's QP
    # (a fast-registered region's SGE) goes as its three numbers.
    brine.simple_types = brine.simple_types | {ndk.Sge}
    brine._dump_registry[ndk.Sge] = _dump_sge
    brine._load_registry[_SGE_TAG] = _load_sge
    dumpable = brine.dumpable
    brine.dumpable = lambda obj: (all(dumpable(item) for item in obj)
                                  if type(obj) is list else dumpable(obj))
    brine._dump_registry[list] = _dump_list
    brine._load_registry[_LIST_TAG] = _load_list


def fetch_buffers_whole() -> None:
    """Make ``bytes(buffer)`` of a peer's ``bytearray`` (a buffer a peer's MR registers, or a
    slice of one) one request that brings the bytes back by value.

    A proxy has no buffer protocol, so ``bytes()`` would iterate it, one request per byte:
    checking a few kilobytes that landed in the peer took thousands of round trips (the
    scenarios' ``bytes(sink.buf[:n]) == ...``).  The peer's buffer itself stays there (an MR
    registers the peer's memory); only what ``bytes()`` reads comes over.
    """
    from rpyc.core import netref

    proxy_class = netref.builtin_classes_cache.get("builtins.bytearray")
    if proxy_class is not None and "__bytes__" not in vars(proxy_class):
        proxy_class.__bytes__ = _fetch_bytes


def _fetch_bytes(proxy: Any) -> bytes:
    # bytes are an immutable builtin: rpyc returns them by value
    return object.__getattribute__(proxy, "____conn__").builtins.bytes(proxy)


# Tags brine leaves unused: its own end at 0x1b, its small integers take 0x20-0xef.
_LIST_TAG = b"\xf0"
_ENUM_TAG = b"\xf1"
_SGE_TAG = b"\xf2"
_ENUMS: dict[str, type] = {}  # ndk's enumerations by class name, the same on both ends


def _dump_sge(sge: Any, stream: list) -> None:
    from rpyc.core import brine

    stream.append(_SGE_TAG)
    brine._dump((sge.virtual_address, sge.length, sge.memory_region_token), stream)


def _load_sge(stream: Any) -> Any:
    import ndk
    from rpyc.core import brine

    return ndk.Sge(*brine._load(stream))


def _dump_enum(obj: enum.IntEnum | enum.IntFlag, stream: list) -> None:
    from rpyc.core import brine

    stream.append(_ENUM_TAG)
    brine._dump((type(obj).__name__, int(obj)), stream)


def _load_enum(stream: Any) -> Any:
    from rpyc.core import brine

    name, value = brine._load(stream)
    return _ENUMS[name](value)
_LENGTH = struct.Struct("!I")


def _dump_list(obj: list, stream: list) -> None:
    from rpyc.core import brine

    stream.append(_LIST_TAG + _LENGTH.pack(len(obj)))
    for item in obj:
        brine._dump(item, stream)


def _load_list(stream: Any) -> list:
    from rpyc.core import brine

    (length,) = _LENGTH.unpack(stream.read(_LENGTH.size))
    return [brine._load(stream) for _ in range(length)]


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

    send_ndk_values_by_value()
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
