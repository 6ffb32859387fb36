"""pytest plugin for tests/vm/repeat-scenario.sh: every selected test runs NDK_REPEAT times
(a parameter of its own, as pytest-repeat does), so one session loops a scenario."""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def _ndk_repeat_step(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.hookimpl(trylast=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    count = int(os.environ.get("NDK_REPEAT", "1"))
    if count > 1:
        metafunc.fixturenames.append("_ndk_repeat_step")
        metafunc.parametrize("_ndk_repeat_step", range(count), indirect=True,
                             ids=[f"run{i + 1}" for i in range(count)])
