"""Per-provider quirk table: known, accepted deviations from a conformance rule.

A scenario checks one rule for every provider and never asks which provider it runs on
(no ``if provider == "verbs"`` in scenarios: that would hide the deviation inside the test).
When a provider cannot follow a rule for a reason outside its control -- the hardware or the
kernel verbs layer does not expose what the rule needs -- the deviation is written down here
instead, once, with its reason. The ``ndk.testing`` plugin then skips every scenario marked
``@pytest.mark.rule(ID)`` for that provider with the reason ``quirk of <provider>: <reason>``,
so it shows up in the conformance matrix as a skip with a reason, not as a silent pass.

Shape: ``QUIRKS[provider name][rule ID] = reason``; for the verbs provider the key may also be
a device kind (``verbs:rxe``, ``verbs:siw``) or ``verbs`` for every device (``quirk_keys``). Keep reasons short and factual, and cite
what makes the deviation unavoidable. A quirk is not a place for bugs: a provider that
could follow the rule but does not should fail the scenario.

Two providers in one pair scenario (``--ndk-peer-provider``: the ``pair`` fixture's passive
side on another provider) are a pair of their own: such a scenario is looked up under the
pair's key, ``ACTIVE|PASSIVE`` (``soft:tcp|verbs:siw``: soft:tcp connects, siw accepts), and
not under either provider's own key, whose entries say what happens between two adapters of
that provider.
"""

from __future__ import annotations

import re

# Why the verbs provider cannot follow a rule; the evidence (what the lane saw, and where the
# kernel or librdmacm says so) is in docs/semantics.md, "Quirks of the verbs provider".
_NO_FAST_REGISTER = (
    "user-space verbs has no fast-register work request (IB_WR_REG_MR is kernel-only): "
    "FRMRPageCount is 0 and NdkInitializeFastRegisterMr returns STATUS_IMPLEMENTATION_LIMIT")
_NO_HELD_DEFER = (
    "DEFER is a hint (spec/ndkpi.md: 'the provider may still issue the request at any time'); "
    "ibv_post_send issues every request at once")
_FLUSH_IS_ERROR = (
    "verbs flushes a queue only by moving the QP to the error state (IBV_QPS_ERR), which an "
    "RC QP does not leave while connected: after NdkFlush the QP is unusable")
_NO_OCTET_COUNTERS = (
    "the device keeps no RDMA octet / frame counters the provider can read (rxe's hw_counters "
    "count packets device-wide, siw none)")
_DEVICE_IS_SHARED = (
    "an adapter opens the RDMA device, and several adapters may open one device and share its "
    "addresses (rdma_cm binds addresses per device)")
_NO_MEMORY_WINDOWS = "siw implements no memory windows (ibv_alloc_mw fails with EOPNOTSUPP)"
_NO_LAM = (
    "user-space verbs cannot map pages to device addresses (ib_dma_map_* is kernel-only): "
    "NdkBuildLAM returns STATUS_NOT_SUPPORTED, so no fast registration or privileged-token "
    "logical address exists")
_NO_DISCONNECT_REASON = (
    "rdma_cm does not carry why a connection ended (RDMA_CM_EVENT_DISCONNECTED has no reason): "
    "ProviderDisconnectReason is 0, 'not provided' (digest 1.11)")
_ERROR_NOT_SIGNALLED_RXE = (
    "an RC error on rxe moves both QPs to the error state without any rdma_cm event, so the "
    "peer gets no disconnect event; rxe reports a local length or key error with "
    "IBV_WC_LOC_QP_OP_ERR (STATUS_INVALID_DEVICE_REQUEST) and every remote access failure, "
    "range included, with IBV_WC_REM_ACCESS_ERR (STATUS_ACCESS_VIOLATION)")
_ERROR_NOT_SIGNALLED_SIW = (
    "iWARP has no response to an RDMA Write or Send: a failed one completes SUCCESS at the "
    "sender, the peer terminates the stream, and later requests complete CANCELLED or the QP "
    "reports CONNECTION_INVALID; a failed Read completes CANCELLED, not with the peer's status")
_ERROR_NO_SOLICITED_FIRE = (
    "an error completion does not fire a solicited-only CQ arm (ibv_req_notify_cq with "
    "solicited_only) on this device")
_RECEIVE_AFTER_ERROR_RXE = (
    "rxe does not complete a receive posted while the QP is in the error state; the provider "
    "completes it CANCELLED itself when it knows the QP is there (after a flush or an error "
    "completion: VERBS-POST-IN-ERROR), not after an error only the peer saw")
_NOT_IWARP_ROCE = (
    "RoCE connections are not mapped onto TCP connections: OID_NDK_CONNECTIONS lists one entry "
    "per connection with MappedToTcp FALSE, where these scenarios count iWARP's ND/TCP pairs "
    "(digest 3.7)")
