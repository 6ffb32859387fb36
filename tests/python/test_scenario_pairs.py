"""Every connected pair of the scenarios is built by one resource builder,
``ndk.scenario.resources`` (``Side``, ``connect_sides``, ``connected_pair``; the ``pair``
fixture uses it too): read from the scenario files' syntax trees, no scenario names a helper
that built pairs another way, and a connection is spelled out call by call only where
establishment is the scenario's subject (docs/scenarios.md, "Connected pairs").
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "scenarios").glob("test_*.py"))
PACKAGE = ROOT / "python" / "ndk"

# The helpers that built pairs beside the builder, and were folded into it: a scenario that
# imports or calls one of these names builds a pair its own way again.
REMOVED = {"open_listening", "make_side", "_side", "connect_qps", "link", "sides",
           "connect_pair", "Endpoint"}

# The call that ends an establishment (NdkCompleteConnect, -Ex): whoever makes it built a
# connection by hand.
COMPLETING = {"complete_connect", "complete_connect_ex"}

# ndk.scenario.connection's step-by-step establishment.
STEP_BY_STEP = {"start", "accept", "finish", "establish", "Handshake"}

# The scenarios whose subject is establishment, and so spell it out (each with why).
ESTABLISHMENT = {
    "test_connection.py": "the connection flow's rules (digest 1.8, 3.5), call by call",
    "test_pair_connection.py": "the same rules between the pair fixture's two processes",
    "test_oid.py": "OID_NDK_STATISTICS' ConnectFailure counts establishments that fail",
}

# Where the package completes a connection: the builder's one establishment (ndk._connect.join,
# which connect_pair uses too), the step-by-step helpers, and the walker (ndk walk), which
# drives the raw calls on purpose.
PACKAGE_COMPLETING = {"_connect.py", "scenario/connection.py", "walk.py"}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def called(tree: ast.AST) -> set[str]:
    """The names ``tree`` calls: ``f(...)`` gives f, ``x.f(...)`` gives f."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                names.add(node.func.id)
            elif isinstance(node.func, ast.Attribute):
                names.add(node.func.attr)
    return names


def used_attributes(tree: ast.AST) -> set[str]:
    """The attributes ``tree`` reads or calls (``x.f`` gives f, ``(x.f if c else x.g)()`` f
    and g)."""
    return {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}


def imported(tree: ast.AST, module_prefix: str = "") -> set[str]:
    """The names ``tree`` imports from modules starting with ``module_prefix``."""
    return {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            and (node.module or "").startswith(module_prefix) for alias in node.names}


def test_the_scan_sees_calls_and_imports() -> None:
    tree = ast.parse("from ndk.scenario.connection import start as s\n"
                     "x.complete_connect()\nlink(a, b)\n(y.accept_ex if ex else y.accept)()\n")
    assert called(tree) == {"complete_connect", "link"}
    assert used_attributes(tree) == {"complete_connect", "accept_ex", "accept"}
    assert imported(tree, "ndk.scenario.connection") == {"start"}
    assert imported(tree, "ndk.scenario.resources") == set()


def test_there_are_scenarios_and_establishment_ones_among_them() -> None:
    names = {path.name for path in SCENARIOS}
    assert len(names) > 10
    assert set(ESTABLISHMENT) <= names


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda path: path.name)
def test_no_scenario_builds_a_pair_beside_the_builder(path: Path) -> None:
    tree = _tree(path)
    removed = (called(tree) | imported(tree)) & REMOVED
    assert not removed, f"{path.name} uses {', '.join(sorted(removed))}: a pair is built by " \
        "ndk.scenario.resources (Side, connect_sides, connected_pair)"
    if path.name in ESTABLISHMENT:
        return
    assert not used_attributes(tree) & COMPLETING, \
        f"{path.name} completes a connection by hand: use ndk.scenario.resources, or say in " \
        "ESTABLISHMENT why establishment is this file's subject"
    assert not imported(tree, "ndk.scenario.connection") & STEP_BY_STEP, \
        f"{path.name} uses the step-by-step establishment of the establishment scenarios"


def test_the_establishment_scenarios_do_establish() -> None:
    for name in ESTABLISHMENT:
        tree = _tree(ROOT / "scenarios" / name)
        assert used_attributes(tree) & COMPLETING or imported(tree, "ndk.scenario.connection") & \
            STEP_BY_STEP, f"{name} no longer spells establishment out: drop it from ESTABLISHMENT"


def test_the_package_completes_connections_in_the_builder_and_the_walker_only() -> None:
    completing = {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
                  if used_attributes(_tree(path)) & COMPLETING}
    assert completing == PACKAGE_COMPLETING
