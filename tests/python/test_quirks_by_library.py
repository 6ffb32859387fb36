"""Quirks of a provider loaded from its library by path (python/ndk/quirks.py, quirk_keys): the
library `.../libndk_NAME_provider.so` is also looked up as NAME, so a provider's quirks apply
whether it is named (`loop`) or loaded by path (CTest scenarios_loop)."""

from __future__ import annotations

from ndk import quirks


def test_a_provider_library_is_also_looked_up_by_its_name() -> None:
    path = "/work/build/core/libndk_loop_provider.so"
    assert quirks.quirk_keys(path) == [path, "loop"]
    assert quirks.quirk_keys("libndk_loop_provider.so") == ["libndk_loop_provider.so", "loop"]
    assert quirks.quirk_reason(path, "MW-CREATE") == quirks.quirk_reason("loop", "MW-CREATE")
    assert quirks.quirk_reason(path, "MW-CREATE") is not None


def test_other_libraries_and_names_are_looked_up_as_themselves() -> None:
    assert quirks.quirk_keys("/opt/lib/libmyprovider.so") == ["/opt/lib/libmyprovider.so"]
    assert quirks.quirk_keys("/opt/lib/libndk_loop_provider.so.1") == [
        "/opt/lib/libndk_loop_provider.so.1"]
    assert quirks.quirk_keys("loop") == ["loop"]
    assert quirks.quirk_reason("soft", "MW-CREATE") is None