_READ_FLAGS = (
    "verbs has no RDMA-read-sink access and no Read with local invalidate (no "
    "IBV_WR_RDMA_READ_WITH_INV in rxe or siw): the adapter sets RDMA_READ_SINK_NOT_REQUIRED "
    "and not RDMA_READ_LOCAL_INVALIDATE_SUPPORTED")
_SIW_ESTABLISHED_EARLY = (
    "on iWARP the kernel finishes the MPA exchange before NdkConnect completes: the passive "
    "Accept has already succeeded, there is nothing left for an active Reject to refuse")
_SIW_PEER_FLUSHED = (
    "siw moves the QP to the error state when the peer closes the stream: a peer disconnect "
    "flushes the receives")
_SIW_SOLICITED = (
    "siw does not fire a solicited-only CQ arm for a solicited Send (the same scenarios pass "
    "on rxe through the same provider code)")
_SIW_ONE_READ_SGE = "siw takes one SGE per RDMA Read sink (max_sge_rd = 1)"
_SIW_NO_SRQ_LIMIT = "siw has no SRQ limit event (ibv_modify_srq IBV_SRQ_LIMIT: EOPNOTSUPP)"
_SIW_NO_SRQ_RESIZE = (
    "siw does not resize an SRQ: NdkModifySrq with a new depth returns STATUS_NOT_SUPPORTED "
    "(ibv_modify_srq with IBV_SRQ_MAX_WR fails)")
_SIW_EVERY_OBJECT = (
    "these scenarios create one object of every kind, a memory window included, and siw has "
    "none (ibv_alloc_mw: EOPNOTSUPP)")

_MW_GUARD = (
    "invalidating a type 2 window that is not bound crashes Linux 6.1 rxe (NULL dereference in "
    "rxe_invalidate_mw), so the provider refuses it inline with STATUS_INVALID_DEVICE_REQUEST "
    "(VERBS-MW-GUARD)")

# Window scenarios whose check is an access error through the window and what follows it.
_WINDOW_ERROR_RULES = (
    "BIND-WINDOW-BOUNDS", "BIND-READ-ONLY-WINDOW", "BIND-TWICE", "MW-INVALIDATE",
    "MW-SEND-AND-INVALIDATE",
)

# Scenarios that need NdkBuildLAM (fast registration, privileged-token addresses).
_LAM_RULES = (
    "DEFER-FAST-REGISTER-EXAMPLE", "FRMR-DATA", "FRMR-FBO-MISMATCH", "FRMR-INVALIDATE",
    "FRMR-LENGTH-BEYOND-PAGES", "FRMR-LOCAL-ACCESS", "FRMR-LOCAL-WITHOUT-REMOTE-ACCESS",
    "FRMR-REMOTE-WITHOUT-ACCESS", "FRMR-REREGISTER", "FRMR-SEND-AND-INVALIDATE",
    "FRMR-SEND-AND-INVALIDATE-PLAIN-RESULTS", "PRIVILEGED-NOT-REMOTE", "PRIVILEGED-RECEIVE-SINK",
    "PRIVILEGED-RELEASED-LAM", "PRIVILEGED-SEND-SOURCE", "PRIVILEGED-WRITE-SOURCE",
)
# Scenarios that provoke a failed request (a send larger than the receive, a bad token or
# range, missing access rights) and check its status and what the connection does next.
_ERROR_RULES = (
    "SEND-LARGER-THAN-RECEIVE", "ERROR-OVERSIZED-SEND", "ERROR-FLUSH-IN-ORDER",
    "ERROR-DISCONNECT-REASON", "ERROR-SILENT-FAILURE", "ERROR-ERRORS-ARM",
    "ERROR-LOCAL-ACCESS-VIOLATION", "ERROR-WRITE-BEYOND-REGION", "ERROR-READ-BEYOND-REGION",
    "ERROR-BAD-REMOTE-TOKEN", "ERROR-REMOTE-ACCESS-DENIED", "WRITE-BEYOND-REMOTE",
    "WRITE-READ-ONLY-REGION", "WRITE-LOCAL-SGE-INVALID", "WRITE-LOCAL-TOKEN-AS-REMOTE",
    "WRITE-OTHER-PD-TOKEN", "READ-SINK-NO-LOCAL-WRITE", "READ-BEYOND-REMOTE",
    "READ-NO-REMOTE-READ", "SEND-AND-INVALIDATE-BAD-TOKEN", "SEND-SILENT-FAILURE",
    "RECV-NO-LOCAL-WRITE", "DISCONNECT-ERROR", "ND-RESULT-BUFFER-OVERFLOW",
    "ND-RESULT-ACCESS-VIOLATION", "ND-RESULT-REMOTE-ERROR",
)
# OID scenarios that count iWARP's ND/TCP entry pairs.
_IWARP_PAIR_RULES = (
    "OID-CONNECTIONS-EMPTY", "OID-CONNECTIONS-PAIRS", "OID-CONNECTIONS-LOOPBACK",
    "OID-CONNECTIONS-HEADER-SIZE-CAP", "OID-CONNECTIONS-DISCONNECT", "OID-CONNECTIONS-CLOSE",
)
# Scenarios that create one object of every kind.
_EVERY_OBJECT_RULES = (
    "ADAPTER-VERSION-OBJECT-HEADERS", "ADAPTER-OBJECT-TYPES", "ADAPTER-CLOSE-CLOSES-OBJECTS",
    "LIFETIME-ORDERED-CLOSE-INLINE", "LIFETIME-PARENT-PD-PENDS", "LIFETIME-PARENT-PD-ALL-CHILDREN",
    "LIFETIME-CLOSED-OBJECT-RAISES", "LIFETIME-CLOSE-PENDING-COMPLETES-ONCE", "VALIDATE-CLEAN-RUN",
)
# Scenarios that need a memory window.
_MW_RULES = (
    "MW-CLOSE", "MW-MANY", "BIND-LOCAL-WRITE-REQUIRED", "BIND-READ-ONLY-WINDOW",
    "BIND-REMOTE-ACCESS", "BIND-SILENT-SUCCESS", "BIND-TWICE", "BIND-WINDOW-BOUNDS",
    "BIND-OUTSIDE-MR", "MW-DEREGISTER", "MW-INVALIDATE", "MW-INVALIDATE-UNBOUND",
    "MW-SEND-AND-INVALIDATE", "RESULT-RECEIVE-AND-INVALIDATE",
    "RESULT-RECEIVE-AND-INVALIDATE-PLAIN", "RESULT-TYPE-BIND-INVALIDATE",
    "ND-RESULT-INVALIDATION-ERROR", "MW-CREATE", "MW-CREATE-RESOURCES",
    "VALIDATE-RESULT-INVALIDATE-TOKEN",
)

