"""NDK_MR: NdkCreateMr, NdkRegisterMr, NdkDeregisterMr, NdkInitializeFastRegisterMr and the
token getters (digest 1.2, 1.4, 2.6)."""

from __future__ import annotations

import pytest

import ndk
from ndk import MrFlag, Status
from ndk.testing import OpenAdapter

from ndk.scenario import (CREATE_MODES, TIMEOUT, expect_created, expect_request)
from ndk.scenario.counts import expect_count_enforced, reported_count
from ndk.scenario.stated import stated

PAGE = 4096


def assert_unregistered(mr: ndk.Mr) -> None:
    """No registered range (the consumer's record of what completed).  The tokens are valid
    only after a register or initialize completes (digest 1.4); what the getters return
    before is the provider's choice (docs/semantics.md TOKENS: 0), MR-TOKENS-UNREGISTERED."""
    assert mr.length == 0


def assert_registered(mr: ndk.Mr) -> None:
    """The token getters answer the same tokens on every call (digest 1.4: valid once the
    request completed).  Local and remote token may be the same value (verbs devices use one
    key for both; the digest does not ask for two); that 0 is never one is the soft
    provider's choice (docs/semantics.md TOKENS), MR-TOKENS-UNREGISTERED's."""
    assert mr.get_local_token_from_mr() == mr.local_token
    assert mr.get_remote_token_from_mr() == mr.remote_token


# --- create ------------------------------------------------------------------------------


@pytest.mark.rule("MR-CREATE")
@pytest.mark.digest("1.2")
@pytest.mark.parametrize("fast_register", [False, True], ids=["normal", "fast-register"])
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_create_mr(open_adapter: OpenAdapter, mode: str, fast_register: bool) -> None:
    """digest 1.2 (NdkCreateMr, FastRegister TRUE or FALSE), 1.0: SUCCESS inline or PENDING
    then one completion; the MR is not yet registered."""
    adapter = open_adapter(create_mode=mode)
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    mr = expect_created(pd.create_mr(fast_register=fast_register), mode)
    assert mr.object_type == ndk.ObjectType.MR
    assert mr.fast_register == fast_register
    assert_unregistered(mr)


@pytest.mark.rule("MR-CREATE-RESOURCES")
@pytest.mark.digest("3.7")
@pytest.mark.reference("CAPS")
def test_create_mr_beyond_max_mr_count(open_adapter: OpenAdapter) -> None:
    """digest 3.7 (NDIS_NDK_CAPABILITIES MaxMrCount: the MRs the miniport holds) and 1.2
    (NdkCreateMr: INSUFFICIENT_RESOURCES, i/a). docs/semantics.md CAPS (a reference choice):
    MaxMrCount creates succeed (stated); the next fails and gives no object (stated), with
    INSUFFICIENT_RESOURCES; after a close, a create succeeds again."""
    adapter = open_adapter()
    count = reported_count(adapter, "max_mr_count")
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    expect_count_enforced(count, lambda: pd.create_mr(fast_register=False))


# --- register / deregister ---------------------------------------------------------------


@pytest.mark.rule("MR-REGISTER")
@pytest.mark.digest("1.4")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_register(open_adapter: OpenAdapter, mode: str, buffer: bytearray) -> None:
    """digest 1.4 (NdkRegisterMr): SUCCESS inline or PENDING then one completion; the
    tokens are valid after the register completes."""
    adapter = open_adapter(request_mode=mode)
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    mr = pd.create_mr().get(timeout=TIMEOUT)
    expect_request(mr.register(buffer, flags=MrFlag.ALLOW_LOCAL_WRITE), mode)
    assert_registered(mr)
    sge = mr.sge(0, len(buffer))  # the whole registered range is addressable
    assert sge.length == len(buffer)
    assert sge.memory_region_token == mr.local_token


@pytest.mark.rule("MR-REGISTER-MDL-CHAIN")
@pytest.mark.digest("1.4")
def test_register_contiguous_mdl_chain(pd: ndk.Pd, buffer: bytearray) -> None:
    """digest 1.4: an MDL chain whose elements are virtually contiguous registers as one
    range."""
    mr = pd.create_mr().get(timeout=TIMEOUT)
    mdl = ndk.Mdl(buffer, [(0, PAGE), (PAGE, PAGE), (2 * PAGE, 100)])
    assert mdl.total_length == 2 * PAGE + 100
    expect_request(mr.register_mr(mdl), "i/a")
    assert_registered(mr)


