"""Arguments of the wrong type or out of range name the parameter and its range (bindings/
py_support.hpp, name_argument_errors), never pybind11's "incompatible function arguments"
text: a sweep over every function of ndk._core, and the cases the issue named."""

import array
import re

import pytest

import ndk
from ndk import _core

PYBIND_TEXT = ("incompatible function arguments", "PYBIND11", "Unable to cast")


def split_top(text):
    parts, depth, current = [], 0, ""
    for c in text:
        if c == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        depth += c in "[(" 
        depth -= c in "])"
        current += c
    if current.strip():
        parts.append(current.strip())
    return parts


def parameters(function):
    """[(name, type text)] from pybind11's signature line, self excluded."""
    line = (function.__doc__ or "").split("\n")[0]
    match = re.match(r"^\w+\((.*)\)( -> .*)?$", line)
    if not match:
        return None
    out = []
    for p in split_top(match.group(1)):
        name, _, rest = p.partition(": ")
        out.append((name, rest.split(" = ")[0]))
    return out


def functions():
    """(owner name, function name, callable for (self, *args)) for every bound function."""
    for cls_name in dir(_core):
        owner = getattr(_core, cls_name)
        if isinstance(owner, type):
            for name, member in vars(owner).items():
                if isinstance(member, staticmethod):
                    yield cls_name, name, member.__func__, True
                # (Operators answer NotImplemented to a wrong type, by design.)
                elif (callable(member) and parameters(member) is not None
                      and name not in ("__eq__", "__ne__", "__hash__")):
                    yield cls_name, name, member, name == "__init__"
    for name in dir(_core.raw):
        f = getattr(_core.raw, name)
        if callable(f) and parameters(f) is not None:
            yield "raw", name, f, True


@pytest.fixture(scope="module")
def zoo():
    """One instance of every class a parameter may name (loading only: nothing is called)."""
    with ndk.open_adapter("soft", address="192.0.2.77") as ad:
        pd = ad.create_pd().get(timeout=5)
        cq = ad.create_cq(8).get(timeout=5)
        mr = pd.create_mr().get(timeout=5)
        buf = bytearray(4096)
        mr.register(buf).get(timeout=5)
        mdl = ndk.Mdl(buf)
        things = {
            "Adapter": ad, "Pd": pd, "Cq": cq, "Mr": mr, "Mw": pd.create_mw().get(timeout=5),
            "Srq": pd.create_srq(8).get(timeout=5),
            "Qp": pd.create_qp(cq, cq).get(timeout=5),
            "Connector": ad.create_connector().get(timeout=5),
            "Listener": ad.create_listener().get(timeout=5),
            "SharedEndpoint": ad.create_shared_endpoint(("192.0.2.77", 0)).get(timeout=5),
            "Mdl": mdl, "Sge": mr.sge(0, 8), "Call": ad.create_pd(), "Object": pd,
            "AdapterInfo": ad.query_info(), "Rule": ndk.rules()[0],
            "Violation": ndk.Violation("R", "o", "c", "m", "1.0"),
        }
        yield things


def valid(type_text, zoo):
    """An argument of `type_text` that loads."""
    if type_text.startswith("ndk._core."):
        return zoo.get(type_text.split(".")[-1], None)
    return {"int": 0, "bool": False, "str": "x", "float": 0.0, "buffer": bytearray(8),
            "tuple": (), "ndk.Status": 0}.get(type_text, None) if not type_text.startswith(
        ("List[", "Tuple[", "Optional[")) else (
        [] if type_text.startswith("List[") else None if type_text.startswith("Optional[") else
        ("192.0.2.1", 1) if type_text == "Tuple[str, int]" else (1, 0))