# What the loop provider (core/src/providers/loop/), the example provider on the provider kit,
# does not implement: its creates return STATUS_NOT_SUPPORTED and NDK_ADAPTER_INFO says so
# (FRMRPageCount, MaxWindowSize and MaxSrqDepth are 0; SRQ scenarios skip on MaxSrqDepth).
_LOOP = "the loop example provider implements no "
_LOOP_NO_FAST_REGISTER = (
    _LOOP + "fast registration: NdkCreateMr with FastRegister TRUE returns STATUS_NOT_SUPPORTED "
    "and FRMRPageCount is 0")
_LOOP_NO_MW = _LOOP + "memory windows: NdkCreateMw returns STATUS_NOT_SUPPORTED (MaxWindowSize 0)"
_LOOP_NO_SHARED_ENDPOINT = (
    _LOOP + "shared endpoints: NdkCreateSharedEndpoint returns STATUS_NOT_SUPPORTED")
_LOOP_NO_LAM = (
    _LOOP + "logical address mappings: NdkBuildLAM returns STATUS_NOT_SUPPORTED and the "
    "privileged token is 0")
_LOOP_EVERY_OBJECT = (
    "these scenarios create one object of every kind, and " + _LOOP + "memory window, "
    "fast-register MR or shared endpoint (their creates return STATUS_NOT_SUPPORTED)")
_LOOP_SOME_PARAMETERS = (
    "this scenario runs over every kind of a PD's children (or of MR), fast-register MRs and "
    "memory windows included, and " + _LOOP + "fast registration or memory windows (their "
    "creates return STATUS_NOT_SUPPORTED)")
_LOOP_NO_TCP = (
    "the loop provider's connections run on no TCP connection: OID_NDK_CONNECTIONS lists one "
    "entry per connection with MappedToTcp FALSE, where these scenarios count iWARP's ND/TCP "
    "pairs (digest 3.7)")
