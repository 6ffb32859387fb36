"""Knob errors and listing (issue 16): a refused value is the same exception at open and at run
time, the soft provider lists its knobs for dir() and repr(), and a taken address says how to
free it."""

import pytest

import ndk
from ndk import Status


def test_a_refused_knob_value_is_a_value_error_at_open_and_at_run_time():
    refused = "max_cq_depth=x: expected an unsigned integer"
    with pytest.raises(ValueError, match=refused) as at_open:
        ndk.open_adapter("soft", max_cq_depth="x")
    assert isinstance(at_open.value, ndk.KnobValueError)
    assert isinstance(at_open.value, ndk.NdkError)  # what an open raised before
    assert at_open.value.status == Status.INVALID_PARAMETER
    with ndk.open_adapter("soft") as ad:
        with pytest.raises(ValueError, match=refused) as later:
            ad.knobs.max_cq_depth = "x"
        assert type(later.value) is type(at_open.value)
        assert later.value.status == Status.INVALID_PARAMETER
    with pytest.raises(ndk.KnobsNotSupported):  # an unknown knob stays what it was
        ndk.open_adapter("soft", no_such_knob=1)
    with ndk.open_adapter("soft") as ad, pytest.raises(ndk.KnobsNotSupported):
        ad.knobs.no_such_knob = 1  # at run time too: never silently ignored
    with pytest.raises(ndk.NdkError) as version:  # not a knob: a plain NdkError
        ndk.open_adapter("soft", version=(9, 0))
    assert type(version.value) is ndk.NdkError


def test_dir_and_repr_show_every_knob_the_provider_lists():
    with ndk.open_adapter("soft", create_mode="pending") as ad:
        listed = ad._get_knob("knobs")[1].split()
        names = dir(ad.knobs)
        for knob in ("create_mode", "request_mode", "close_mode", "seed", "fail", "progress",
                     "misbehave", "max_cq_depth", "max_qp_count", "address", "step", "hold",
                     "rnr_timeout_ms", "ephemeral_ports", "provider_version"):
            assert knob in listed and knob in names
        assert len(names) >= 25 and "clear_failures" in names
        text = repr(ad.knobs)
        assert text.startswith("<ndk.Knobs of 'soft': ")
        assert "create_mode='pending'" in text and "max_cq_depth='" in text
        for knob in listed:
            assert knob in text
        with pytest.raises(ValueError, match="read only"):
            ad.knobs.knobs = "x"


def test_a_taken_address_says_to_close_the_first_adapter():
    with ndk.open_adapter("soft", address="192.0.2.201"):
        with pytest.raises(ndk.NdkError) as error:
            ndk.open_adapter("soft", address="192.0.2.201")
        assert error.value.status == Status.ADDRESS_ALREADY_EXISTS
        assert "address already owned by another soft adapter: 192.0.2.201" in str(error.value)
        assert "ad.close()" in str(error.value) and "with ndk.open_adapter(" in str(error.value)
    ndk.open_adapter("soft", address="192.0.2.201").close()  # free again once closed



# A knob's text that the options' lines would split or cut: a newline starts another knob, a
# NUL ends the C string, ';' is the options' other separator (docs/knobs.md).
SPLITTING_VALUES = {
    "newline": ("address", "192.0.2.9\nmax_cq_depth=2"),
    "nul": ("max_cq_depth", "16\0" "2"),
    "semicolon": ("create_mode", "inline;max_cq_depth=2"),
    "carriage return": ("create_mode", "inline\r"),
}


@pytest.mark.parametrize("key,value", SPLITTING_VALUES.values(), ids=SPLITTING_VALUES.keys())
def test_a_value_the_options_would_split_is_refused_at_open_as_at_run_time(key, value):
    shown = value.replace("\n", "\\n").replace("\0", "\\0").replace("\r", "\\x0d")
    with pytest.raises(ndk.KnobValueError, match="a value is one line") as at_open:
        ndk.open_adapter("soft", **{key: value})
    assert at_open.value.status == Status.INVALID_PARAMETER and shown in str(at_open.value)
    with ndk.open_adapter("soft") as ad:
        before = ad.query_info().max_cq_depth
        with pytest.raises(ndk.KnobValueError, match="a value is one line") as later:
            setattr(ad.knobs, key, value)
        assert str(later.value) in str(at_open.value)  # that one adds the status's name
        assert ad.query_info().max_cq_depth == before  # no second knob was set


def test_a_knob_name_with_a_separator_is_refused_at_open_as_at_run_time():
    """At open it would set max_cq_depth=2 (the line "max_cq_depth=2\ncreate_mode=inline")."""
    with pytest.raises(ndk.KnobValueError, match="a name has no") as at_open:
        ndk.open_adapter("soft", **{"max_cq_depth=2\ncreate_mode": "inline"})
    with ndk.open_adapter("soft") as ad, pytest.raises(ndk.KnobValueError) as later:
        ndk._knobs.set_knob(ad, "max_cq_depth=2\ncreate_mode", "inline")
    assert str(later.value) in str(at_open.value)
