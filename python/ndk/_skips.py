"""The kinds of skip: every skip's reason begins with its kind, ``"KIND: why"``.

A conformance report that only says "139 skipped" hides whether the provider lacks something
(its adapter says so), whether its team wrote the skip down (an expectations file), or whether
the scenario could not be set up on it (a test knob only some providers have).  The
``ndk.testing`` plugin gives every skip one of these kinds, and the report counts them apart
per provider (``ndk._report.format_skip_kinds``):

* ``capability``: the adapter reports that it lacks what the scenario needs (an adapter flag,
  a limit of NDK_ADAPTER_INFO, an NDK version) -- the plugin's ``requires()``, and a
  scenario's own ``pytest.skip`` unless it gives another kind;
* ``expectation``: an entry of an expectations file (docs/expectations.md);
* ``knob``: the provider lacks a test knob the scenario sets (``ndk.KnobsNotSupported``);
* ``option``: the run's own options leave the scenario nothing to check
  (``--ndk-no-validate``, a ``--ndk-peer`` the provider cannot reach);
* ``environment``: this host cannot run it (the provider's device is not here).

An expected failure (xfail) is not a skip; the report counts it beside them as ``xfail``.
Kept apart from the plugin so that the report can read the kinds without pytest.
"""

from __future__ import annotations

CAPABILITY = "capability"
EXPECTATION = "expectation"
KNOB = "knob"
OPTION = "option"
ENVIRONMENT = "environment"
KINDS = (CAPABILITY, EXPECTATION, KNOB, OPTION, ENVIRONMENT)
XFAIL = "xfail"  # an expected failure, as the runner records it ("xfail: REASON")
UNCLASSIFIED = "unclassified"  # a skip no one gave a kind (a module skipped at collection)


def skip_reason(kind: str, text: str) -> str:
    """``text`` as the reason of a skip of ``kind``."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of skip {kind!r} (one of {', '.join(KINDS)})")
    return f"{kind}: {text}"


def has_kind(reason: str) -> bool:
    """The reason already begins with a kind."""
    return reason.split(":", 1)[0] in KINDS


def kind_of(message: str | None) -> str:
    """The kind of a skipped record's message (``XFAIL`` for an expected failure,
    ``UNCLASSIFIED`` for a reason without a kind)."""
    head = (message or "").split(":", 1)[0]
    if head == XFAIL:
        return XFAIL
    return head if head in KINDS else UNCLASSIFIED