_LOOP_SHARED_ENDPOINT_RULES = (
    "SE-CREATE", "SE-CREATE-RESOURCES", "SE-CREATE-INVALID-ADDRESS", "SE-CREATE-PORT-ZERO",
    "SE-CREATE-SHARING-VIOLATION", "SE-CREATE-WILDCARD", "SE-CLOSE-FREES-PORT",
    "ENDPOINT-ADDRESS-ALREADY-EXISTS", "ENDPOINT-CONNECT-PORT-IN-USE",
    "ENDPOINT-SHARED-ENDPOINT-HELD", "ENDPOINT-SHARED-ENDPOINT-PORT",
    "LISTENER-LISTEN-SHARED-ENDPOINT-PORT", "OID-LOCAL-ENDPOINTS", "OID-LOCAL-ENDPOINTS-CLOSE",
    "OID-BUFFER-TOO-SHORT", "KNOB-FAIL-OTHER-STATUS",
)
_LOOP_FAST_REGISTER_RULES = (
    "ADAPTER-INFO-FRMR-PAGE-COUNT", "MR-FRMR-INITIALIZE", "MR-FRMR-INITIALIZE-FAILURE",
    "MR-FRMR-INITIALIZE-TWICE", "MR-FRMR-ZERO-PAGES", "MR-KIND-REGISTER-ON-FRMR",
    "READ-LOCAL-INVALIDATE", "FRMR-DATA", "FRMR-FBO-MISMATCH", "FRMR-INVALIDATE",
    "FRMR-LENGTH-BEYOND-PAGES", "FRMR-LOCAL-ACCESS", "FRMR-LOCAL-WITHOUT-REMOTE-ACCESS",
    "FRMR-REMOTE-WITHOUT-ACCESS", "FRMR-REREGISTER", "FRMR-SEND-AND-INVALIDATE",
    "FRMR-SEND-AND-INVALIDATE-PLAIN-RESULTS", "DEFER-FAST-REGISTER-EXAMPLE",
)

QUIRKS: dict[str, dict[str, str]] = {
    "verbs": {
        "ADAPTER-INFO-FRMR-PAGE-COUNT": _NO_FAST_REGISTER,
        "MR-FRMR-INITIALIZE-TWICE": _NO_FAST_REGISTER,
        "MR-FRMR-ZERO-PAGES": _NO_FAST_REGISTER,
        "MR-KIND-REGISTER-ON-FRMR": _NO_FAST_REGISTER,
        "MR-FRMR-INITIALIZE": _NO_FAST_REGISTER,
        "MR-FRMR-INITIALIZE-FAILURE": _NO_FAST_REGISTER,
        "DEFER-HELD": _NO_HELD_DEFER,
        "DEFER-FLUSH": _FLUSH_IS_ERROR,
        "QP-FLUSH-USABLE": _FLUSH_IS_ERROR,
        "OID-STATISTICS-RDMA-SEND": _NO_OCTET_COUNTERS,
        "OID-STATISTICS-RDMA-READ-WRITE": _NO_OCTET_COUNTERS,
        "ADAPTER-ADDRESS-UNIQUE": _DEVICE_IS_SHARED,
        "ENDPOINT-INVALID-ADDRESS": _DEVICE_IS_SHARED,
        **{rule: _NO_LAM for rule in _LAM_RULES},
        "DISCONNECT-EVENT-EX": _NO_DISCONNECT_REASON,
        "DISCONNECT-CLOSE": _NO_DISCONNECT_REASON,
        "ERROR-READ-SINK-FLAG": _READ_FLAGS,
        "READ-SINK-FLAG-REQUIRED": _READ_FLAGS,
        "READ-LOCAL-INVALIDATE": _READ_FLAGS,
    },
    "loop": {
        **{rule: _LOOP_NO_MW for rule in _MW_RULES},
        **{rule: _LOOP_NO_FAST_REGISTER for rule in _LOOP_FAST_REGISTER_RULES},
        **{rule: _LOOP_NO_LAM for rule in _LAM_RULES if rule.startswith("PRIVILEGED-")},
        **{rule: _LOOP_NO_SHARED_ENDPOINT for rule in _LOOP_SHARED_ENDPOINT_RULES},
        **{rule: _LOOP_EVERY_OBJECT for rule in _EVERY_OBJECT_RULES},
        "LIFETIME-PARENT-PD-PENDS": _LOOP_SOME_PARAMETERS,
        "MR-CREATE": _LOOP_SOME_PARAMETERS,
        **{rule: _LOOP_NO_TCP for rule in _IWARP_PAIR_RULES},
    },
    "verbs:rxe": {
        **{rule: _ERROR_NOT_SIGNALLED_RXE for rule in _ERROR_RULES},
        "CQ-ARM-ERRORS-MATCH-SOLICITED": _ERROR_NO_SOLICITED_FIRE,
        "ERROR-SOLICITED-ARM": _ERROR_NO_SOLICITED_FIRE,
        **{rule: _ERROR_NOT_SIGNALLED_RXE for rule in _WINDOW_ERROR_RULES},
        "MW-INVALIDATE-UNBOUND": _MW_GUARD,
        "RESULT-RECEIVE-AND-INVALIDATE-PLAIN": _MW_GUARD,
        "ND-RESULT-INVALIDATION-ERROR": _MW_GUARD,
        **{rule: _NOT_IWARP_ROCE for rule in _IWARP_PAIR_RULES},
    },
    "verbs:siw": {
        **{rule: _NO_MEMORY_WINDOWS for rule in _MW_RULES},
        **{rule: _ERROR_NOT_SIGNALLED_SIW for rule in _ERROR_RULES},
        "ERROR-FLUSH-IN-ORDER": _ERROR_NOT_SIGNALLED_SIW,
        "ERROR-LATER-POSTS-CANCELLED": _ERROR_NOT_SIGNALLED_SIW,
        "CQ-ARM-ERRORS-MATCH-SOLICITED": _ERROR_NO_SOLICITED_FIRE,
        "ERROR-SOLICITED-ARM": _ERROR_NO_SOLICITED_FIRE,
        "REJECT-ACTIVE": _SIW_ESTABLISHED_EARLY,
        "CONNECT-ESTABLISH": _SIW_ESTABLISHED_EARLY,
        "CONNECT-COMPLETE-ABORTED": _SIW_ESTABLISHED_EARLY,
        "DISCONNECT-PEER-NOT-FLUSHED": _SIW_PEER_FLUSHED,
        "ARM-SOLICITED-SEND": _SIW_SOLICITED,
        "ARM-SOLICITED-AFTER-PLAIN": _SIW_SOLICITED,
        "ARM-SOLICITED-SENDER-CQ": _SIW_SOLICITED,
        "ARM-MERGE-SOLICITED": _SIW_SOLICITED,
        "CQ-ARM-MERGE": _SIW_SOLICITED,
        "SEND-SOLICITED": _SIW_SOLICITED,
        "READ-DATA": _SIW_ONE_READ_SGE,
        "SRQ-RECEIVE-QUEUE-FULL": _SIW_NO_SRQ_LIMIT,
        "SRQ-ARM-DISARMED": _SIW_NO_SRQ_LIMIT,
        "SRQ-MODIFY": _SIW_NO_SRQ_RESIZE,
        **{rule: _SIW_EVERY_OBJECT for rule in _EVERY_OBJECT_RULES},
    },
}

