"""NDK_CONNECTOR: NdkCreateConnector and NdkCloseConnector (digest 1.1, 1.8)."""

from __future__ import annotations

import pytest

import ndk
from ndk.testing import OpenAdapter

from ndk.scenario import (CREATE_MODES, TIMEOUT, expect_closed, expect_created)


@pytest.mark.rule("CONNECTOR-CREATE")
@pytest.mark.digest("1.1")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_create_connector(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 1.1 (NdkCreateConnector), 1.0: SUCCESS inline or PENDING then exactly one
    completion with SUCCESS and the connector (object type Connector 8)."""
    adapter = open_adapter(create_mode=mode)
    connector = expect_created(adapter.create_connector(), mode)
    assert connector.object_type == ndk.ObjectType.CONNECTOR


@pytest.mark.rule("CONNECTOR-CLOSE-IDLE")
@pytest.mark.digest("3.5")
def test_close_idle_connector(adapter: ndk.Adapter) -> None:
    """digest 1.0, 3.5: a connector that never connected holds no endpoint; its close
    succeeds (STATUS_SUCCESS with no completion, or STATUS_PENDING and one) and it cannot be
    used afterwards."""
    connector = adapter.create_connector().get(timeout=TIMEOUT)
    expect_closed(connector.close())
    assert connector.closed and not connector.is_open


@pytest.mark.rule("CONNECTOR-INDEPENDENT")
@pytest.mark.digest("1.1")
def test_connectors_are_independent(adapter: ndk.Adapter) -> None:
    """digest 1.1, 3.5: any number of idle connectors may exist on an adapter; closing one
    leaves the others open."""
    connectors = [adapter.create_connector().get(timeout=TIMEOUT) for _ in range(4)]
    expect_closed(connectors[0].close())
    assert [c.is_open for c in connectors] == [False, True, True, True]
