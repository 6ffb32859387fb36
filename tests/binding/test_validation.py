"""The validation layer from Python: ndk.Rule, ndk.Violation, validated adapters, the default
setting, and the raw escape hatch ndk.testing.raw (docs/validation.md).

Calls that could crash the interpreter if something regressed (a raw call on a closed object,
a provider call that might keep the GIL while it blocks) run in a subprocess with a timeout, so
a crash or a hang is one failed test, not a dead suite.
"""

import gc
import os
import subprocess
import sys
import textwrap

import pytest

import ndk
from ndk import CqNotify, Status
from ndk.testing import raw

SIDES = {"provider", "consumer"}
SEVERITIES = {"error", "warning"}


def run_python(script, timeout=60):
    """Run `script` in a fresh interpreter with this one's PYTHONPATH; its stdout, or fail."""
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=dict(os.environ),
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the script hung for {timeout} s; its output so far:\n{exc.stdout}\n{exc.stderr}")
    assert done.returncode == 0, f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done.stdout


# --- the rule table ------------------------------------------------------------------------


def test_rules_are_the_layers_table():
    rules = ndk.rules()
    assert rules and all(isinstance(rule, ndk.Rule) for rule in rules)
    ids = [rule.id for rule in rules]
    assert len(ids) == len(set(ids))
    for rule in rules:
        assert rule.side in SIDES and rule.severity in SEVERITIES, rule
        assert rule.section and rule.summary.endswith("."), rule
    (inline,) = [rule for rule in rules if rule.id == "CREATE-COMPLETION-INLINE"]
    assert (inline.side, inline.severity, inline.section) == ("provider", "error", "1.0")
    assert repr(inline) == "<ndk.Rule CREATE-COMPLETION-INLINE (provider error, digest 1.0)>"
    # Both sides and both severities occur (consumer rules, warnings).
    assert {rule.side for rule in rules} == SIDES
    assert {rule.severity for rule in rules} == SEVERITIES


def test_rules_compare_by_value_and_are_read_only():
    first, again = ndk.rules()[0], ndk.rules()[0]
    assert first == again and hash(first) == hash(again) and first is not again
    assert first != ndk.rules()[1]
    with pytest.raises(AttributeError):
        first.id = "OTHER"


# --- violations ----------------------------------------------------------------------------


def test_violation_fields_repr_and_equality():
    v = ndk.Violation("CQ-NOTIFY-TWICE", "CQ#3", "NdkCqNotificationCallback", "second call",
                      "3.2")
    assert (v.rule, v.object, v.call, v.message, v.section, v.side, v.severity) == (
        "CQ-NOTIFY-TWICE", "CQ#3", "NdkCqNotificationCallback", "second call", "3.2",
        "provider", "error")
    assert repr(v) == ("<ndk.Violation CQ-NOTIFY-TWICE (provider error, digest 3.2) "
                       "object='CQ#3' call='NdkCqNotificationCallback' message='second call'>")
    same = ndk.Violation(rule="CQ-NOTIFY-TWICE", object="CQ#3", call="NdkCqNotificationCallback",
                         message="second call", section="3.2", side="provider", severity="error")
    assert v == same and hash(v) == hash(same) and len({v, same}) == 1
    assert v != ndk.Violation("CQ-NOTIFY-TWICE", "CQ#3", "NdkCqNotificationCallback",
                              "second call", "3.2", side="consumer")
    assert v != ndk.Violation("CQ-NOTIFY-TWICE", "CQ#3", "NdkCqNotificationCallback",
                              "second call", "3.2", severity="warning")
    with pytest.raises(AttributeError):
        v.rule = "OTHER"
    with pytest.raises(ValueError, match="side must be 'provider' or 'consumer'"):
        ndk.Violation("R", "o", "c", "m", "1.0", side="both")
    with pytest.raises(ValueError, match="severity must be 'error' or 'warning'"):
        ndk.Violation("R", "o", "c", "m", "1.0", severity="fatal")


def test_the_issues_example_works_as_written():
    ad = ndk.open_adapter("soft", validate=True, create_mode="inline",
                          misbehave="complete_after_inline")
    ad.create_pd()
    assert any(v.rule == "CREATE-COMPLETION-INLINE" for v in ad.violations())
    ok = ndk.open_adapter("soft", validate=True)
    ok.create_pd().get()
    assert ok.violations() == []
    ad.close()
    ok.close()