def calls(zoo):
    """(label, function, args, parameter, bad value, expected exception)."""
    for owner, name, function, unbound in functions():
        params = parameters(function)
        if params is None:
            continue
        if name == "__init__":  # through the class: a constructed instance is not re-initialized
            function, self_arg, params = getattr(_core, owner), None, params[1:]
        elif not unbound:
            if not params or params[0][0] != "self":
                continue
            self_arg = zoo.get(owner)
            if self_arg is None:
                continue
            params = params[1:]
        else:
            self_arg = None
        base = [valid(t, zoo) for _, t in params]
        for i, (param, type_text) in enumerate(params):
            cases = []
            if type_text == "int":
                cases = [(-1, ValueError), (2**64, OverflowError), ("x", TypeError)]
            elif type_text.startswith("ndk._core.") and type_text not in ("ndk._core.Object",):
                cases = [("x", TypeError)]
            for bad, expected in cases:
                args = list(base)
                args[i] = bad
                if self_arg is not None:
                    args.insert(0, self_arg)
                yield f"{owner}.{name}({param}={bad!r})", function, args, param, expected


def test_every_function_names_the_parameter_of_a_bad_argument(zoo):
    checked, problems = 0, []
    for label, function, args, param, expected in calls(zoo):
        try:
            function(*args)
        except expected as error:
            message = str(error)
            if any(text in message for text in PYBIND_TEXT) or param not in message:
                problems.append(f"{label}: {type(error).__name__}: {message}")
            checked += 1
            continue
        except Exception as error:  # noqa: BLE001 - reported below
            problems.append(f"{label}: {type(error).__name__} (expected {expected.__name__}): "
                            f"{error}")
            continue
        problems.append(f"{label}: no exception")
    assert checked > 150, checked
    assert not problems, "\n".join(problems)


def test_the_cases_the_issue_named():
    with ndk.open_adapter("soft") as ad:
        with pytest.raises(ValueError, match=r"cq_depth must be an int in 0\.\.4294967295"):
            ad.create_cq(-1)
        with pytest.raises(OverflowError, match=r"cq_depth must be an int in 0\.\.4294967295"):
            ad.create_cq(2**32)
        with pytest.raises(TypeError, match=r"cq_depth must be an int .*, not str"):
            ad.create_cq("deep")
        with pytest.raises(TypeError, match="affinity must be None, a CPU mask"):
            ad.create_cq(8, affinity="x")
        with pytest.raises(OverflowError, match="affinity group must be an int in 0..65535"):
            ad.create_cq(8, affinity=(1, 70000))
        pd = ad.create_pd().get(timeout=5)
        mr = pd.create_mr().get(timeout=5)
        mr.register(bytearray(64)).get(timeout=5)
        with pytest.raises(ValueError, match=r"ndk\.Mr\.sge\(\): offset must be an int"):
            mr.sge(-1, 8)
        with pytest.raises(TypeError, match=r"receive_cq must be an ndk\.Cq, not str"):
            pd.create_qp("not a cq", None)
        cq = ad.create_cq(8).get(timeout=5)
        qp = pd.create_qp(cq, cq).get(timeout=5)
        with pytest.raises(TypeError, match=r"requests\[0\] must be an ndk\.Sge .*, not int"):
            qp.post_many("write", [1, 2, 3])
        with pytest.raises(TypeError, match=r"sgl\[1\] must be an ndk\.Sge, not str"):
            qp.send([mr.sge(0, 8), "not an sge"])
        with pytest.raises(TypeError, match=r"expected records of dtype Qp\.request_dtype\(\)"):
            qp.post_many("write", array.array("d", [0.0] * 5))  # 40 bytes, but float64
        with pytest.raises(TypeError, match=r"expected records of dtype Cq\.result_dtype\(\)"):
            cq.poll_into(array.array("d", [0.0] * 5))
        with pytest.raises(OverflowError, match=r"adapter_page_array\[0\] must be an int"):
            qp.fast_register(mr, [2**64], 0, 8, 0x1000)


def test_a_float64_numpy_array_is_refused_naming_the_dtype():
    np = pytest.importorskip("numpy")
    with ndk.open_adapter("soft") as ad:
        pd = ad.create_pd().get(timeout=5)
        cq = ad.create_cq(8).get(timeout=5)
        qp = pd.create_qp(cq, cq).get(timeout=5)
        with pytest.raises(TypeError, match="expected an array of dtype Qp.request_dtype()"):
            qp.post_many("write", np.zeros(5, dtype=np.float64))
