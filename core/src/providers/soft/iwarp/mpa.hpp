// MPA connection set-up (RFC 5044 section 7.1, revision 2 of RFC 6581): the request the
// initiator writes as the first bytes of the TCP stream, and the reply (or reject) the
// responder answers with.  After them both directions carry FPDUs (mpa_fpdu.hpp).
//
//   0                   1                   2                   3
//   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//  |  Key: "MPA ID Req Frame" or "MPA ID Rep Frame" (16 octets)   |
//  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//  |M|C|R|S| Res   |     Rev       |          PD_Length            |
//  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//  |  private data, PD_Length octets (at most 512); with S set (RFC 6581), its first four
//  |  are the enhanced connection establishment data:
//  |A|B|      IRD (14 bits)        |C|D|      ORD (14 bits)        |
//
// M: markers wanted towards the sender (we refuse: we never insert markers, nor strip them);
// C: CRC32c wanted; R: the reply rejects; S: enhanced establishment (RFC 6581, "Enhanced" in
// Linux siw's iwarp.h).  In the enhanced data, A: the peer-to-peer model, a ready-to-receive
// (RTR) message from the initiator before the responder may send; B, C, D: the RTR message
// types offered (request) or chosen (reply): a zero-length Send, RDMA Write, RDMA Read.
#pragma once

#include "providers/soft/iwarp/parse_result.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ndk::soft::iwarp {

inline constexpr std::size_t kMpaKeySize = 16;
inline constexpr std::size_t kMpaHeaderSize = kMpaKeySize + 4; // key, bits and Rev, PD_Length
inline constexpr std::size_t kMpaMaxPrivateData = 512;          // RFC 5044 7.1, PD_Length
inline constexpr std::size_t kMpaEnhancedDataSize = 4;          // RFC 6581 IRD and ORD words
inline constexpr std::uint16_t kMpaMaxReadDepth = 0x3fff;       // IRD and ORD are 14 bits

enum class MpaFrameKind { request, reply };

// RTR message types (RFC 6581 section 3.3), as the B, C and D bits.
struct MpaRtrTypes {
    bool send = false;  // a zero-length Send (needs a posted receive at the responder)
    bool write = false; // a zero-length RDMA Write
    bool read = false;  // a zero-length RDMA Read Request
    bool operator==(const MpaRtrTypes &) const = default;
    bool any() const { return send || write || read; }
};

// RFC 6581's data at the front of the private data.  ird: RDMA Read Requests the sender
// accepts outstanding (inbound read depth); ord: those it may have outstanding itself.
struct MpaEnhancedData {
    std::uint16_t ird = 0;
    std::uint16_t ord = 0;
    bool peer_to_peer = false;
    MpaRtrTypes rtr;
    bool operator==(const MpaEnhancedData &) const = default;
};

struct MpaFrame {
    MpaFrameKind kind = MpaFrameKind::request;
    bool markers = false;
    bool crc = false;
    bool reject = false;
    std::uint8_t revision = 2;
    std::optional<MpaEnhancedData> enhanced; // S set (revision 2 only)
    std::vector<std::byte> private_data;     // the consumer's, after the enhanced data
    bool operator==(const MpaFrame &) const = default;
};

enum class MpaParseError {
    none,
    incomplete,            // fewer bytes than the header, or than header + PD_Length
    bad_key,               // not the key of the kind expected
    unsupported_revision,  // Rev other than 1 or 2
    private_data_too_long, // PD_Length above 512
    enhanced_data_missing, // S set with PD_Length below 4
};

struct ParsedMpaFrame {
    MpaFrame frame;
    std::size_t size = 0; // bytes the frame took: FPDUs may follow it in the same read
};

// The frame's whole size from its first kMpaHeaderSize bytes, so that a reader knows how much
// more to read; incomplete for fewer bytes, private_data_too_long for PD_Length above 512.
// Checks nothing else (parse_mpa_frame does).
ParseResult<std::size_t, MpaParseError> mpa_frame_size(std::span<const std::byte> bytes);

// The frame at the start of `bytes` (which may go on past it).  Res bits are ignored, as RFC
// 5044 says; the S bit too in a revision 1 frame (RFC 6581 defines it only for revision 2).
ParseResult<ParsedMpaFrame, MpaParseError> parse_mpa_frame(std::span<const std::byte> bytes,
                                                           MpaFrameKind expected);

// Throws std::invalid_argument for what no peer could parse: private data (with the
// enhanced data) above 512 bytes, IRD or ORD above 0x3fff, S on a revision other than 2.
std::vector<std::byte> encode_mpa_frame(const MpaFrame &frame);

// --- Negotiation: what each side of ours answers, from its settings and the peer's frame.

struct MpaSettings {
    bool crc = true;             // ask for CRC32c (the peer's asking for it is always honoured)
    std::uint16_t ird = 16;      // NDK's InboundReadLimit
    std::uint16_t ord = 16;      // NDK's OutboundReadLimit
    bool peer_to_peer = true;    // ask for an RTR, so that either side may send first
    MpaRtrTypes rtr{false, true, true}; // what we offer (initiator); siw takes Write or Read
};

enum class MpaRtr { none, send, write, read };

// What both sides use once the exchange succeeded.
struct MpaNegotiated {
    bool crc = false;
    std::uint16_t ird = 0; // our inbound read depth: the peer's ORD is at most this
    std::uint16_t ord = 0; // our outbound read depth: at most the peer's IRD
    MpaRtr rtr = MpaRtr::none;
    bool operator==(const MpaNegotiated &) const = default;
};

enum class MpaRefusal {
    none,
    markers,          // the peer wants markers (RFC 5044 6.1); we never send them
    not_enhanced,     // no RFC 6581 data: we need IRD/ORD and the RTR for NDK's semantics
    rejected,         // the responder's reply had R set
    insufficient_ird, // the responder's ORD exceeds our IRD (RFC 6581 3.2; LLP code 0x06)
    no_matching_rtr,  // none of the RTR types we offered (RFC 6581 3.3; LLP code 0x07)
};

// The request an initiator of ours sends.
MpaFrame make_mpa_request(const MpaSettings &local, std::span<const std::byte> private_data);

struct MpaResponderAnswer {
    MpaRefusal refusal = MpaRefusal::none; // none: `reply` accepts and `negotiated` applies
    MpaNegotiated negotiated;
    MpaFrame reply; // the reply to send, also when refusing (then R set, no private data)
};

// A responder's answer to a parsed request; `private_data` is the consumer's (accept) and
// is not sent when the request is refused.  A consumer's own reject is make_mpa_reject().
MpaResponderAnswer answer_mpa_request(const MpaFrame &request, const MpaSettings &local,
                                      std::span<const std::byte> private_data);
MpaFrame make_mpa_reject(const MpaFrame &request, std::span<const std::byte> private_data);

struct MpaInitiatorOutcome {
    MpaRefusal refusal = MpaRefusal::none;
    MpaNegotiated negotiated;
};

// The initiator's verdict on the parsed reply to `request` (the one it sent).
MpaInitiatorOutcome accept_mpa_reply(const MpaFrame &request, const MpaFrame &reply,
                                     const MpaSettings &local);

} // namespace ndk::soft::iwarp
