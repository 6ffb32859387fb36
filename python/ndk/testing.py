"""pytest plugin for NDK conformance scenarios.

Load it from a conftest with ``pytest_plugins = ["ndk.testing"]`` (or through the ``pytest11``
entry point, which must then be *named* ``ndk.testing`` so that pytest sees one plugin, not two).

What it provides:

* ``--ndk-provider NAME`` (repeatable, default ``soft``): every test that uses the
  ``ndk_provider`` fixture, directly or through ``open_adapter``/``adapter``/``pd``/``cq``,
  runs once per provider, with the provider name as the test id.
* markers ``rule(ID)`` (the conformance rule a scenario checks) and ``digest(SECTION)``.
* fixtures ``ndk_provider``, ``open_adapter``, ``adapter``, ``pd``, ``cq``.
* ``requires(adapter, **minimums)``: skip unless the adapter reports enough capability.
* ``connect_pair(client, server)``: two connected QPs (``ndk._connect``), for data-path
  scenarios; also reachable as ``ndk.testing.connect_pair`` after a plain ``import ndk``.
* quirk skips from :mod:`ndk.quirks`, keyed by provider and rule.

The ``ndk`` API itself is imported inside the fixtures only: this module is pure pytest glue,
and importing it must not need the compiled extension.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

from ._connect import Endpoint, connect_pair  # noqa: F401  (re-exported)
from ._selection import OPTION_DEST, provider_of, rule_of, selected_providers
from .quirks import quirk_reason


# --- options and markers -------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ndk", "NDK conformance")
    group.addoption(
        "--ndk-provider",
        action="append",
        dest=OPTION_DEST,
        default=None,  # None, not ["soft"]: with append, a list default would be appended to
        metavar="NAME",
        help="NDK provider to run the scenarios against (name or path to a provider "
        "library); repeat for several. Default: soft.",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "rule(id): the conformance rule this scenario checks, e.g. CQ-CREATE-DEPTH"
    )
    config.addinivalue_line(
        "markers", "digest(section): the section of spec/ndkpi.md the rule comes from"
    )


def _check_rule_marker(item: pytest.Item) -> None:
    # A malformed marker would silently drop the scenario into "(unmarked)"; fail loudly instead.
    marker = item.get_closest_marker("rule")
    if marker is None:
        return
    if len(marker.args) != 1 or not isinstance(marker.args[0], str) or marker.kwargs:
        raise pytest.UsageError(
            f"{item.nodeid}: use @pytest.mark.rule(\"RULE-ID\") with exactly one string, "
            f"got rule{marker.args!r}"
        )


# --- parametrization and quirks ------------------------------------------------------------


def _parametrizes_provider_itself(metafunc: pytest.Metafunc) -> bool:
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0] if marker.args else marker.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = [name.strip() for name in names.split(",")]
        if "ndk_provider" in names:
            return True
    return False


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "ndk_provider" not in metafunc.fixturenames or _parametrizes_provider_itself(metafunc):
        return
    providers = selected_providers(metafunc.config)
    # indirect: the parameter goes through the session-scoped ndk_provider fixture, so pytest
    # groups the run by provider and broader-scoped fixtures may depend on the provider.
    metafunc.parametrize("ndk_provider", providers, ids=providers, indirect=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        _check_rule_marker(item)
        provider = provider_of(item)
        reason = quirk_reason(provider, rule_of(item))
        if reason is not None:
            # A skip marker (not pytest.skip at run time) so that no fixture is set up for a
            # scenario the provider is known not to satisfy.
            item.add_marker(pytest.mark.skip(reason=f"quirk of {provider}: {reason}"))


# --- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def ndk_provider(request: pytest.FixtureRequest) -> str:
    """The name of the provider this test runs against (one of ``--ndk-provider``)."""
    param = getattr(request, "param", None)
    if param is None:  # requested where pytest_generate_tests could not parametrize it
        return selected_providers(request.config)[0]
    return param


def close_quietly(obj: Any) -> None:
    """Close an NDK object at teardown unless the scenario already closed it.

    A scenario may close what a fixture gave it (that is often what it tests); the second close
    then fails with ``ndk.NdkError`` or ``ValueError``, which is not the fixture's business.
    """
    if getattr(obj, "closed", False):
        return
    import ndk

    try:
        obj.close()
    except (ndk.NdkError, ValueError):
        pass


@pytest.fixture
def open_adapter(ndk_provider: str) -> Any:
    """Factory ``open_adapter(**knobs)`` opening an adapter of the current provider.

    Every adapter it opened is closed at teardown. Knobs are a feature of the soft provider;
    when the provider rejects knobs (``ndk.KnobsNotSupported``) the test is skipped, since the
    scenario cannot be set up there, rather than failed.
    """
    import ndk

    opened: list[Any] = []

    def _open(**knobs: Any) -> Any:
        try:
            adapter = ndk.open_adapter(ndk_provider, **knobs)
        except ndk.KnobsNotSupported as exc:
            if not knobs:
                raise
            pytest.skip(f"provider {ndk_provider!r} has no knob {', '.join(sorted(knobs))}: {exc}")
        opened.append(adapter)
        return adapter

    yield _open
    for adapter in reversed(opened):
        close_quietly(adapter)


@pytest.fixture
def adapter(open_adapter: Callable[..., Any]) -> Any:
    """An adapter of the current provider, opened without knobs."""
    return open_adapter()


@pytest.fixture
def pd(adapter: Any) -> Any:
    """A protection domain on ``adapter``; closed at teardown, before the adapter."""
    domain = adapter.create_pd().get(timeout=5)
    yield domain
    close_quietly(domain)


@pytest.fixture
def cq(adapter: Any) -> Any:
    """A completion queue of depth 64 on ``adapter``; closed at teardown, before the adapter."""
    queue = adapter.create_cq(cq_depth=64).get(timeout=5)
    yield queue
    close_quietly(queue)


# --- capability checks ---------------------------------------------------------------------


def requires(adapter: Any, **minimums: int) -> Any:
    """Skip the current test unless ``adapter.query_info()`` meets every minimum.

    ``requires(adapter, max_srq_depth=1)`` skips with "needs max_srq_depth >= 1, provider
    reports 0" on a provider without SRQs. Field names are the snake_case NDK_ADAPTER_INFO
    fields; a misspelt one is an error, not a skip. Returns the info, for further use.
    """
    info = adapter.query_info()
    unmet = []
    for field, minimum in minimums.items():
        try:
            value = getattr(info, field)
        except AttributeError:
            raise AttributeError(
                f"requires(): adapter info has no field {field!r} "
                "(use the snake_case NDK_ADAPTER_INFO field names)"
            ) from None
        if value < minimum:
            unmet.append(f"needs {field} >= {minimum}, provider reports {value}")
    if unmet:
        pytest.skip("; ".join(unmet))
    return info
