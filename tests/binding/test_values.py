"""Values of the ndk package compare by value, hash alike and pickle (issue 16): exceptions,
AdapterInfo, Sge, Violation, Rule (Result and ResultEx: tests/binding/test_contexts.py)."""

import pickle

import pytest

import ndk
from ndk import Status
from ndk._errors import KnobNotFound, KnobValueError


def round_trip(value):
    return pickle.loads(pickle.dumps(value))


@pytest.mark.parametrize("error", [
    ndk.NdkError(Status.PENDING),
    ndk.NdkError(Status.INVALID_PARAMETER, "NdkCreateCq: depth"),
    ndk.NdkError("only a message"),
    ndk.ObjectClosedError("cq is closed"),
    ndk.KnobsNotSupported("no knob 'x'"),
    KnobNotFound("no knob 'y'"),
    KnobValueError(Status.INVALID_PARAMETER, "knob max_cq_depth=x: expected an unsigned integer"),
], ids=repr)
def test_exceptions_pickle_and_compare_by_value(error):
    copy = round_trip(error)
    assert type(copy) is type(error)
    assert copy == error and hash(copy) == hash(error)
    assert str(copy) == str(error)
    assert getattr(copy, "status", None) == getattr(error, "status", None)


def test_ndk_error_constructs_from_a_status_or_a_message():
    assert ndk.NdkError(Status.PENDING).status == Status.PENDING
    assert str(ndk.NdkError(Status.PENDING)) == str(Status.PENDING)
    assert ndk.NdkError(0xC000000D).status == Status.INVALID_PARAMETER
    message_only = ndk.NdkError("it went wrong")
    assert message_only.status == Status.UNSUCCESSFUL and str(message_only) == "it went wrong"
    assert ndk.NdkError(Status.PENDING) != ndk.NdkError(Status.SUCCESS)
    assert ndk.NdkError(Status.PENDING) != ndk.ObjectClosedError(str(Status.PENDING))
    error = ndk.NdkError(Status.PENDING, "m")
    error.step = "connect"  # extra attributes travel too
    assert round_trip(error).step == "connect"


def test_adapter_info_is_a_value():
    with ndk.open_adapter("soft") as ad, ndk.open_adapter("soft", max_cq_depth=16) as other:
        info, again = ad.query_info(), ad.query_info()
        assert info == again and not info != again and hash(info) == hash(again)
        assert info != other.query_info() and info != 5
        copy = round_trip(info)
        assert copy == info and repr(copy) == repr(info)
        fields = info._asdict()
        assert list(fields) == list(ndk.AdapterInfo._fields)
        assert fields["max_cq_depth"] == info.max_cq_depth
        assert fields["version"] == info.version and fields["adapter_flags"] == info.adapter_flags


def test_sge_violation_and_rule_are_values():
    sge = ndk.Sge(0x1000, 64, 7)
    assert sge == ndk.Sge(0x1000, 64, 7) and sge != ndk.Sge(0x1000, 65, 7)
    assert hash(sge) == hash(ndk.Sge(0x1000, 64, 7)) and round_trip(sge) == sge
    assert sge._asdict() == {"virtual_address": 0x1000, "length": 64, "memory_region_token": 7}
    assert tuple(sge._asdict()) == ndk.Sge._fields
    violation = ndk.Violation("CQ-ARM", "CQ#1", "NdkArmCq", "armed twice", "3.2",
                              side="consumer", severity="warning")
    assert round_trip(violation) == violation and round_trip(violation).side == "consumer"
    for rule in ndk.rules():
        assert round_trip(rule) == rule and round_trip(rule).summary == rule.summary
