"""The package's values show well everywhere (python/ndk/_display.py): every public type of
``ndk`` goes through repr, pprint and a pytest assertion diff; the values a person looks at have
``_repr_pretty_`` (IPython) and ``_repr_html_`` (notebooks); ``dir(ndk)`` holds only the
package's names; a failed ``.get()`` names its NDK function.

The public types are enumerated from the package (``ndk.__all__``), not picked: a type added
without an example here fails :func:`test_every_public_type_has_an_example`.
"""

from __future__ import annotations

import enum
import inspect
import pprint
import subprocess
import sys
import textwrap

import pytest

import ndk
from ndk import Status

PUBLIC_TYPES = sorted((getattr(ndk, name) for name in ndk.__all__
                       if inspect.isclass(getattr(ndk, name))), key=lambda cls: cls.__name__)

# The values a person looks at: each has _repr_pretty_ and _repr_html_.
LOOKED_AT = {"AdapterInfo", "AdapterInfoQuery", "AddressResult", "Call", "ConnectionData",
             "Lam", "LamCall", "OidResult", "Result", "ResultEx", "Rule", "Sge", "Violation"}


@pytest.fixture(scope="module")
def examples():
    """One value of each public type, from a validated soft adapter (objects, calls, results,
    a violation, OID answers) or built directly (exceptions, enumerations, plain values)."""
    with ndk.open_adapter("soft", validate=True, address="192.0.2.61") as ad:
        pd = ad.create_pd().get(timeout=5)
        cq = ad.create_cq(cq_depth=8).get(timeout=5)
        qp = pd.create_qp(cq, cq).get(timeout=5)
        qp.receive([], request_context=7)
        qp.receive([], request_context=8)
        qp.flush()  # both receives complete, cancelled
        results = cq.wait_results(1, timeout=5, ex=False) + cq.wait_results(1, timeout=5)
        mr = pd.create_mr().get(timeout=5)
        buffer = bytearray(4096)
        mdl = ndk.Mdl(buffer)
        lam_call = ad.build_lam(mdl)
        lam = lam_call.get(timeout=5)
        values = {
            "Adapter": ad, "AdapterInfo": ad.query_info(),
            "AdapterInfoQuery": ad.query_adapter_info(), "Call": ad.create_cq(cq_depth=4),
            "Connector": ad.create_connector().get(timeout=5), "Cq": cq,
            "Knobs": ad.knobs, "Lam": lam, "LamCall": lam_call,
            "Listener": ad.create_listener().get(timeout=5), "Mdl": mdl, "Mr": mr,
            "Mw": pd.create_mw().get(timeout=5), "Object": pd, "Pd": pd, "Qp": qp,
            "Result": results[0], "ResultEx": results[1], "NdResult": results[1].nd_result(),
            "Rule": ndk.rules()[0],
            "Sge": ndk.Sge(0x1000, 64, 0x1234), "SharedBuffer": ndk.alloc(4096),
            "SharedEndpoint": ad.create_shared_endpoint(("192.0.2.61", 0)).get(timeout=5),
            "Srq": pd.create_srq(srq_depth=4).get(timeout=5), "ValidationSession": ad.validation,
            "Violation": ndk.Violation("CQ-CREATE-DEPTH", "cq#1", "NdkCreateCq",
                                       "CqDepth 0", "1.4", "consumer", "error"),
            "OidResult": ad.query_oid(ndk.Oid.NDK_LOCAL_ENDPOINTS),
            "OidHeader": ndk.OidHeader(1, 1, 16),
            "NdkCapabilities": ad.query_ndk_capabilities(),
            "ConnectionEntry": ndk.ConnectionEntry(("192.0.2.1", 1), ("192.0.2.2", 2), False, 1),
            "LocalEndpointEntry": ndk.LocalEndpointEntry(("192.0.2.1", 1), False, True, 1),
            "ConnectionData": ndk.ConnectionData(Status.SUCCESS, 1, 1, b"hi", 2),
            "AddressResult": ndk.AddressResult(Status.SUCCESS, 16, ("192.0.2.1", 1)),
            "NdkError": ndk.NdkError(Status.INVALID_PARAMETER, "NdkCreateCq: STATUS_X"),
            "KnobValueError": ndk.KnobValueError(Status.INVALID_PARAMETER, "bad"),
            "KnobsNotSupported": ndk.KnobsNotSupported("no knobs"),
            "ObjectClosedError": ndk.ObjectClosedError("closed"),
            "InheritedAdapterError": ndk.InheritedAdapterError("opened by process 1 before fork()"),
            "ValidationRequired": ndk.ValidationRequired("raw"),
        }
        for cls in PUBLIC_TYPES:
            if issubclass(cls, enum.Enum):
                values[cls.__name__] = next(iter(cls))
        yield values
        lam.release()