def test_a_violation_record_names_rule_object_call_and_section():
    with ndk.open_adapter("soft", validate=True, create_mode="inline",
                          misbehave="complete_after_inline") as ad:
        ad.create_pd()
        (v,) = [v for v in ad.violations() if v.rule == "CREATE-COMPLETION-INLINE"]
        assert (v.call, v.section, v.side, v.severity) == ("NdkCreatePd", "1.0", "provider", "error")
        assert v.object and v.message


def test_violations_outlive_the_adapter_and_can_be_cleared():
    ad = ndk.open_adapter("soft", validate=True, create_mode="inline",
                          misbehave="complete_after_inline")
    assert ad.validated
    session = ad.validation
    assert isinstance(session, ndk.ValidationSession)
    ad.create_pd()
    ad.close()
    recorded = ad.violations()
    assert any(v.rule == "CREATE-COMPLETION-INLINE" for v in recorded)
    del ad
    gc.collect()
    assert session.violations() == recorded  # the session outlives the adapter
    session.clear()
    assert session.violations() == []


def test_clear_violations_on_an_open_adapter():
    with ndk.open_adapter("soft", validate=True, create_mode="inline",
                          misbehave="complete_after_inline") as ad:
        ad.create_pd()
        assert ad.violations()
        ad.clear_violations()
        assert ad.violations() == []


def test_an_adapter_opened_without_validation():
    with ndk.open_adapter("soft", validate=False) as ad:
        assert not ad.validated
        assert ad.validation is None
        assert ad.violations() == []
        ad.clear_violations()  # nothing to clear, and no error
        assert ad.create_pd().get(timeout=5) is not None
    assert ad.violations() == []


# --- the default setting -------------------------------------------------------------------


def test_the_default_is_off_outside_the_pytest_plugin_and_can_be_set():
    assert ndk.validate_default() is False  # this suite does not load ndk.testing as a plugin
    with ndk.open_adapter("soft") as bare:
        assert not bare.validated
    previous = ndk.set_validate_default(True)
    try:
        assert previous is False and ndk.validate_default() is True
        with ndk.open_adapter("soft") as ad, ndk.open_adapter("soft", validate=False) as off:
            assert ad.validated and not off.validated
    finally:
        ndk.set_validate_default(previous)
    with pytest.raises(TypeError, match="takes a bool"):
        ndk.set_validate_default(1)


def test_the_layers_timeout_option_is_a_keyword_and_needs_the_layer():
    with ndk.open_adapter("soft", validate=True, validate_timeout_ms=50) as ad:
        assert ad.knobs.validate_timeout_ms == 50
    with pytest.raises(ValueError, match="validate_timeout_ms: an option of the validation layer"):
        ndk.open_adapter("soft", validate=False, validate_timeout_ms=50)


def test_exports():
    for name in ("Rule", "Violation", "ValidationSession", "ValidationRequired", "rules",
                 "validate_default", "set_validate_default"):
        assert name in ndk.__all__ and hasattr(ndk, name), name


# --- ndk.testing.raw -----------------------------------------------------------------------


def test_raw_refuses_objects_of_an_adapter_without_validation():
    with ndk.open_adapter("soft", validate=False) as ad:
        cq = ad.create_cq(cq_depth=8).get(timeout=5)
        connector = ad.create_connector().get(timeout=5)
        for call in (lambda: raw.arm_cq(cq, CqNotify.ANY), lambda: raw.get_cq_results(cq, 1),
                     lambda: raw.get_cq_results_ex(cq, 1),
                     lambda: raw.get_connection_data_null(connector, 16)):
            with pytest.raises(ndk.ValidationRequired, match="needs an object of a validated adapter"):
                call()
        # Above all once closed: the provider's object is gone, nothing may reach it.
        cq.close().wait(timeout=5)
        with pytest.raises(ndk.ValidationRequired, match="raw.arm_cq"):
            raw.arm_cq(cq, CqNotify.ANY)
    assert issubclass(ndk.ValidationRequired, RuntimeError)


def test_raw_calls_on_open_objects_of_a_validated_adapter():
    with ndk.open_adapter("soft", validate=True) as ad:
        cq = ad.create_cq(cq_depth=8).get(timeout=5)
        assert raw.arm_cq(cq, CqNotify.ANY) is None
        assert raw.get_cq_results(cq, 4) == []
        assert raw.get_cq_results_ex(cq, 4) == []
        connector = ad.create_connector().get(timeout=5)
        status, length = raw.get_connection_data_null(connector, 0)
        assert isinstance(status, Status) and isinstance(length, int)
        # NULL with a zero length is allowed.  (An unconnected connector's status may draw a
        # STATUS-UNDOCUMENTED warning: the contract tolerates it.)
        assert [v for v in ad.violations() if v.severity == "error"] == []


