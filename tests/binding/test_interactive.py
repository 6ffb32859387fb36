"""What a person exploring NDK in a Python shell sees: reprs, docstrings, the README."""

import re
from pathlib import Path

import pytest

import ndk
from ndk import Status

ROOT = Path(__file__).resolve().parents[2]


def test_reprs_show_state():
    ad = ndk.open_adapter("soft")
    assert re.fullmatch(r"<ndk.Adapter provider='soft' version=2.1 open>", repr(ad))
    call = ad.create_cq(cq_depth=8)
    assert repr(call) == "<ndk.Call status=STATUS_SUCCESS completions=0 object=yes>"
    cq = call.get()
    assert repr(cq) == "<ndk.Cq open>"
    mr = ad.create_pd().get().create_mr(fast_register=True).get()
    assert repr(mr).startswith("<ndk.Mr fast_register local_token=0")
    assert "max_cq_depth=" in repr(ad.query_info())
    assert repr(ad.knobs).startswith("<ndk.Knobs of 'soft': create_mode='inline'")
    ad.close()
    assert repr(ad) == "<ndk.Adapter provider='soft' closed>" and repr(cq) == "<ndk.Cq closed>"


def test_every_method_docstring_names_its_ndk_function():
    for cls, method, ndk_name in [
        (ndk.Adapter, "create_cq", "NdkCreateCq"),
        (ndk.Adapter, "query_adapter_info", "NdkQueryAdapterInfo"),
        (ndk.Pd, "create_qp_with_srq", "NdkCreateQpWithSrq"),
        (ndk.Mr, "initialize_fast_register_mr", "NdkInitializeFastRegisterMr"),
        (ndk.Cq, "control_cq_interrupt_moderation", "NdkControlCqInterruptModeration"),
        (ndk.Srq, "modify_srq", "NdkModifySrq"),
        (ndk.Listener, "listen", "NdkListen"),
        (ndk.Listener, "next_connection", "NdkConnectEventCallback"),
        (ndk.Connector, "connect", "NdkConnect"),
        (ndk.Connector, "connect_with_shared_endpoint", "NdkConnectWithSharedEndpoint"),
        (ndk.Connector, "complete_connect_ex", "NdkCompleteConnectEx"),
        (ndk.Connector, "accept", "NdkAccept"),
        (ndk.Connector, "accept_ex", "NdkAcceptEx"),
        (ndk.Connector, "reject", "NdkReject"),
        (ndk.Connector, "get_connection_data", "NdkGetConnectionData"),
        (ndk.Connector, "get_peer_address", "NdkGetPeerAddress"),
        (ndk.Connector, "disconnect", "NdkDisconnect"),
        (ndk.Qp, "send_and_invalidate", "NdkSendAndInvalidate"),
        (ndk.Qp, "fast_register", "NdkFastRegister"),
        (ndk.Qp, "bind", "NdkBind"),
        (ndk.Qp, "read", "NdkRead"),
        (ndk.Cq, "wait_results", "NdkGetCqResultsEx"),
        (ndk.Adapter, "query_oid", "MiniportOidRequest"),
    ]:
        assert ndk_name in getattr(cls, method).__doc__, (cls, method)
    assert "Documented:" in ndk.Adapter.create_shared_endpoint.__doc__


def test_type_stubs_ship_with_the_package():
    # python/ndk/_core.pyi, kept by hand; tests/typing (CTest typing_stubtest) keeps it equal
    # to the built module.
    package = Path(ndk.__file__).parent
    stub = package / "_core.pyi"
    assert stub.exists(), "the package ships _core.pyi next to the binding"
    assert "def create_qp_with_srq(" in stub.read_text()


def test_readme_snippets_run_as_written(capsys):
    text = (ROOT / "README.md").read_text()
    snippets = re.findall(r"```python\n(.*?)```", text, re.S)
    assert snippets
    for snippet in snippets:
        scope = {}
        try:
            exec(compile(snippet, "README.md", "exec"), scope)
        finally:  # free the snippet's addresses for the next one
            for value in scope.values():
                if isinstance(value, ndk.Adapter):
                    value.close()
    assert "STATUS_PENDING (0x00000103)" in capsys.readouterr().out


def test_plugin_path_opens_the_soft_provider_library():
    from ndk import _build_info
    with ndk.open_adapter(_build_info.SOFT_PROVIDER_LIBRARY, create_mode="pending") as ad:
        assert ad.create_pd().status == Status.PENDING
