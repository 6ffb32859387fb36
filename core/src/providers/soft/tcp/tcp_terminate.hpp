// Which Terminate a receive error calls for (RFC 5040 section 7, RFC 5041 section 7, RFC
// 5044 section 8), and the Terminate message that reports it.  The codec says precisely what
// was wrong (FpduStatus, DdpParseError, DdpSequenceError); this maps each to the (layer,
// type, code) of terminate_reasons.hpp, following the codes the codec's enums cite.  An
// FPDU that cannot be framed or fails its CRC is MPA's (layer LLP); a header that parses
// wrong is DDP's or RDMAP's, by the field at fault.
#pragma once

#include "providers/soft/iwarp/ddp_rdmap.hpp"
#include "providers/soft/iwarp/ddp_segmenter.hpp"
#include "providers/soft/iwarp/mpa_fpdu.hpp"
#include "providers/soft/iwarp/terminate_reasons.hpp"

#include <span>
#include <vector>

namespace ndk::soft::tcp {

iwarp::TerminateReason terminate_reason_for(iwarp::FpduStatus status);
// `ulpdu`: the segment that failed, for the T bit that tells a tagged error from an untagged one.
iwarp::TerminateReason terminate_reason_for(iwarp::DdpParseError error,
                                            std::span<const std::byte> ulpdu);
iwarp::TerminateReason terminate_reason_for(iwarp::DdpSequenceError error);

// The Terminate's body (after its DDP header): the reason's fields and, when the segment in
// error is known and its DDP header whole, M and D with its length and header (RFC 5040
// 4.8: "the DDP header of the segment in error"), so that the peer can tell which one it was.
std::vector<std::byte> terminate_body(iwarp::TerminateReason reason,
                                      std::span<const std::byte> ulpdu_in_error = {});

} // namespace ndk::soft::tcp

namespace ndk::soft::tcp {

// A whole Terminate FPDU with MSN 1, for a side that ends the connection before it has a link
// (RFC 6581 section 8's codes after MPA's exchange: insufficient IRD, no matching RTR).
std::vector<std::byte> first_terminate_fpdu(iwarp::TerminateReason reason, bool crc,
                                            std::span<const std::byte> ulpdu_in_error = {});

} // namespace ndk::soft::tcp
