"""Exceptions of the ndk package.

They are values: two exceptions of the same class with the same arguments compare equal (and
hash alike), and every one survives pickle (e.g. across multiprocessing or pytest-xdist).
"""


class _ValueSemantics:
    """Equality, hashing and pickling by class and arguments (a mixin of the exceptions below)."""

    args: tuple[object, ...]  # BaseException's, which every class using the mixin derives from

    def __eq__(self, other):
        if type(self) is not type(other):
            return NotImplemented
        return self.args == other.args and self._state() == other._state()

    def __hash__(self):
        return hash((type(self), self.args))

    def _state(self):
        return {}


class NdkError(_ValueSemantics, Exception):
    """An NDK call failed: ``.status`` is the :class:`ndk.Status` it returned.

    ``NdkError(status)``, ``NdkError(status, "message")`` or ``NdkError("message")``; a
    message-only NdkError has ``.status == Status.UNSUCCESSFUL`` (STATUS_UNSUCCESSFUL, NT's
    generic failure), so ``.status`` is always an ndk.Status.
    """

    def __init__(self, status=None, message=None):
        from ._status import Status

        if isinstance(status, str) and message is None:
            status, message = None, status
        self.status = Status.UNSUCCESSFUL if status is None else Status(int(status) & 0xFFFFFFFF)
        super().__init__(message or str(self.status))

    def _state(self):
        return {"status": int(self.status)}

    def __reduce__(self):
        return (type(self), (int(self.status), str(self)), self._extra())

    def _extra(self):
        extra = {k: v for k, v in self.__dict__.items() if k != "status"}
        return extra or None


class ObjectClosedError(_ValueSemantics, ValueError):
    """A method was called on an NDK object (or adapter) that is closed."""


class InheritedAdapterError(ObjectClosedError):
    """A forked child used an adapter (or an object of one) that its parent opened: the child
    does not own it and may only open adapters of its own (docs/semantics.md, FORK)."""


class KnobsNotSupported(_ValueSemantics, ValueError):
    """The provider does not accept a knob it was given (it has no such knob, or no knobs)."""


class KnobNotFound(KnobsNotSupported, AttributeError):
    """Reading a knob the provider does not have (``adapter.knobs.name``): an AttributeError, as
    for any missing attribute, and a KnobsNotSupported, so a scenario that needs it is skipped."""


class KnobValueError(NdkError, ValueError):
    """The provider refused a knob's value, at ``ndk.open_adapter(..., knob=value)`` or at
    ``adapter.knobs.knob = value``: a ValueError, and an NdkError (``.status``, usually
    STATUS_INVALID_PARAMETER) for code written when an open raised NdkError."""


class ValidationRequired(RuntimeError):
    """A call that needs the validation layer (an ``ndk.testing.raw`` function) was made on an
    object of an adapter opened without it (``ndk.open_adapter(..., validate=True)``)."""