# Provider bugs found by the verbs lane and not fixed yet: the scenario still runs and is
# reported as an expected failure (xfail) with this note, so CI stays meaningful and the list
# stays visible; a fix shows up as XPASS.  Same keys as QUIRKS.
KNOWN_FAILURES: dict[str, dict[str, str]] = {
    "verbs": {
        "OID-STATISTICS-CQ-ERROR": (
            "the provider finds the overrun of an unarmed CQ at its next arm (it counts the "
            "completions it moves off the device), so CQError does not move when they arrive"),
        "REJECT-ABORTED": (
            "NdkReject right after the active side closed its connector succeeds: the "
            "abandonment reaches the passive side as an rdma_cm event only later, and "
            "rdma_reject still finds the request open"),
    },
    "verbs:rxe": {
        "OID-STATISTICS-CONNECT-FAILURE": (
            "a Connect to an unrouted address does not complete within the scenario's wait"),
        "CONNECT-HOST-UNREACHABLE": (
            "a Connect to an unrouted address does not complete within the scenario's wait"),
    },
    "verbs:siw": {
        "ACCEPT-ABORTED": (
            "an Accept right after the active side closed its connector sometimes completes "
            "SUCCESS (passed in one lane run, failed in the next): the abandonment has not "
            "reached the passive side when rdma_accept runs"),
        "FRMR-INVALIDATE-NORMAL-MR": (
            "NdkInvalidate of a normally registered region returns STATUS_UNSUCCESSFUL at post "
            "time (ibv_post_send refuses IBV_WR_LOCAL_INV); the errno is not mapped"),
        "OID-CONNECTIONS-HEADER-SIZE-CAP": (
            "opening 256 loopback connections fails with STATUS_UNSUCCESSFUL on siw in the "
            "guest; the limit hit is not established"),
    },
}


# soft:tcp against Linux siw, each way: the pair scenarios of the verbs lane's interop stage
# (tests/vm/run-interop.sh, both sides in one guest) and of the two-guest lane
# (tests/vm/two-guests.sh).  A pair scenario whose passive side is the other provider's is
# looked up under ACTIVE|PASSIVE only (quirk_keys), so each entry says what that pair does;
# the evidence (what the lanes saw, where siw's source says so) is in docs/semantics.md,
# "Quirks of soft:tcp against siw".
_SIW_TERMINATE_LAYOUT = (
    "siw's Terminate does not name the failed request to soft:tcp: siw fills its control field "
    "through little-endian bit fields (iwarp.h struct iwarp_terminate: Layer and EType "
    "swapped, M/D/R in reserved bits), so soft:tcp reads a malformed Terminate, or one with no "
    "DDP header, and the request completes STATUS_CANCELLED as after a protocol error "
    "(TCP-TERMINATE), not with the status of the error siw found")