@pytest.mark.rule("MR-REGISTER-PARTIAL-LENGTH")
@pytest.mark.digest("1.4")
def test_register_length_shorter_than_mdl(pd: ndk.Pd, buffer: bytearray) -> None:
    """digest 1.4: NdkRegisterMr registers Length bytes of the MDL chain; a Length below the
    chain's total is valid."""
    mr = pd.create_mr().get(timeout=TIMEOUT)
    expect_request(mr.register_mr(ndk.Mdl(buffer), length=PAGE), "i/a")
    assert_registered(mr)


@pytest.mark.rule("MR-REGISTER-NONCONTIGUOUS")
@pytest.mark.digest("1.4")
@pytest.mark.parametrize("segments", [
    [(0, PAGE), (2 * PAGE, PAGE)],
    [(0, PAGE), (PAGE // 2, PAGE)],
    [(PAGE, PAGE), (0, PAGE)],
], ids=["gap", "overlap", "backwards"])
def test_register_noncontiguous_mdl(pd: ndk.Pd, buffer: bytearray,
                                    segments: list[tuple[int, int]]) -> None:
    """digest 1.4: INVALID_PARAMETER when the MDL range is not virtually contiguous
    (a gap, an overlap, or segments out of order), inline or through the request's
    completion. The failed register leaves the MR unregistered and a valid register then
    succeeds."""
    mr = pd.create_mr().get(timeout=TIMEOUT)
    expect_request(mr.register_mr(ndk.Mdl(buffer, segments)), "i/a",
                   Status.INVALID_PARAMETER)
    assert_unregistered(mr)
    expect_request(mr.register(buffer), "i/a")
    assert_registered(mr)


@pytest.mark.rule("MR-REGISTER-LENGTH")
@pytest.mark.digest("1.4")
@pytest.mark.reference("MR-LENGTH")
@pytest.mark.parametrize("length", [0, 64 * 1024 + 1], ids=["zero", "beyond-mdl"])
def test_register_invalid_length(pd: ndk.Pd, buffer: bytearray, length: int) -> None:
    """digest 1.4 is silent on a Length of 0 or beyond the MDL chain. docs/semantics.md
    MR-LENGTH (a reference choice): INVALID_PARAMETER; the MR stays unregistered; a valid
    register then succeeds.  Stated (digest 1.4): that valid register on the MR, which holds
    no registration, succeeds; the choice: the refusal and its status."""
    mr = pd.create_mr().get(timeout=TIMEOUT)
    expect_request(mr.register_mr(ndk.Mdl(buffer), length=length), "i/a",
                   Status.INVALID_PARAMETER)
    assert_unregistered(mr)
    with stated("digest 1.4"):
        expect_request(mr.register_mr(ndk.Mdl(buffer), length=len(buffer)), "i/a")
        assert_registered(mr)


@pytest.mark.rule("MR-REGISTER-MAX-SIZE")
@pytest.mark.digest("1.4")
@pytest.mark.reference("MR-LENGTH")
def test_register_above_max_registration_size(open_adapter: OpenAdapter, buffer: bytearray) -> None:
    """digest 2.1 (MaxRegistrationSize: max bytes in one registration) does not say what
    NdkRegisterMr answers a longer one. docs/semantics.md MR-LENGTH (a reference choice, from
    ND2 MR::Register of digest 4.2): INVALID_PARAMETER; at the maximum it registers.  Stated
    (digest 2.1, 1.4: the maximum bytes of one registration): the register above it fails
    and the one at it succeeds; the choice: the status of the refusal."""
    adapter = open_adapter(max_registration_size=8 * PAGE)
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    mr = pd.create_mr().get(timeout=TIMEOUT)
    expect_request(mr.register_mr(ndk.Mdl(buffer), length=8 * PAGE + 1), "i/a",
                   Status.INVALID_PARAMETER, stated_in="digest 2.1")
    with stated("digest 2.1, 1.4"):
        assert_unregistered(mr)
        expect_request(mr.register_mr(ndk.Mdl(buffer), length=8 * PAGE), "i/a")
        assert_registered(mr)


@pytest.mark.rule("MR-REGISTER-UNKNOWN-FLAGS")
@pytest.mark.digest("2.6")
@pytest.mark.reference("MR-LENGTH")
@pytest.mark.parametrize("flags", [0x10, 0x80000000])
def test_register_unknown_flags(pd: ndk.Pd, buffer: bytearray, flags: int) -> None:
    """digest 2.6 lists NDK_MR_FLAG_* (0x1, 0x2, 0x5, 0x8) and does not say what other bits
    get. docs/semantics.md MR-LENGTH (a reference choice): unknown flag bits ->
    INVALID_PARAMETER; the MR stays unregistered."""
    mr = pd.create_mr().get(timeout=TIMEOUT)
    expect_request(mr.register(buffer, flags=flags), "i/a", Status.INVALID_PARAMETER)
    assert_unregistered(mr)


@pytest.mark.rule("MR-REGISTER-FLAGS")
@pytest.mark.digest("2.6")
@pytest.mark.parametrize("flags", [
    0,
    MrFlag.ALLOW_LOCAL_WRITE,
    MrFlag.ALLOW_REMOTE_READ,
    0x5,  # NDK_MR_FLAG_ALLOW_REMOTE_WRITE (includes LOCAL_WRITE)
    MrFlag.ALLOW_LOCAL_WRITE | MrFlag.ALLOW_REMOTE_READ | 0x5 | MrFlag.RDMA_READ_SINK,
], ids=["local-read", "local-write", "remote-read", "remote-write", "all"])
def test_register_documented_flags(pd: ndk.Pd, buffer: bytearray, flags: int | MrFlag) -> None:
    """digest 2.6, 1.4: every documented NDK_MR_FLAG combination registers; when
    RDMA_READ_SINK_NOT_REQUIRED is set the provider must not fail because RDMA_READ_SINK
    is present."""
    mr = pd.create_mr().get(timeout=TIMEOUT)
    expect_request(mr.register(buffer, flags=int(flags)), "i/a")
    assert_registered(mr)


@pytest.mark.rule("MR-REGISTER-TWICE")
@pytest.mark.digest("1.4")
@pytest.mark.reference("MR-STATE")
def test_register_twice(mr: ndk.Mr, buffer: bytearray) -> None:
    """digest 1.4 is silent on registering an MR twice. docs/semantics.md MR-STATE (a
    reference choice): register on a registered MR -> INVALID_DEVICE_STATE. The first
    registration is untouched."""
    local, remote = mr.local_token, mr.remote_token
    expect_request(mr.register(bytearray(PAGE)), "i/a", Status.INVALID_DEVICE_STATE)
    assert (mr.local_token, mr.remote_token) == (local, remote)


@pytest.mark.rule("MR-DEREGISTER")
@pytest.mark.digest("1.4")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_deregister(open_adapter: OpenAdapter, mode: str, buffer: bytearray) -> None:
    """digest 1.4 (NdkDeregisterMr): SUCCESS inline or PENDING then one completion; the MR
    is unregistered and can be registered again."""
    adapter = open_adapter(request_mode=mode)
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    mr = pd.create_mr().get(timeout=TIMEOUT)
    assert mr.register(buffer).wait(timeout=TIMEOUT) == Status.SUCCESS
    expect_request(mr.deregister_mr(), mode)
    assert_unregistered(mr)
    expect_request(mr.register(buffer), mode)
    assert_registered(mr)


@pytest.mark.rule("MR-DEREGISTER-UNREGISTERED")
@pytest.mark.digest("1.4")
@pytest.mark.reference("MR-STATE")
def test_deregister_unregistered(pd: ndk.Pd) -> None:
    """digest 1.4 is silent on deregistering an MR that is not registered.
    docs/semantics.md MR-STATE (a reference choice): INVALID_DEVICE_STATE; the MR can still be
    registered.  Stated (digest 1.4): that register succeeds; the choice: the deregister's
    refusal and its status."""
    mr = pd.create_mr().get(timeout=TIMEOUT)
    expect_request(mr.deregister_mr(), "i/a", Status.INVALID_DEVICE_STATE)
    with stated("digest 1.4"):
        expect_request(mr.register(bytearray(PAGE)), "i/a")


# --- fast register -----------------------------------------------------------------------


@pytest.mark.rule("MR-FRMR-INITIALIZE")
@pytest.mark.digest("1.4")
@pytest.mark.parametrize("remote_access", [False, True], ids=["local", "remote"])
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_initialize_fast_register(open_adapter: OpenAdapter, mode: str, remote_access: bool) -> None:
    """digest 1.4 (NdkInitializeFastRegisterMr on an MR created with FastRegister TRUE):
    SUCCESS inline or PENDING then one completion; tokens valid afterwards."""
    adapter = open_adapter(request_mode=mode)
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    mr = pd.create_mr(fast_register=True).get(timeout=TIMEOUT)
    pages = adapter.query_info().frmr_page_count
    expect_request(mr.initialize_fast_register_mr(pages, remote_access=remote_access), mode)
    assert_registered(mr)


@pytest.mark.rule("MR-FRMR-PAGE-LIMIT")
@pytest.mark.digest("1.4")
@pytest.mark.reference("FRMR-LIMIT")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_initialize_fast_register_too_many_pages(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 1.4: STATUS_IMPLEMENTATION_LIMIT when AdapterPageCount is not supported; which
    counts are is the provider's: docs/semantics.md FRMR-LIMIT (a reference choice): above
    max_registration_size // 4096.  The refusal inline, or (request_mode=pending) through
    exactly one completion after PENDING; either way the MR stays uninitialized and a
    supported count then succeeds."""
    adapter = open_adapter(max_registration_size=16 * PAGE, request_mode=mode)
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    mr = pd.create_mr(fast_register=True).get(timeout=TIMEOUT)
    expect_request(mr.initialize_fast_register_mr(17), mode, Status.IMPLEMENTATION_LIMIT)
    assert_unregistered(mr)
    expect_request(mr.initialize_fast_register_mr(16), mode)
    assert_registered(mr)


@pytest.mark.rule("MR-FRMR-ZERO-PAGES")
@pytest.mark.digest("1.4")
@pytest.mark.reference("FRMR-LIMIT")
def test_initialize_fast_register_zero_pages(pd: ndk.Pd) -> None:
    """digest 1.4 is silent on an AdapterPageCount of 0. docs/semantics.md FRMR-LIMIT (a
    reference choice): INVALID_PARAMETER; a count of 1 then initializes.  Stated (digest
    1.4): that initialization of one page succeeds; the choice: the refusal of 0 and its
    status."""
    mr = pd.create_mr(fast_register=True).get(timeout=TIMEOUT)
    expect_request(mr.initialize_fast_register_mr(0), "i/a", Status.INVALID_PARAMETER)
    assert_unregistered(mr)
    with stated("digest 1.4"):
        expect_request(mr.initialize_fast_register_mr(1), "i/a")


@pytest.mark.rule("MR-FRMR-INITIALIZE-TWICE")
@pytest.mark.digest("1.4")
@pytest.mark.reference("MR-STATE")
def test_initialize_fast_register_twice(pd: ndk.Pd) -> None:
    """digest 1.4 is silent on initializing a fast-register MR twice. docs/semantics.md
    MR-STATE (a reference choice): INVALID_DEVICE_STATE; the first initialization's tokens
    are kept.  Stated (digest 1.4): the first initialization succeeds; the choice: the
    second's refusal, its status, and the tokens kept."""
    mr = pd.create_mr(fast_register=True).get(timeout=TIMEOUT)
    with stated("digest 1.4"):
        expect_request(mr.initialize_fast_register_mr(16), "i/a")
    tokens = (mr.local_token, mr.remote_token)
    expect_request(mr.initialize_fast_register_mr(16), "i/a", Status.INVALID_DEVICE_STATE)
    assert (mr.local_token, mr.remote_token) == tokens


@pytest.mark.rule("MR-KIND-REGISTER-ON-FRMR")
@pytest.mark.digest("1.4")
@pytest.mark.reference("MR-KIND")
def test_register_on_fast_register_mr(pd: ndk.Pd, buffer: bytearray) -> None:
    """digest 1.4: NdkRegisterMr only on an MR created with FastRegister = FALSE.
    It does not say what the provider answers otherwise: docs/semantics.md MR-KIND (a
    reference choice): register / register_mr / deregister on a fast-register MR ->
    INVALID_PARAMETER. The MR can still be initialized for fast registration.  Stated (digest
    1.4): that initialization succeeds; the choice: the refusals and their status."""
    mr = pd.create_mr(fast_register=True).get(timeout=TIMEOUT)
    expect_request(mr.register(buffer), "i/a", Status.INVALID_PARAMETER)
    expect_request(mr.register_mr(ndk.Mdl(buffer)), "i/a", Status.INVALID_PARAMETER)
    expect_request(mr.deregister_mr(), "i/a", Status.INVALID_PARAMETER)
    assert_unregistered(mr)
    with stated("digest 1.4"):
        expect_request(mr.initialize_fast_register_mr(16), "i/a")


@pytest.mark.rule("MR-KIND-INITIALIZE-ON-NORMAL")
@pytest.mark.digest("1.4")
@pytest.mark.reference("MR-KIND")
def test_initialize_on_normal_mr(pd: ndk.Pd, buffer: bytearray) -> None:
    """digest 1.4: NdkInitializeFastRegisterMr needs an MR created with FastRegister = TRUE.
    It does not say what the provider answers otherwise: docs/semantics.md MR-KIND (a
    reference choice): INVALID_PARAMETER. The MR can still be registered.  Stated (digest
    1.4): that register succeeds; the choice: the refusal and its status."""
    mr = pd.create_mr().get(timeout=TIMEOUT)
    expect_request(mr.initialize_fast_register_mr(16), "i/a", Status.INVALID_PARAMETER)
    assert_unregistered(mr)
    with stated("digest 1.4"):
        expect_request(mr.register(buffer), "i/a")
        assert_registered(mr)


@pytest.mark.rule("MR-TOKENS-UNIQUE")
@pytest.mark.digest("1.4")
def test_tokens_differ_between_regions(pd: ndk.Pd, buffer: bytearray) -> None:
    """digest 1.4, 2.4: a token names one registered region: two live registrations never
    share a local or a remote token."""
    first = pd.create_mr().get(timeout=TIMEOUT)
    second = pd.create_mr().get(timeout=TIMEOUT)
    assert first.register(memoryview(buffer)[:PAGE]).wait(timeout=TIMEOUT) == Status.SUCCESS
    assert second.register(memoryview(buffer)[PAGE:]).wait(timeout=TIMEOUT) == Status.SUCCESS
    assert not ({first.local_token, first.remote_token}
                & {second.local_token, second.remote_token})


@pytest.mark.rule("MR-TOKENS-UNREGISTERED")
@pytest.mark.digest("1.4")
@pytest.mark.reference("TOKENS")
def test_tokens_zero_unless_registered(adapter: ndk.Adapter, pd: ndk.Pd,
                                       buffer: bytearray) -> None:
    """digest 1.4: the tokens are valid only after Register or InitializeFastRegister
    completed; what the getters return before, or after Deregister, NDK does not say.
    docs/semantics.md TOKENS (a reference choice): 0, which is never a valid token: 0 after
    create, after a failed register and after deregister, non-zero once registered (or
    initialized, where the adapter has fast registration).  Stated (digest 1.4): the register,
    the deregister and the initialization succeed; the choice: the tokens' values."""
    mr = pd.create_mr().get(timeout=TIMEOUT)
    assert (mr.local_token, mr.remote_token) == (0, 0)
    expect_request(mr.register_mr(ndk.Mdl(buffer), length=0), "i/a", Status.INVALID_PARAMETER)
    assert (mr.local_token, mr.remote_token) == (0, 0)
    with stated("digest 1.4"):
        expect_request(mr.register(buffer), "i/a")
    assert mr.local_token != 0 and mr.remote_token != 0
    with stated("digest 1.4"):
        expect_request(mr.deregister_mr(), "i/a")
    assert (mr.local_token, mr.remote_token) == (0, 0)
    if adapter.query_info().frmr_page_count:
        frmr = pd.create_mr(fast_register=True).get(timeout=TIMEOUT)
        assert (frmr.local_token, frmr.remote_token) == (0, 0)
        with stated("digest 1.4"):
            expect_request(frmr.initialize_fast_register_mr(16), "i/a")
        assert frmr.local_token != 0 and frmr.remote_token != 0
