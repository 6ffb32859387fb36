"""NDK_ADAPTER: open and close, version negotiation, NdkQueryAdapterInfo sizing,
NdkQueryExtension, ADAPTER_NOT_READY (digest 1.1, 2.1, 2.7, 3.1)."""

from __future__ import annotations

import pytest

import ndk
from ndk import Status
from ndk.testing import OpenAdapter

from ndk.scenario import OBJECT_TYPES, TIMEOUT, make_objects

ADAPTER_INFO_SIZE = 104  # sizeof(NDK_ADAPTER_INFO) on LP64


@pytest.mark.rule("ADAPTER-OPEN-CLOSE")
@pytest.mark.digest("1.1")
def test_open_and_close(ndk_provider: str) -> None:
    """digest 1.1: OPEN_NDK_ADAPTER_HANDLER returns an adapter; CLOSE_NDK_ADAPTER_HANDLER
    closes it (blocking). Afterwards the handle reports closed and cannot be used."""
    adapter = ndk.open_adapter(ndk_provider)
    try:
        assert adapter.is_open and not adapter.closed
        assert adapter.query_info().version == adapter.version
    finally:
        adapter.close()
    assert adapter.closed and not adapter.is_open
    with pytest.raises(ndk.ObjectClosedError):
        adapter.create_pd()


@pytest.mark.rule("ADAPTER-MULTIPLE-INSTANCES")
@pytest.mark.digest("1.1")
def test_several_adapters_at_once(open_adapter: OpenAdapter) -> None:
    """digest 1.1: "Multiple NDK_ADAPTER instances may be opened on one miniport": two open
    adapters work independently, and closing one leaves the other usable."""
    first = open_adapter()
    second = open_adapter()
    pd1 = first.create_pd().get(timeout=TIMEOUT)
    pd2 = second.create_pd().get(timeout=TIMEOUT)
    first.close()
    assert pd1.closed
    assert pd2.is_open
    assert second.create_cq(4).wait(timeout=TIMEOUT) == Status.SUCCESS


def _highest(ndk_provider: str, major: int) -> tuple[int, int]:
    """The version the provider reports for a request of ``major``.0: its highest minor of
    that major (digest 1.1); skips when the provider does not implement the major."""
    try:
        with ndk.open_adapter(ndk_provider, version=(major, 0)) as adapter:
            return adapter.version
    except ndk.NdkError as error:
        if error.status != Status.BAD_VERSION:
            raise
        pytest.skip(f"the provider does not implement NDK {major}.x")


@pytest.mark.rule("ADAPTER-VERSION-MINOR-UPGRADE")
@pytest.mark.digest("1.1")
@pytest.mark.parametrize("requested", [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1)])
def test_version_reports_highest_minor(ndk_provider: str, requested: tuple[int, int]) -> None:
    """digest 1.1 (version negotiation): a request for major.minor with minor <= the
    provider's highest minor succeeds and reports the provider's highest minor, in
    NDK_ADAPTER_INFO and in the adapter header.  Which versions a provider implements NDK
    leaves to it (the soft provider: 1.2 and 2.1, docs/semantics.md VERSIONS), so the highest
    minor is what a request for minor 0 of the major reports; a major the provider does not
    implement, or a minor above its highest, skips."""
    reported = _highest(ndk_provider, requested[0])
    if requested[1] > reported[1]:
        pytest.skip(f"the provider implements NDK {reported[0]}.{reported[1]} at most")
    with ndk.open_adapter(ndk_provider, version=requested) as adapter:
        assert adapter.version == reported
        assert adapter.query_info().version == reported


@pytest.mark.rule("ADAPTER-VERSION-MINOR-TOO-HIGH")
@pytest.mark.digest("1.1")
@pytest.mark.parametrize("major", [1, 2])
def test_version_minor_too_high(ndk_provider: str, major: int) -> None:
    """digest 1.1: if the requested minor is above the provider's highest minor, the open
    fails with NDIS_STATUS_BAD_VERSION.  The highest minor is what a request for minor 0
    reports (the soft provider: 1.2 and 2.1, docs/semantics.md VERSIONS); a major the
    provider does not implement skips.  A supported open still succeeds afterwards."""
    highest = _highest(ndk_provider, major)
    requested = (major, highest[1] + 1)
    with pytest.raises(ndk.NdkError) as failure:
        ndk.open_adapter(ndk_provider, version=requested)
    assert failure.value.status == Status.BAD_VERSION
    with ndk.open_adapter(ndk_provider, version=(requested[0], 0)) as adapter:
        assert adapter.version[0] == requested[0]


@pytest.mark.rule("ADAPTER-VERSION-MAJOR-UNSUPPORTED")
@pytest.mark.digest("1.1")
@pytest.mark.parametrize("requested", [(3, 0), (0, 0), (0xFFFF, 0)])
def test_version_major_unsupported(ndk_provider: str, requested: tuple[int, int]) -> None:
    """digest 1.1: a major version the provider does not support fails with
    NDIS_STATUS_BAD_VERSION; no NDK version 0.x, 3.x or 0xFFFF.x exists (digest 2.7)."""
    with pytest.raises(ndk.NdkError) as failure:
        ndk.open_adapter(ndk_provider, version=requested)
    assert failure.value.status == Status.BAD_VERSION