_SIW_COMPLETES_AT_SEND = (
    "siw completes an RDMA Write or a Send once TCP has taken its bytes (iWARP has no answer to "
    "either, RFC 5040), and the soft:tcp target places them when its progress thread reads the "
    "stream: the bytes and the target's receive completion may come after the initiator's "
    "completion, which this scenario checks at once")
_SIW_RECEIVE_NOT_SOLICITED = (
    "siw never fires a solicited-only arm for a receive it completes, for a solicited Send "
    "(RDMAP Send with SE) or an error alike: siw_rqe_complete() asks siw_cq_notify_now() with "
    "SIW_WQE_SIGNALLED only (drivers/infiniband/sw/siw/siw_qp.c)")
_SIW_SENDER_SOLICITED = (
    "siw fires the sender's own solicited-only arm when its solicited Send completes: "
    "siw_sqe_complete() passes the work request's flags, SIW_WQE_SOLICITED included, to "
    "siw_cq_notify_now() (drivers/infiniband/sw/siw/siw_qp.c)")
_SIW_ONE_STAG = (
    "siw gives a registered region one STag for local and remote access (siw_mem.c: lkey = "
    "rkey = stag), so the region's local token is a valid remote token and the access succeeds")
_SIW_READ_UNCHECKED = (
    "siw does not check the remote-read right of the region a Read Request names: it builds the "
    "Read Response with siw_check_sgl_tx(pd, wqe, 0), no access flag (siw_qp_tx.c), so the "
    "Read succeeds")
_SIW_INVALIDATE_KEEPS_STREAM = (
    "siw completes its receive with an error when a Send with Invalidate names a token it "
    "cannot invalidate, but keeps the stream and sends its Terminate only when the connection "
    "closes (siw_rdmap_complete): it answers the Read that follows soft:tcp's Send "
    "(TCP-COMPLETE), so the Send completes SUCCESS")
_SIW_LOCAL_ERROR_STATUS = (
    "siw completes a request it cannot transmit (an SGE it cannot use) with "
    "IBV_WC_LOC_QP_OP_ERR, STATUS_INVALID_DEVICE_REQUEST (VERBS-STATUS), for every request type "
    "(siw_qp_sq_process), not with a protection error")
_VERBS_READ_SINK_WRITABLE = (
    "verbs has no read-sink right: the provider registers a region with "
    "NDK_MR_FLAG_RDMA_READ_SINK as IBV_ACCESS_LOCAL_WRITE (the device writes a sink), so a Read "
    "into a sink registered without NDK_MR_FLAG_ALLOW_LOCAL_WRITE succeeds")

