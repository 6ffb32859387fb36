"""Cq.affinity and Cq.notification_cpu (docs/semantics.md CQ-AFFINITY): what NdkCreateCq was
given, and where the latest notification callback ran; the scenario CQ-NOTIFICATION-AFFINITY
judges a provider with them."""

import os

import ndk
from ndk import CqNotify, Status


def test_cq_reports_the_affinity_it_was_created_with():
    with ndk.open_adapter("soft") as adapter:
        assert adapter.create_cq(8).get(timeout=5).affinity is None
        assert adapter.create_cq(8, affinity=1).get(timeout=5).affinity == (1, 0)
        assert adapter.create_cq(8, affinity=(1, 0)).get(timeout=5).affinity == (1, 0)


def test_notification_cpu_is_none_until_a_callback_ran():
    with ndk.open_adapter("soft") as adapter:
        cq = adapter.create_cq(8).get(timeout=5)
        assert cq.notification_cpu is None
        pd = adapter.create_pd().get(timeout=5)
        qp = pd.create_qp(cq, cq, receive_queue_depth=2, initiator_queue_depth=2).get(timeout=5)
        buffer = bytearray(64)
        mr = pd.create_mr().get(timeout=5)
        assert mr.register(buffer, flags=ndk.MrFlag.ALLOW_LOCAL_WRITE).wait(timeout=5) \
            == Status.SUCCESS
        assert qp.receive([mr.sge(0, 64)], request_context=1) == Status.SUCCESS
        cq.arm(CqNotify.ANY)
        qp.flush()
        assert cq.wait_notification(timeout=5) == Status.SUCCESS
        # The engine thread has the process's processors when no affinity was asked.
        assert cq.notification_cpu in os.sched_getaffinity(0)
