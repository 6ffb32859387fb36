"""The package's layering: each class of the binding is whole where it is bound, and the
dependency between ndk._core and the package's Python modules goes one way.

- every method and property of a bound class comes from the binding (bindings/bind_*.cpp):
  none is a Python function set on it afterwards;
- the binding imports only the leaf modules it lists (_core._LEAF_MODULES,
  bindings/package_types.hpp), and none of those imports _core or a module outside that list.
"""

import ast
import inspect
import pathlib
import re
import types

import pytest

import ndk
from ndk import _core

ROOT = pathlib.Path(__file__).resolve().parents[2]
BINDINGS = ROOT / "bindings"
PACKAGE = ROOT / "python" / "ndk"

BOUND_CLASSES = [value for name, value in vars(_core).items()
                 if inspect.isclass(value) and value.__module__ == "ndk._core"]


def test_the_package_exports_the_bound_classes_themselves():
    for cls in BOUND_CLASSES:
        if not cls.__name__.startswith("_") and hasattr(ndk, cls.__name__):
            assert getattr(ndk, cls.__name__) is cls


@pytest.mark.parametrize("cls", BOUND_CLASSES, ids=lambda cls: cls.__name__)
def test_every_method_of_a_bound_class_comes_from_its_binding(cls):
    added = []
    for name, value in vars(cls).items():
        if isinstance(value, property):
            value = value.fget
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        # The crash-isolation recorder (ndk._isolation) wraps methods while a scenario runs;
        # what it wraps is the binding's.
        value = inspect.unwrap(value) if callable(value) else value
        if isinstance(value, types.FunctionType):  # Python code, not the binding's
            added.append(name)
    assert added == [], f"{cls.__name__}: set from Python: {added}"


def _imports_outside_type_checking(tree: ast.Module):
    """(module, names) of each import a module runs (not those under `if TYPE_CHECKING:`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            base = ("ndk." * (node.level > 0)) + (node.module or "")
            yield base.rstrip("."), [alias.name for alias in node.names]


@pytest.mark.parametrize("module", _core._LEAF_MODULES)
def test_a_leaf_module_imports_only_leaf_modules(module):
    tree = ast.parse((PACKAGE / (module.split(".")[1] + ".py")).read_text())
    for imported, names in _imports_outside_type_checking(tree):
        if imported == "ndk":  # from . import x
            targets = [f"ndk.{name}" for name in names]
        elif imported.startswith("ndk"):
            targets = [imported]
        else:
            continue  # the standard library
        for target in targets:
            assert target in _core._LEAF_MODULES, f"{module} imports {target}"


def test_the_binding_imports_only_its_leaf_modules():
    imported = set()
    for source in sorted(BINDINGS.glob("*.[ch]pp")):
        imported |= set(re.findall(r'(?:import|package_attr)\("(ndk[\w.]*)"', source.read_text()))
    assert imported, "no import of the package found: the pattern is out of date"
    assert imported - {"ndk._core"} <= set(_core._LEAF_MODULES)