# The memory-window and fast-registration scenarios that create the window or the mapping on
# the passive side.
_PASSIVE_MW_RULES = (
    "BIND-LOCAL-WRITE-REQUIRED", "BIND-OUTSIDE-MR", "BIND-READ-ONLY-WINDOW", "BIND-REMOTE-ACCESS",
    "BIND-SILENT-SUCCESS", "BIND-TWICE", "BIND-WINDOW-BOUNDS", "MW-DEREGISTER", "MW-INVALIDATE",
    "MW-INVALIDATE-UNBOUND", "MW-SEND-AND-INVALIDATE", "ND-RESULT-INVALIDATION-ERROR",
    "RESULT-RECEIVE-AND-INVALIDATE", "RESULT-RECEIVE-AND-INVALIDATE-PLAIN",
    "VALIDATE-RESULT-INVALIDATE-TOKEN",
)
_PASSIVE_LAM_RULES = (
    "DEFER-FAST-REGISTER-EXAMPLE", "FRMR-DATA", "FRMR-FBO-MISMATCH", "FRMR-INVALIDATE",
    "FRMR-LENGTH-BEYOND-PAGES", "FRMR-LOCAL-ACCESS", "FRMR-LOCAL-WITHOUT-REMOTE-ACCESS",
    "FRMR-REMOTE-WITHOUT-ACCESS", "FRMR-REREGISTER", "FRMR-SEND-AND-INVALIDATE",
    "FRMR-SEND-AND-INVALIDATE-PLAIN-RESULTS", "PRIVILEGED-NOT-REMOTE", "PRIVILEGED-RECEIVE-SINK",
)
# Errors siw finds as the target of soft:tcp's request, which soft:tcp learns from siw's
# Terminate.
_SIW_TARGET_ERROR_RULES = (
    "ERROR-FLUSH-IN-ORDER", "ERROR-OVERSIZED-SEND", "ND-RESULT-ACCESS-VIOLATION",
    "ND-RESULT-BUFFER-OVERFLOW", "ND-RESULT-REMOTE-ERROR", "ND-RESULT-TIMEOUT",
    "READ-BEYOND-REMOTE", "RECV-NO-LOCAL-WRITE", "SEND-LARGER-THAN-RECEIVE",
    "SEND-RECEIVER-NOT-READY", "WRITE-BEYOND-REMOTE", "WRITE-OTHER-PD-TOKEN",
    "WRITE-READ-ONLY-REGION",
)
# Errors soft:tcp finds as the target of siw's request: siw has no answer to wait for.
_SOFT_TARGET_ERROR_RULES = (
    "BIND-READ-ONLY-WINDOW", "BIND-WINDOW-BOUNDS", "ERROR-ERRORS-ARM", "ERROR-FLUSH-IN-ORDER",
    "ERROR-LATER-POSTS-CANCELLED", "ERROR-OVERSIZED-SEND", "ERROR-SILENT-FAILURE",
    "ERROR-SOLICITED-ARM", "FRMR-INVALIDATE", "FRMR-SEND-AND-INVALIDATE", "MW-INVALIDATE",
    "MW-SEND-AND-INVALIDATE", "ND-RESULT-ACCESS-VIOLATION", "ND-RESULT-BUFFER-OVERFLOW",
    "ND-RESULT-REMOTE-ERROR", "PRIVILEGED-NOT-REMOTE", "READ-BEYOND-REMOTE",
    "READ-NO-REMOTE-READ", "RECV-NO-LOCAL-WRITE", "SEND-AND-INVALIDATE-BAD-TOKEN",
    "SEND-LARGER-THAN-RECEIVE", "WRITE-BEYOND-REMOTE", "WRITE-LOCAL-TOKEN-AS-REMOTE",
    "WRITE-OTHER-PD-TOKEN", "WRITE-READ-ONLY-REGION",
)
# Scenarios that check the target's memory, or its receive completions, as soon as siw's
# Write or Send has completed.
_SIW_WRITES_CHECKED_AT_ONCE = (
    "BIND-REMOTE-ACCESS", "BIND-SILENT-SUCCESS", "DEFER-CHAIN-ORDER",
    "DEFER-FAST-REGISTER-EXAMPLE", "DEFER-SILENT-CHAIN", "FRMR-DATA", "FRMR-REREGISTER",
    "LIMITS-QUEUE-FULL", "LIMITS-SGE-COUNT", "READ-FENCE", "RESULT-COUNT-LIMIT",
    "RESULT-TYPE-WRITE", "WRITE-DATA", "WRITE-INLINE", "WRITE-REMOTE-OFFSET",
)

QUIRKS["soft:tcp|verbs:siw"] = {
    **{rule: _NO_MEMORY_WINDOWS for rule in _PASSIVE_MW_RULES},
    "VALIDATE-CLEAN-RUN": _SIW_EVERY_OBJECT,
    **{rule: _NO_LAM for rule in _PASSIVE_LAM_RULES},
    **{rule: _SIW_TERMINATE_LAYOUT for rule in _SIW_TARGET_ERROR_RULES},
    "ARM-MERGE-SOLICITED": _SIW_RECEIVE_NOT_SOLICITED,
    "ARM-SOLICITED-AFTER-PLAIN": _SIW_RECEIVE_NOT_SOLICITED,
    "ARM-SOLICITED-SEND": _SIW_RECEIVE_NOT_SOLICITED,
    "ARM-SOLICITED-SENDER-CQ": _SIW_RECEIVE_NOT_SOLICITED,
    "ERROR-SOLICITED-ARM": _SIW_RECEIVE_NOT_SOLICITED,
    "SEND-SOLICITED": _SIW_RECEIVE_NOT_SOLICITED,
    "WRITE-LOCAL-TOKEN-AS-REMOTE": _SIW_ONE_STAG,
    "READ-NO-REMOTE-READ": _SIW_READ_UNCHECKED,
    "SEND-AND-INVALIDATE-BAD-TOKEN": _SIW_INVALIDATE_KEEPS_STREAM,
    # the window is soft:tcp's, and siw writes through it
    "RESULT-TYPE-BIND-INVALIDATE": _SIW_COMPLETES_AT_SEND,
}
QUIRKS["verbs:siw|soft:tcp"] = {
    **{rule: _ERROR_NOT_SIGNALLED_SIW for rule in _SOFT_TARGET_ERROR_RULES},
    **{rule: _SIW_COMPLETES_AT_SEND for rule in _SIW_WRITES_CHECKED_AT_ONCE},
    "RESULT-TYPE-BIND-INVALIDATE": _NO_MEMORY_WINDOWS,
    "PRIVILEGED-RELEASED-LAM": _NO_LAM,
    "PRIVILEGED-SEND-SOURCE": _NO_LAM,
    "PRIVILEGED-WRITE-SOURCE": _NO_LAM,
    "ARM-SOLICITED-SENDER-CQ": _SIW_SENDER_SOLICITED,
    "READ-DATA": _SIW_ONE_READ_SGE,
    "READ-LOCAL-INVALIDATE": _READ_FLAGS,
    "READ-SINK-FLAG-REQUIRED": _READ_FLAGS,
    "READ-SINK-NO-LOCAL-WRITE": _VERBS_READ_SINK_WRITABLE,
    "WRITE-LOCAL-SGE-INVALID": _SIW_LOCAL_ERROR_STATUS,
    "DEFER-HELD": _NO_HELD_DEFER,
    "DEFER-FLUSH": _FLUSH_IS_ERROR,
}
KNOWN_FAILURES["soft:tcp|verbs:siw"] = {
    "FRMR-INVALIDATE-NORMAL-MR": KNOWN_FAILURES["verbs:siw"]["FRMR-INVALIDATE-NORMAL-MR"],
}