def test_every_public_type_has_an_example(examples):
    assert {cls.__name__ for cls in PUBLIC_TYPES} == set(examples)
    for cls in PUBLIC_TYPES:
        assert isinstance(examples[cls.__name__], cls), cls


@pytest.mark.parametrize("name", [cls.__name__ for cls in PUBLIC_TYPES])
def test_every_public_type_shows_in_repr_and_pprint(examples, name):
    value = examples[name]
    text = repr(value)
    assert text and "object at 0x" not in text, text  # its own repr, not object's
    # pprint prints the repr (on one line when it has room: wide enough)
    assert pprint.pformat(value, width=100_000) == text
    assert pprint.pformat([value, value], width=100_000).count(text) == 2
    assert pprint.pformat(value)  # and the default width folds it where it can


@pytest.mark.parametrize("name", sorted(LOOKED_AT))
def test_the_values_a_person_looks_at_show_in_ipython_and_notebooks(examples, name):
    from IPython.lib.pretty import pretty

    value = examples[name]
    fields = ndk._display.fields(value)
    assert fields, name
    shown = pretty(value, max_width=40)
    assert shown.startswith(f"ndk.{type(value).__name__}(")
    for field, _ in fields:
        assert f"{field}=" in shown
    html = value._repr_html_()
    assert html.startswith("<table>") and f"ndk.{type(value).__name__}" in html
    assert all(f"<th style=\"text-align:left\">{field}</th>" in html for field, _ in fields)


def test_adapter_info_shows_its_flags_as_the_enumeration(examples):
    info = examples["AdapterInfo"]
    assert f"adapter_flags={info.adapter_flags!r}" in repr(info)
    assert "AdapterFlag." in repr(info) and "RdmaTechnology." in repr(info)


def test_an_oid_answer_names_its_oid_and_decodes_what_it_carries(examples):
    result = examples["OidResult"]
    text = repr(result)
    assert result.oid is ndk.Oid.NDK_LOCAL_ENDPOINTS
    assert text.startswith("OidResult(oid=Oid.NDK_LOCAL_ENDPOINTS, status=Status.SUCCESS")
    assert "count=" in text and "raw=" not in text and str(int(result.oid)) not in text
    statistics = ndk.OidResult.parse(ndk.Oid.NDK_STATISTICS, bytes(8 + 30 * 8))
    assert "counters={'Connect': 0," in repr(statistics) and "Reserved" not in repr(statistics)
    assert "oid=0xfc0402ff" in repr(ndk.OidResult.parse(0xFC0402FF, b""))


def test_dir_of_the_package_holds_only_its_names():
    names = [name for name in dir(ndk) if not name.startswith("__")]
    assert set(names) == set(ndk.__all__) | {"testing"}
    for helper in ("Any", "Callable", "Optional", "TYPE_CHECKING"):
        assert helper not in dir(ndk)


def test_a_failed_get_names_its_call_and_keeps_its_status():
    with ndk.open_adapter("soft") as ad:
        with pytest.raises(ndk.NdkError) as failure:
            ad.create_cq(cq_depth=0).get(timeout=5)
    assert failure.value.status == Status.INVALID_PARAMETER
    assert str(failure.value) == "NdkCreateCq: STATUS_INVALID_PARAMETER (0xC000000D)"


def test_an_assertion_about_violations_shows_a_readable_diff(tmp_path):
    """pytest -vv on a failed comparison of violations prints them (it printed
    "representation of details failed" while pprint could not show them)."""
    (tmp_path / "test_diff.py").write_text(textwrap.dedent("""\
        import ndk

        def test_diff():
            with ndk.open_adapter("soft", validate=True, misbehave="header_version") as ad:
                ad.create_pd().get(timeout=5)
                assert ad.violations() == []
        """))
    run = subprocess.run([sys.executable, "-m", "pytest", "-vv", "-p", "no:cacheprovider",
                          "-p", "no:ndk.testing", str(tmp_path / "test_diff.py")],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "representation of details failed" not in run.stdout
    assert "Left contains one more item: <ndk.Violation " in run.stdout, run.stdout
