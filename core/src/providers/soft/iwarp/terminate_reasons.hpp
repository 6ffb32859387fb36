// The Terminate message's error fields as data: every (layer, error type, error code) the
// RFCs define (RFC 5040 section 7 for RDMAP, RFC 5041 section 7 for DDP, RFC 5044 section
// 8 and RFC 6581 section 8 for MPA; IANA's "RDDP" registry, RFC 6580), each with a name,
// so that the provider's mapping to NDK statuses and events is one table lookup away.  The
// codes agree with enum term_elayer/ddp_ecode/rdmap_ecode/llp_ecode in Linux siw's iwarp.h.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace ndk::soft::iwarp {

enum class TerminateLayer : std::uint8_t { rdmap = 0, ddp = 1, llp = 2 };

enum class TerminateReason {
    unknown, // a combination no RFC defines (a peer's bug, or a later RFC's code)
    // RDMAP (layer 0)
    rdmap_local_catastrophic,
    rdmap_invalid_stag,
    rdmap_base_or_bounds,
    rdmap_access_rights,
    rdmap_stag_not_associated,
    rdmap_to_wrap,
    rdmap_protection_cannot_invalidate,
    rdmap_protection_unspecified,
    rdmap_invalid_version,
    rdmap_unexpected_opcode,
    rdmap_catastrophic_stream,
    rdmap_catastrophic_global,
    rdmap_operation_cannot_invalidate,
    rdmap_operation_unspecified,
    // DDP (layer 1)
    ddp_local_catastrophic,
    ddp_tagged_invalid_stag,
    ddp_tagged_base_or_bounds,
    ddp_tagged_stag_not_associated,
    ddp_tagged_to_wrap,
    ddp_tagged_invalid_version,
    ddp_untagged_invalid_qn,
    ddp_untagged_msn_no_buffer,
    ddp_untagged_msn_range,
    ddp_untagged_invalid_mo,
    ddp_untagged_message_too_long,
    ddp_untagged_invalid_version,
    // LLP (layer 2), MPA (error type 0)
    mpa_stream_lost,
    mpa_crc_error,
    mpa_marker_mismatch,
    mpa_invalid_request_reply,
    mpa_local_catastrophic,
    mpa_insufficient_ird,
    mpa_no_matching_rtr,
};

struct TerminateReasonEntry {
    std::uint8_t layer;
    std::uint8_t etype;
    std::int16_t code; // -1: any code (the "local catastrophic" types)
    TerminateReason reason;
    std::string_view name; // as the registry words it
};

std::span<const TerminateReasonEntry> terminate_reason_table();
const TerminateReasonEntry *find_terminate_reason(std::uint8_t layer, std::uint8_t etype,
                                                  std::uint8_t code);
// The entry of a reason (unknown: nullptr), for a sender filling a Terminate's fields.
const TerminateReasonEntry *terminate_reason_entry(TerminateReason reason);

} // namespace ndk::soft::iwarp