@pytest.mark.rule("ADAPTER-VERSION-PROVIDER-HIGHEST")
@pytest.mark.digest("1.1")
def test_version_restricted_provider_reports_its_highest(open_adapter: OpenAdapter) -> None:
    """digest 1.1: the provider reports *its* highest minor. docs/semantics.md: VERSIONS
    (knob provider_version="2.0": major 2, highest minor 0)."""
    adapter = open_adapter(provider_version="2.0")
    assert adapter.version == (2, 0)
    assert adapter.query_info().version == (2, 0)
    assert adapter.create_pd().get(timeout=TIMEOUT).version == (2, 0)


@pytest.mark.rule("ADAPTER-VERSION-PROVIDER-RESTRICTED")
@pytest.mark.digest("1.1")
@pytest.mark.parametrize("requested", [(2, 1), (1, 0)])
def test_version_restricted_provider_rejects(ndk_provider: str, requested: tuple[int, int]) -> None:
    """digest 1.1: a 2.0-only provider fails a 2.1 request (minor too high) and a 1.x
    request (major unsupported) with BAD_VERSION. docs/semantics.md: VERSIONS."""
    with pytest.raises(ndk.NdkError) as failure:
        ndk.open_adapter(ndk_provider, version=requested, provider_version="2.0")
    assert failure.value.status == Status.BAD_VERSION


@pytest.mark.rule("ADAPTER-VERSION-OBJECT-HEADERS")
@pytest.mark.digest("1.0")
@pytest.mark.parametrize("requested", [(1, 0), (2, 0)])
def test_every_object_reports_the_negotiated_version(open_adapter: OpenAdapter, requested: tuple[int, int]) -> None:
    """digest 1.0/1.1: the provider sets NDK_OBJECT_HEADER.Version of every object to the
    version it reported ("reports 1.1 in NDK_ADAPTER_INFO and in the object headers").
    docs/semantics.md: VERSIONS."""
    adapter = open_adapter(version=requested)
    objects = make_objects(adapter)
    assert len(objects) >= 9
    for name, obj in objects.items():
        assert obj.version == adapter.version, name


@pytest.mark.rule("ADAPTER-OBJECT-TYPES")
@pytest.mark.digest("1.0")
def test_every_object_reports_its_type(adapter: ndk.Adapter) -> None:
    """digest 1.0: NDK_OBJECT_HEADER.ObjectType is set (non-zero) to the documented value:
    Qp 2, Cq 3, Mr 4, Mw 5, Pd 6, SharedEndpoint 7, Connector 8, Listener 9, Srq 10."""
    for name, obj in make_objects(adapter).items():
        assert obj.object_type == OBJECT_TYPES[name], name
        assert obj.object_type != ndk.ObjectType.UNDEFINED


@pytest.mark.rule("ADAPTER-QUERY-INFO-TOO-SMALL")
@pytest.mark.digest("1.1")
@pytest.mark.parametrize("size", [0, 4, ADAPTER_INFO_SIZE - 1])
def test_query_info_buffer_too_small(adapter: ndk.Adapter, size: int) -> None:
    """digest 1.1 (NdkQueryAdapterInfo): a buffer smaller than NDK_ADAPTER_INFO fails with
    STATUS_BUFFER_TOO_SMALL and *pBufferSize updated to the required size.
    docs/semantics.md: QUERY."""
    query = adapter.query_adapter_info(buffer_size=size)
    assert query.status == Status.BUFFER_TOO_SMALL
    assert query.buffer_size == ADAPTER_INFO_SIZE
    assert query.info is None
    # the sized retry the caller is expected to make succeeds
    retry = adapter.query_adapter_info(buffer_size=query.buffer_size)
    assert retry.status == Status.SUCCESS


@pytest.mark.rule("ADAPTER-QUERY-INFO-EXACT")
@pytest.mark.digest("1.1")
def test_query_info_exact_size(adapter: ndk.Adapter) -> None:
    """digest 1.1, 2.1: a buffer of sizeof(NDK_ADAPTER_INFO) succeeds and returns the info,
    whose Version is the reported version. docs/semantics.md: QUERY."""
    query = adapter.query_adapter_info(buffer_size=ADAPTER_INFO_SIZE)
    assert query.status == Status.SUCCESS
    assert query.buffer_size == ADAPTER_INFO_SIZE
    info = query.info
    assert info is not None
    assert info.version == adapter.version
    assert tuple(info._fields)[0] == "version"


@pytest.mark.rule("ADAPTER-QUERY-INFO-LARGER")
@pytest.mark.digest("1.1")
def test_query_info_larger_buffer(adapter: ndk.Adapter) -> None:
    """digest 1.1: a buffer larger than needed succeeds with the same info."""
    query = adapter.query_adapter_info(buffer_size=4 * ADAPTER_INFO_SIZE)
    assert query.status == Status.SUCCESS
    assert query.info is not None
    assert query.info.max_cq_depth == adapter.query_info().max_cq_depth


