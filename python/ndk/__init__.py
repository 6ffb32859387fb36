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

The validation layer (docs/validation.md) checks both sides of the NDK contract at run time:
``ndk.open_adapter("soft", validate=True)``, then ``adapter.violations()``; ``ndk.rules()``
lists what it checks.
"""

import typing as _typing
from typing import Any as _Any
from typing import Callable as _Callable
from typing import Mapping as _Mapping
from typing import Optional as _Optional

from . import _knobs
from ._capabilities import NdkCapabilities
from ._connection import AddressResult, ConnectionData
from ._constants import (AdapterFlag, CqNotify, MrFlag, NdResult, NdResultStatus, NdStatus,
                         ObjectType, Oid, OpFlag, OpType, RdmaTechnology)
from ._errors import (InheritedAdapterError, KnobsNotSupported, KnobValueError, NdkError,
                      ObjectClosedError, ValidationRequired)
from ._knobs import Knobs
from ._knobs import knob_pairs as _knob_pairs
from ._oid import ConnectionEntry, LocalEndpointEntry, OidHeader, OidResult
from ._status import Status

# The classes of the compiled extension ndk._core, bound on first use (__getattr__ below): the
# package imports without it, so that its pytest plugin (ndk.testing, loaded into every pytest
# run on a machine where the package is installed) cannot break an unrelated run when the
# extension does not load (a newer Python, a broken build).
_COMPILED = ("Adapter", "AdapterInfo", "AdapterInfoQuery", "Call", "Connector", "Cq", "Lam",
             "LamCall", "Listener", "Mdl", "Mr", "Mw", "Object", "Pd", "Qp", "Result", "ResultEx",
             "Rule", "Sge", "SharedBuffer", "SharedEndpoint", "Srq", "ValidationSession", "Violation")

if _typing.TYPE_CHECKING:
    from . import testing as testing
    from ._core import (Adapter, AdapterInfo, AdapterInfoQuery, Call, Connector, Cq, Lam,
                        LamCall, Listener, Mdl, Mr, Mw, Object, Pd, Qp, Result, ResultEx, Rule,
                        Sge, SharedBuffer, SharedEndpoint, Srq, ValidationSession, Violation)

try:  # written by CMake, in the build tree and in the installed package
    from ._build_info import VERSION as __version__
except ImportError:  # the package's sources used without a build
    __version__ = "0+unknown"

__all__ = [
    "Adapter", "AdapterFlag", "AdapterInfo", "AdapterInfoQuery", "AddressResult", "Call",
    "ConnectionData", "ConnectionEntry", "Connector", "Cq", "CqNotify", "InheritedAdapterError", "Knobs",
    "KnobsNotSupported", "KnobValueError", "Lam", "LamCall", "Listener", "LocalEndpointEntry",
    "Mdl", "Mr", "MrFlag", "Mw", "NdkCapabilities", "NdkError", "NdResult", "NdResultStatus", "NdStatus", "Object", "ObjectClosedError", "ObjectType", "Oid",
    "OidHeader", "OidResult", "OpFlag", "OpType", "Pd", "Qp", "RdmaTechnology", "Result",
    "ResultEx", "Rule", "Sge", "SharedBuffer", "SharedEndpoint", "Srq", "Status",
    "ValidationRequired", "ValidationSession", "Violation", "alloc", "open_adapter", "providers", "rules",
    "set_validate_default", "validate_default",
]

# Whether ndk.open_adapter validates when not told (validate=None): off, so that benchmarks,
# `ndk perf` and plain scripts run the provider bare; the pytest plugin (ndk.testing) turns it
# on for scenarios (--ndk-validate, the default there).
_validate_default = False

# Called with every adapter ndk.open_adapter opened (ndk.testing collects the validated ones'
# sessions, to fail a scenario that left violations).  Internal to the package.
_open_hooks: list[_Callable[["Adapter"], None]] = []


def providers() -> list[str]:
    """Names of the providers that can be opened here (others load by .so path)."""
    return list(_compiled().providers())


def _run_scoped_knobs(provider: str, options: _Mapping[str, object]) -> list[str]:
    """The knobs a run sets to a name of its own for an adapter of ``provider`` with
    ``options``, as the provider declares them (the soft provider: shm_fabric with
    transport=shm, or soft:shm, when the options name none).  NdkError when the provider does
    not load."""
    text = "".join(f"{key}={value}\n" for key, value in options.items())
    return list(_compiled().run_scoped_knobs(provider, text))


def rules() -> list["Rule"]:
    """Every rule of the validation layer (ndk.Rule: id, side, severity, section, summary), in
    the order of docs/validation.md."""
    return list(_compiled().rules())


def validate_default() -> bool:
    """Whether ndk.open_adapter validates when called without ``validate`` (False unless the
    pytest plugin turned it on)."""
    return _validate_default


def set_validate_default(validate: bool) -> bool:
    """Set what ndk.open_adapter does when called without ``validate``; returns the previous
    setting.  The pytest plugin sets it from --ndk-validate / --ndk-no-validate."""
    global _validate_default
    if not isinstance(validate, bool):
        raise TypeError(f"set_validate_default takes a bool, not {type(validate).__name__}")
    previous, _validate_default = _validate_default, validate
    return previous


def open_adapter(provider: str = "soft", *, version: tuple[int, int] = (2, 0),
                 validate: _Optional[bool] = None, **knobs: _Any) -> "Adapter":
    """Open an NDK adapter on a new miniport of `provider` (a name or a path to a provider
    shared object), asking for NDK `version` = (major, lowest acceptable minor).

    Knobs are keyword arguments (see docs/knobs.md): create_mode="pending", max_cq_depth=16,
    address="192.0.2.1", ...  Raises ndk.NdkError (e.g. .status == Status.BAD_VERSION) when the
    open fails, ndk.KnobsNotSupported when the provider has no such knob, ndk.KnobValueError
    (a ValueError and an NdkError, .status INVALID_PARAMETER) when it refuses a knob's value.

    validate=True opens it through the validation layer (docs/validation.md), which records
    every contract violation: adapter.violations().  None (the default) means
    ndk.validate_default(): off, except in scenarios run by the pytest plugin.  The layer's own
    option validate_timeout_ms=N (how long a pending call may wait for its completion) is a
    keyword like the knobs.
    """
    major, minor = version
    validate = _validate_default if validate is None else bool(validate)
    if not validate:
        layer_options = sorted(key for key in knobs if key.startswith("validate_"))
        if layer_options:
            raise ValueError(f"{', '.join(layer_options)}: an option of the validation layer, "
                             "which this adapter is opened without (pass validate=True)")
    try:
        adapter = _compiled().Adapter._open(provider, _knob_pairs(knobs),
                                            (int(major), int(minor)), validate)
    except NdkError as error:
        if type(error) is not NdkError:  # KnobsNotSupported is not one; subclasses stay
            raise
        raise _knobs.open_error(error, knobs) from None
    for hook in list(_open_hooks):
        hook(adapter)
    return adapter


def alloc(size: int) -> "SharedBuffer":
    """`size` bytes, zero-filled, that a peer process can map (ndk.SharedBuffer: a sealed
    memfd).  Registered as any buffer; over soft's shm transport a Send, Write or Read from or
    into it is copied with memcpy through the peer's mapping instead of process_vm_readv/writev
    (docs/transport.md, "Zero-copy").  ValueError for 0, OSError when the kernel refuses."""
    return _compiled().SharedBuffer(size)


def _compiled() -> _Any:
    """The compiled extension ndk._core, imported on first use; ImportError in one line saying
    what to do when it cannot load."""
    import importlib

    try:
        return importlib.import_module("._core", __name__)
    except ImportError as error:
        import sys

        raise ImportError(
            f"ndk's compiled extension ndk._core does not load in Python "
            f"{sys.version_info.major}.{sys.version_info.minor} ({error}); rebuild the harness "
            "or reinstall its package for this Python") from error


def __getattr__(name: str) -> _Any:
    if name in _COMPILED:
        value = getattr(_compiled(), name)
        globals()[name] = value  # later lookups do not come here
        return value
    # ndk.testing (the pytest plugin, and connect_pair) is imported on first use, so that
    # `import ndk` never imports pytest.
    if name == "testing":
        import importlib

        return importlib.import_module(".testing", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    # The package's public names and its module attributes; not the typing helpers it uses.
    dunders = {name for name in globals() if name.startswith("__")}
    return sorted(set(__all__) | {"testing"} | dunders)
