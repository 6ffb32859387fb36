"""Exceptions of the ndk package."""


class NdkError(Exception):
    """An NDK call failed: ``.status`` is the :class:`ndk.Status` it returned."""

    def __init__(self, status, message=None):
        from ._status import Status

        self.status = Status(int(status) & 0xFFFFFFFF)
        super().__init__(message or str(self.status))


class ObjectClosedError(ValueError):
    """A method was called on an NDK object (or adapter) that is closed."""


class KnobsNotSupported(ValueError):
    """The provider does not accept a knob it was given (it has no such knob, or no knobs)."""


class KnobNotFound(KnobsNotSupported, AttributeError):
    """Reading a knob the provider does not have (``adapter.knobs.name``): an AttributeError, as
    for any missing attribute, and a KnobsNotSupported, so a scenario that needs it is skipped."""


class ValidationRequired(RuntimeError):
    """A call that needs the validation layer (an ``ndk.testing.raw`` function) was made on an
    object of an adapter opened without it (``ndk.open_adapter(..., validate=True)``)."""