@pytest.mark.rule("ADAPTER-INFO-FRMR-PAGE-COUNT")
@pytest.mark.digest("2.1")
def test_info_frmr_page_count_at_least_16(adapter: ndk.Adapter) -> None:
    """digest 2.1: FRMRPageCount "Must be >= 16"."""
    assert adapter.query_info().frmr_page_count >= 16


@pytest.mark.rule("ADAPTER-INFO-TECHNOLOGY")
@pytest.mark.digest("2.1")
def test_info_rdma_technology_in_range(adapter: ndk.Adapter) -> None:
    """digest 2.1: RdmaTechnology is an NDK_RDMA_TECHNOLOGY value below NdkMaxTechnology (5),
    and AdapterFlags holds only documented flag bits."""
    info = adapter.query_info()
    assert 0 <= info.rdma_technology < 5
    documented = 0
    for flag in ndk.AdapterFlag:
        documented |= int(flag)
    assert int(info.adapter_flags) & ~documented == 0


@pytest.mark.rule("ADAPTER-QUERY-EXTENSION-NOT-SUPPORTED")
@pytest.mark.digest("1.1")
def test_query_extension_not_supported(adapter: ndk.Adapter) -> None:
    """digest 1.1: "There are currently no standard extended interfaces defined", so
    NdkQueryExtension returns STATUS_NOT_SUPPORTED inline; the adapter stays usable.
    docs/semantics.md: QUERY."""
    assert adapter.query_extension() == Status.NOT_SUPPORTED
    assert adapter.query_extension(version=(2, 0)) == Status.NOT_SUPPORTED
    assert adapter.create_pd().wait(timeout=TIMEOUT) == Status.SUCCESS


@pytest.mark.rule("ADAPTER-NOT-READY")
@pytest.mark.digest("1.1")
def test_open_not_ready(ndk_provider: str, open_adapter: OpenAdapter) -> None:
    """digest 1.1: NDIS_STATUS_ADAPTER_NOT_READY when the NDK functionality of the miniport
    is not enabled. docs/semantics.md: NOT-READY. A ready miniport opens afterwards."""
    with pytest.raises(ndk.NdkError) as failure:
        ndk.open_adapter(ndk_provider, adapter_not_ready=True)
    assert failure.value.status == Status.ADAPTER_NOT_READY
    assert open_adapter().is_open


@pytest.mark.rule("ADAPTER-CLOSE-CLOSES-OBJECTS")
@pytest.mark.digest("3.1")
def test_adapter_close_closes_every_object(open_adapter: OpenAdapter) -> None:
    """digest 3.1: the adapter close is blocking; on return every descendant is closed and no
    callback runs any more. docs/semantics.md: adapter close closes every open object, using
    them afterwards raises ndk.ObjectClosedError."""
    adapter = open_adapter()
    objects = make_objects(adapter)
    cq = objects["cq"]
    cq.arm(ndk.CqNotify.ANY)
    adapter.close()
    assert adapter.closed
    for name, obj in objects.items():
        assert obj.closed, name
        assert not obj.is_open, name
    with pytest.raises(ndk.ObjectClosedError):
        objects["pd"].create_mr()
    with pytest.raises(ndk.ObjectClosedError):
        cq.get_results(1)
    with pytest.raises(ndk.ObjectClosedError):
        objects["listener"].listen(("0.0.0.0", 0))
    with pytest.raises(ndk.ObjectClosedError):
        objects["mr"].register(bytearray(4096))
    with pytest.raises(ndk.ObjectClosedError):
        objects["qp"].flush()
    with pytest.raises(ndk.ObjectClosedError):
        objects["shared_endpoint"].get_local_address()


@pytest.mark.rule("ADAPTER-ADDRESS-UNIQUE")
@pytest.mark.digest("3.5")
@pytest.mark.reference("ADDRESS-UNIQUE")
def test_two_adapters_cannot_share_an_address(open_adapter: OpenAdapter, ndk_provider: str) -> None:
    """digest 3.5 (endpoints are address:port): two open adapters cannot own the same
    address; the second open fails with STATUS_ADDRESS_ALREADY_EXISTS, and succeeds once the
    first is closed.  NDK does not say several adapters may not share an address (multiple
    NDK_ADAPTER instances of one miniport do, digest 1.1): docs/semantics.md ADDRESS-UNIQUE,
    a reference choice of the soft fabric (one RNIC per address)."""
    first = open_adapter(address="192.0.2.77")
    with pytest.raises(ndk.NdkError) as failure:
        ndk.open_adapter(ndk_provider, address="192.0.2.77")
    assert failure.value.status == Status.ADDRESS_ALREADY_EXISTS
    first.close()
    again = open_adapter(address="192.0.2.77")
    assert again.is_open