# What the random walker meets on a device because of a quirk above: a failure signature
# (docs/walk.md) -> the reason.  `ndk walk --past-known` (the VM lane) records such a walk as
# known and walks on with the next seed; the evidence is in docs/semantics.md, "Quirks of the
# verbs provider" (the walker's shrunk traces showed each).  A signature is coarse: a new
# fault that fails the same way on that device is counted as known too.
WALK_KNOWN: dict[str, dict[str, str]] = {
    "verbs:rxe": {
        # a receive posted on a QP already flushed (or failed) never completes
        "lost:recv": _RECEIVE_AFTER_ERROR_RXE,
    },
    "verbs:siw": {
        # a Write into a region that refuses it completes SUCCESS; the bytes never land
        "data:write": _ERROR_NOT_SIGNALLED_SIW,
    },
}


def walk_known(provider: str | None, signature: str | None) -> str | None:
    """The quirk that explains a walk of ``provider`` failing with ``signature``, or None."""
    return _lookup(WALK_KNOWN, provider, signature)


PAIR_SEPARATOR = "|"


def pair_key(active: str, passive: str) -> str:
    """The table key of a pair of providers: ``soft:tcp|verbs:siw0`` (``active`` connects,
    ``passive`` accepts)."""
    return f"{active}{PAIR_SEPARATOR}{passive}"


def quirk_keys(provider: str, peer: str | None = None) -> list[str]:
    """The table keys that apply to ``provider``, most specific first.

    ``verbs:siw0`` (the verbs provider on RDMA device siw0) is looked up as itself, then as
    ``verbs:siw`` (every siw device: the device kind is the name without its trailing number),
    then as ``verbs`` (every device).  A provider library given by path,
    ``.../libndk_NAME_provider.so``, is looked up as itself, then as ``NAME``.

    With ``peer``, the provider of a pair scenario's passive side when it is not ``provider``,
    the keys are the pair's: each key of ``provider`` with each key of ``peer``
    (``soft:tcp|verbs:siw0``, ``soft:tcp|verbs:siw``, ``soft:tcp|verbs``).
    """
    if peer is not None and peer != provider:
        return [pair_key(active, passive) for active in quirk_keys(provider)
                for passive in quirk_keys(peer)]
    keys = [provider]
    # A provider loaded from its library by path (build/core/libndk_loop_provider.so) is also
    # looked up by the name in the library's file name (loop).
    library = re.fullmatch(r"(?:.*/)?libndk_(\w+)_provider\.so", provider)
    if library is not None:
        keys.append(library.group(1))
    if provider.startswith("verbs:"):
        kind = provider.rstrip("0123456789")
        if kind != provider and kind != "verbs:":
            keys.append(kind)
        keys.append("verbs")
    return keys


def _lookup(table: dict[str, dict[str, str]], provider: str | None, rule: str | None,
            peer: str | None = None) -> str | None:
    if provider is None or rule is None:
        return None
    for key in quirk_keys(provider, peer):
        text = table.get(key, {}).get(rule)
        if text is not None:
            return text
    return None


def quirk_reason(provider: str | None, rule: str | None, peer: str | None = None) -> str | None:
    """Return the recorded reason why ``provider`` deviates from ``rule``, or None; with
    ``peer`` (a pair scenario's passive side on another provider), why that pair does."""
    return _lookup(QUIRKS, provider, rule, peer)


def known_failure(provider: str | None, rule: str | None, peer: str | None = None) -> str | None:
    """Return the note on a known, unfixed failure of ``provider`` (with ``peer``, of that
    pair) on ``rule``, or None."""
    return _lookup(KNOWN_FAILURES, provider, rule, peer)
