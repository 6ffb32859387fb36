"""inspect.signature works on every method of the package's classes.

pybind11 functions carry no __text_signature__ of their own; the binding derives one from
pybind11's typed first docstring line (bindings/text_signatures.cpp), which CPython reads."""

import inspect

import pytest

import ndk
from ndk import _core


def _methods():
    """(class name, attribute) for every public callable, __init__ and context-manager method
    defined by a class of ndk.__all__ (not inherited from int, Exception, enum, ...)."""
    for name in ndk.__all__:
        cls = getattr(ndk, name)
        if not isinstance(cls, type):
            continue
        for attr in sorted(dir(cls)):
            if attr.startswith("_") and attr not in ("__init__", "__enter__", "__exit__"):
                continue
            owner = next((base for base in cls.__mro__ if attr in base.__dict__), None)
            if owner is None or not owner.__module__.startswith("ndk"):
                continue
            value = inspect.getattr_static(cls, attr)
            if isinstance(value, (property, type)) or not callable(getattr(cls, attr)):
                continue
            yield name, attr


METHODS = sorted(set(_methods()))


def test_the_walk_sees_the_binding_methods():
    assert ("Pd", "create_qp") in METHODS and ("Connector", "accept") in METHODS
    assert len(METHODS) > 100


@pytest.mark.parametrize("class_name, attr", METHODS)
def test_signature(class_name, attr):
    inspect.signature(getattr(getattr(ndk, class_name), attr))


def test_signature_names_the_parameters_and_defaults():
    sig = inspect.signature(ndk.Pd.create_qp)
    assert list(sig.parameters)[:3] == ["self", "receive_cq", "initiator_cq"]
    assert sig.parameters["receive_queue_depth"].default == 64
    assert str(inspect.signature(ndk.Cq.wait_results)) == "(self, n, timeout=1.0, ex=True)"
    assert str(inspect.signature(ndk.Qp.request_array)) == "(n)"  # a static method
    pd_method = inspect.signature(ndk.open_adapter("soft").create_pd)  # bound: no self
    assert str(pd_method) == "()"


def test_help_keeps_the_typed_signature():
    assert ndk.Pd.create_qp.__doc__.startswith("create_qp(self: ndk._core.Pd, receive_cq: ")


def test_module_functions_have_signatures():
    for function in (_core.providers, _core.rules, _core.raw.arm_cq):
        inspect.signature(function)
