"""Test setup for the pure-Python parts of the ``ndk`` package.

Why a fake ``ndk``: the real ``python/ndk/__init__.py`` imports the compiled extension
``ndk._core``, which these tests must not need (they test the plugin, runner, CLI and report,
not the provider). ``fake_ndk/ndk/__init__.py`` replaces only that ``__init__``: it defines a
tiny in-memory API (``open_adapter``, ``providers``, ``KnobsNotSupported``, ``NdkError``) and
appends the real ``python/ndk`` directory to its ``__path__``, so ``ndk.testing``,
``ndk.conformance``, ``ndk.cli``, ``ndk._report`` and ``ndk.quirks`` are the real files, unmodified
and imported under their real names.

It works by putting ``fake_ndk`` first on ``sys.path`` before anything imports ``ndk``; this
conftest is loaded before the test modules, and the subprocesses the runner tests start get the
same order through ``PYTHONPATH`` (``fake_ndk_env``). pytester runs in-process share this
interpreter, hence the same fake.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

FAKE_ROOT = Path(__file__).resolve().parent / "fake_ndk"

sys.path.insert(0, str(FAKE_ROOT))
if "ndk" in sys.modules and not getattr(sys.modules["ndk"], "IS_FAKE", False):
    # Only possible if something (e.g. an installed pytest11 entry point) imported the real
    # package before this conftest: the tests would then silently need the extension.
    raise RuntimeError(
        "the real ndk package was imported before tests/python/conftest.py; "
        "run these tests with -p no:ndk.testing"
    )

import ndk  # noqa: E402  (the fake, now that FAKE_ROOT comes first)

assert getattr(ndk, "IS_FAKE", False), ndk.__file__


@pytest.fixture
def fake_ndk():
    """The fake ``ndk`` module, with its record of opened adapters reset."""
    ndk.opened.clear()
    yield ndk
    ndk.opened.clear()


@pytest.fixture
def fake_ndk_env(monkeypatch):
    """Make subprocesses import the fake ``ndk`` first (pytester.run inherits os.environ)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(FAKE_ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.delenv("NDK_SCENARIOS", raising=False)


SCENARIO_CONFTEST = 'pytest_plugins = ["ndk.testing"]\n'


@pytest.fixture
def scenarios(pytester):
    """A scenarios directory (the pytester dir) whose conftest loads ``ndk.testing``.

    Returns a function ``write(**modules)`` that writes test modules into it.
    """
    pytester.makeconftest(SCENARIO_CONFTEST)

    def write(**modules: str) -> Path:
        pytester.makepyfile(**modules)
        return pytester.path

    return write
