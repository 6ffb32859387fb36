"""ndk: the NDK (Network Direct Kernel) provider model on Linux, scriptable from Python.

    import ndk
    from ndk import Status
    ad = ndk.open_adapter("soft", create_mode="pending")     # knobs as keyword arguments
    call = ad.create_cq(cq_depth=64)                          # NdkCreateCq -> ndk.Call
    assert call.status == Status.PENDING
    cq = call.get(timeout=1.0)                                # waits; raises ndk.NdkError

Every method is an NDK function in snake_case without the Ndk prefix (NdkCreateQpWithSrq ->
pd.create_qp_with_srq); keyword arguments are its parameters in snake_case without the
p/pp/n prefixes (CqDepth -> cq_depth).  See README.md and docs/.
"""

from . import _adapter, _connection, _core, _oid
from ._connection import AddressResult, ConnectionData
from ._constants import (AdapterFlag, CqNotify, MrFlag, ObjectType, Oid, OpFlag, OpType,
                         RdmaTechnology)
from ._core import (Adapter, AdapterInfo, AdapterInfoQuery, Call, Connector, Cq, Lam, LamCall,
                    Listener, Mdl, Mr, Mw, Object, Pd, Qp, Result, ResultEx, Sge,
                    SharedEndpoint, Srq)
from ._errors import KnobsNotSupported, NdkError, ObjectClosedError
from ._knobs import Knobs, options_text
from ._oid import ConnectionEntry, LocalEndpointEntry, OidHeader, OidResult
from ._status import Status

__all__ = [
    "Adapter", "AdapterFlag", "AdapterInfo", "AdapterInfoQuery", "AddressResult", "Call",
    "ConnectionData", "ConnectionEntry", "Connector", "Cq", "CqNotify", "Knobs",
    "KnobsNotSupported", "Lam", "LamCall", "Listener", "LocalEndpointEntry", "Mdl", "Mr",
    "MrFlag", "Mw", "NdkError", "Object", "ObjectClosedError", "ObjectType", "Oid", "OidHeader",
    "OidResult", "OpFlag", "OpType", "Pd", "Qp", "RdmaTechnology", "Result", "ResultEx", "Sge",
    "SharedEndpoint", "Srq", "Status", "open_adapter", "providers",
]


def providers():
    """Names of the providers that can be opened here (others load by .so path)."""
    return list(_core.providers())


def open_adapter(provider="soft", *, version=(2, 0), **knobs):
    """Open an NDK adapter on a new miniport of `provider` (a name or a path to a provider
    shared object), asking for NDK `version` = (major, lowest acceptable minor).

    Knobs are keyword arguments (see docs/knobs.md): create_mode="pending", max_cq_depth=16,
    address="192.0.2.1", ...  Raises ndk.NdkError (e.g. .status == Status.BAD_VERSION) when the
    open fails, ndk.KnobsNotSupported when the provider has no such knob.
    """
    major, minor = version
    return _core.Adapter._open(provider, options_text(knobs), (int(major), int(minor)))


def _knobs_of(adapter):
    if not adapter.has_knobs:
        raise KnobsNotSupported(f"provider {adapter.provider!r} has no knobs")
    return Knobs(adapter)


Adapter.knobs = property(_knobs_of, doc="The provider's run-time knobs (ndk.Knobs).")
_adapter.install(Adapter)
_oid.install(Adapter)
_connection.install(Connector)


def __getattr__(name):
    # ndk.testing (the pytest plugin, and connect_pair) is imported on first use, so that
    # `import ndk` never imports pytest.
    if name == "testing":
        import importlib

        return importlib.import_module(".testing", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