def test_raw_connection_data_with_null_and_a_length_is_reported():
    with ndk.open_adapter("soft", validate=True) as ad:
        connector = ad.create_connector().get(timeout=5)
        status, _ = raw.get_connection_data_null(connector, 16)
        assert isinstance(status, Status)
        found = [v for v in ad.violations() if v.rule == "PRIVATE-DATA-NULL"]
        assert found and found[0].side == "consumer" and found[0].call == "NdkGetConnectionData"


def test_raw_call_on_a_closed_cq_is_reported_not_forwarded():
    out = run_python("""
        import ndk
        from ndk import CqNotify
        from ndk.testing import raw
        ad = ndk.open_adapter("soft", validate=True)
        cq = ad.create_cq(cq_depth=8).get(timeout=5)
        assert cq.close().wait(timeout=5) == ndk.Status.SUCCESS
        raw.arm_cq(cq, CqNotify.ANY)
        assert raw.get_cq_results(cq, 1) == []
        print(sorted({(v.rule, v.call) for v in ad.violations()}))
        ad.close()
    """)
    assert out.strip() == "[('OBJECT-CLOSED-CALL', 'NdkArmCq'), ('OBJECT-CLOSED-CALL', 'NdkGetCqResults')]"


# --- the GIL around provider calls (the soft provider's knob hold) ---------------------------

HELD_CALL = """
    import threading, time
    import ndk
    from ndk.testing import raw

    def held(ad, function, call):
        '''Run call() on a thread while `function` is held in the provider; this thread must
        run meanwhile (it could not if the blocked call kept the GIL).'''
        ad.knobs.hold = function
        result = []
        thread = threading.Thread(target=lambda: result.append(call()), daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while ad.knobs.held != 1:
            assert time.monotonic() < deadline, f"{function} was never held"
            time.sleep(0.005)
        yield
        ad.knobs.release = 1
        thread.join(10)
        assert not thread.is_alive(), f"{function} did not return after release"
"""


def test_blocking_provider_calls_release_the_gil():
    out = run_python(HELD_CALL + """
    def run(ad, function, call):
        for _ in held(ad, function, call):
            pass
        print(function)

    with ndk.open_adapter("soft") as ad:
        cq = ad.create_cq(cq_depth=64).get(timeout=5)
        pd = ad.create_pd().get(timeout=5)
        qp = pd.create_qp(cq, cq, receive_queue_depth=8, initiator_queue_depth=8).get(timeout=5)
        srq = pd.create_srq(srq_depth=8).get(timeout=5)
        run(ad, "NdkGetCqResults", lambda: cq.get_results(1))
        run(ad, "NdkGetCqResultsEx", lambda: cq.get_results_ex(1))
        run(ad, "NdkArmCq", lambda: cq.arm(ndk.CqNotify.ANY))
        run(ad, "NdkSend", lambda: qp.send([]))
        run(ad, "NdkReceive", lambda: qp.receive([]))
        run(ad, "NdkWrite", lambda: qp.write([], 0, 0))
        run(ad, "NdkRead", lambda: qp.read([], 0, 0))
        run(ad, "NdkSrqReceive", lambda: srq.receive([]))
    """, timeout=120)
    assert out.split() == ["NdkGetCqResults", "NdkGetCqResultsEx", "NdkArmCq", "NdkSend",
                           "NdkReceive", "NdkWrite", "NdkRead", "NdkSrqReceive"]


def test_raw_calls_concurrent_with_a_held_poll_are_reported():
    out = run_python(HELD_CALL + """
    with ndk.open_adapter("soft", validate=True) as ad:
        cq = ad.create_cq(cq_depth=8).get(timeout=5)
        for _ in held(ad, "NdkGetCqResults", lambda: cq.get_results(1)):
            raw.get_cq_results(cq, 1)   # bypasses the consumer's per-CQ serialization
        for _ in held(ad, "NdkGetCqResultsEx", lambda: cq.get_results_ex(1)):
            raw.arm_cq(cq, ndk.CqNotify.ANY)
        print(sorted({(v.rule, v.side) for v in ad.violations()}))
    """, timeout=120)
    assert out.strip() == "[('CQ-CONCURRENT-CALL', 'consumer')]"
