#include "providers/soft/iwarp/terminate_reasons.hpp"

#include <array>

namespace ndk::soft::iwarp {

namespace {

using R = TerminateReason;
constexpr std::int16_t kAnyCode = -1;

constexpr std::array kTable = {
    // RDMAP: error type 0 catastrophic, 1 remote protection, 2 remote operation.
    TerminateReasonEntry{0, 0, kAnyCode, R::rdmap_local_catastrophic, "Local Catastrophic Error"},
    TerminateReasonEntry{0, 1, 0x00, R::rdmap_invalid_stag, "Invalid Steering Tag"},
    TerminateReasonEntry{0, 1, 0x01, R::rdmap_base_or_bounds, "Base or bounds violation"},
    TerminateReasonEntry{0, 1, 0x02, R::rdmap_access_rights, "Access rights violation"},
    TerminateReasonEntry{0, 1, 0x03, R::rdmap_stag_not_associated,
                         "Steering Tag not associated with RDMAP Stream"},
    TerminateReasonEntry{0, 1, 0x04, R::rdmap_to_wrap, "Tagged Offset wrap"},
    TerminateReasonEntry{0, 1, 0x09, R::rdmap_protection_cannot_invalidate,
                         "Steering Tag cannot be Invalidated"},
    TerminateReasonEntry{0, 1, 0xff, R::rdmap_protection_unspecified,
                         "Remote Protection Error, unspecified"},
    TerminateReasonEntry{0, 2, 0x05, R::rdmap_invalid_version, "Invalid RDMAP version"},
    TerminateReasonEntry{0, 2, 0x06, R::rdmap_unexpected_opcode, "Unexpected OpCode"},
    TerminateReasonEntry{0, 2, 0x07, R::rdmap_catastrophic_stream,
                         "Catastrophic error, localized to RDMAP Stream"},
    TerminateReasonEntry{0, 2, 0x08, R::rdmap_catastrophic_global, "Catastrophic error, global"},
    TerminateReasonEntry{0, 2, 0x09, R::rdmap_operation_cannot_invalidate,
                         "Steering Tag cannot be Invalidated"},
    TerminateReasonEntry{0, 2, 0xff, R::rdmap_operation_unspecified,
                         "Remote Operation Error, unspecified"},
    // DDP: error type 0 catastrophic, 1 tagged buffer, 2 untagged buffer.
    TerminateReasonEntry{1, 0, kAnyCode, R::ddp_local_catastrophic, "Local Catastrophic Error"},
    TerminateReasonEntry{1, 1, 0x00, R::ddp_tagged_invalid_stag, "Invalid Steering Tag"},
    TerminateReasonEntry{1, 1, 0x01, R::ddp_tagged_base_or_bounds, "Base or bounds violation"},
    TerminateReasonEntry{1, 1, 0x02, R::ddp_tagged_stag_not_associated,
                         "Steering Tag not associated with DDP Stream"},
    TerminateReasonEntry{1, 1, 0x03, R::ddp_tagged_to_wrap, "Tagged Offset wrap"},
    TerminateReasonEntry{1, 1, 0x04, R::ddp_tagged_invalid_version, "Invalid DDP version"},
    TerminateReasonEntry{1, 2, 0x01, R::ddp_untagged_invalid_qn, "Invalid Queue Number"},
    TerminateReasonEntry{1, 2, 0x02, R::ddp_untagged_msn_no_buffer,
                         "Invalid MSN, no buffer available"},
    TerminateReasonEntry{1, 2, 0x03, R::ddp_untagged_msn_range, "Invalid MSN, MSN range is not valid"},
    TerminateReasonEntry{1, 2, 0x04, R::ddp_untagged_invalid_mo, "Invalid Message Offset"},
    TerminateReasonEntry{1, 2, 0x05, R::ddp_untagged_message_too_long,
                         "DDP Message too long for available buffer"},
    TerminateReasonEntry{1, 2, 0x06, R::ddp_untagged_invalid_version, "Invalid DDP version"},
    // LLP: error type 0 is MPA; codes 5-7 are RFC 6581's, for enhanced establishment.
    TerminateReasonEntry{2, 0, 0x01, R::mpa_stream_lost, "TCP connection closed, terminated or lost"},
    TerminateReasonEntry{2, 0, 0x02, R::mpa_crc_error, "MPA CRC Error"},
    TerminateReasonEntry{2, 0, 0x03, R::mpa_marker_mismatch, "MPA Marker and ULPDU mismatch"},
    TerminateReasonEntry{2, 0, 0x04, R::mpa_invalid_request_reply,
                         "MPA Request/Reply Frame not expected or invalid"},
    TerminateReasonEntry{2, 0, 0x05, R::mpa_local_catastrophic, "Local Catastrophic"},
    TerminateReasonEntry{2, 0, 0x06, R::mpa_insufficient_ird, "Insufficient IRD Resources"},
    TerminateReasonEntry{2, 0, 0x07, R::mpa_no_matching_rtr, "No Matching RTR Model"},
};

} // namespace

std::span<const TerminateReasonEntry> terminate_reason_table()
{
    return kTable;
}

const TerminateReasonEntry *find_terminate_reason(std::uint8_t layer, std::uint8_t etype,
                                                  std::uint8_t code)
{
    for (const auto &entry : kTable)
        if (entry.layer == layer && entry.etype == etype &&
            (entry.code == kAnyCode || entry.code == code))
            return &entry;
    return nullptr;
}

const TerminateReasonEntry *terminate_reason_entry(TerminateReason reason)
{
    for (const auto &entry : kTable)
        if (entry.reason == reason)
            return &entry;
    return nullptr;
}

} // namespace ndk::soft::iwarp
