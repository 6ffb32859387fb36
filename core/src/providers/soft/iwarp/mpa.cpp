#include "providers/soft/iwarp/mpa.hpp"

#include "providers/soft/iwarp/wire_bytes.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace ndk::soft::iwarp {

namespace {

constexpr std::string_view kRequestKey = "MPA ID Req Frame";
constexpr std::string_view kReplyKey = "MPA ID Rep Frame";
static_assert(kRequestKey.size() == kMpaKeySize && kReplyKey.size() == kMpaKeySize);

// The 16-bit word after the key: flags high, Rev in the low byte.
constexpr std::uint16_t kFlagMarkers = 0x8000;
constexpr std::uint16_t kFlagCrc = 0x4000;
constexpr std::uint16_t kFlagReject = 0x2000;
constexpr std::uint16_t kFlagEnhanced = 0x1000;
constexpr std::uint16_t kRevisionMask = 0x00ff;

// The enhanced data's two words: two flag bits over a 14-bit depth each.
constexpr std::uint16_t kIrdPeerToPeer = 0x8000;
constexpr std::uint16_t kIrdSendRtr = 0x4000;
constexpr std::uint16_t kOrdWriteRtr = 0x8000;
constexpr std::uint16_t kOrdReadRtr = 0x4000;

std::string_view key_of(MpaFrameKind kind)
{
    return kind == MpaFrameKind::request ? kRequestKey : kReplyKey;
}

MpaEnhancedData parse_enhanced(const std::byte *p)
{
    const std::uint16_t ird = wire::load_be16(p);
    const std::uint16_t ord = wire::load_be16(p + 2);
    MpaEnhancedData data;
    data.ird = ird & kMpaMaxReadDepth;
    data.ord = ord & kMpaMaxReadDepth;
    data.peer_to_peer = (ird & kIrdPeerToPeer) != 0;
    data.rtr.send = (ird & kIrdSendRtr) != 0;
    data.rtr.write = (ord & kOrdWriteRtr) != 0;
    data.rtr.read = (ord & kOrdReadRtr) != 0;
    return data;
}

void encode_enhanced(std::byte *p, const MpaEnhancedData &data)
{
    if (data.ird > kMpaMaxReadDepth || data.ord > kMpaMaxReadDepth)
        throw std::invalid_argument("MPA IRD and ORD are 14-bit fields");
    std::uint16_t ird = data.ird;
    std::uint16_t ord = data.ord;
    ird |= data.peer_to_peer ? kIrdPeerToPeer : 0;
    ird |= data.rtr.send ? kIrdSendRtr : 0;
    ord |= data.rtr.write ? kOrdWriteRtr : 0;
    ord |= data.rtr.read ? kOrdReadRtr : 0;
    wire::store_be16(p, ird);
    wire::store_be16(p + 2, ord);
}

// The RTR a responder picks from what the initiator offers and it accepts: Write first (the
// cheapest to place, and siw's preference), then Read, then Send (which needs a receive
// posted at the responder before anything else happens).
MpaRtr pick_rtr(const MpaRtrTypes &offered, const MpaRtrTypes &accepted)
{
    if (offered.write && accepted.write)
        return MpaRtr::write;
    if (offered.read && accepted.read)
        return MpaRtr::read;
    if (offered.send && accepted.send)
        return MpaRtr::send;
    return MpaRtr::none;
}

MpaRtrTypes rtr_bits(MpaRtr rtr)
{
    return {rtr == MpaRtr::send, rtr == MpaRtr::write, rtr == MpaRtr::read};
}

} // namespace

ParseResult<std::size_t, MpaParseError> mpa_frame_size(std::span<const std::byte> bytes)
{
    if (bytes.size() < kMpaHeaderSize)
        return MpaParseError::incomplete;
    const std::size_t pd_length = wire::load_be16(bytes.data() + kMpaKeySize + 2);
    if (pd_length > kMpaMaxPrivateData)
        return MpaParseError::private_data_too_long;
    return kMpaHeaderSize + pd_length;
}

ParseResult<ParsedMpaFrame, MpaParseError> parse_mpa_frame(std::span<const std::byte> bytes,
                                                           MpaFrameKind expected)
{
    // The key first: a peer that is not speaking MPA at all is told apart from a short read
    // as soon as 16 bytes are in, whatever its next bytes would say.
    if (bytes.size() < kMpaKeySize)
        return MpaParseError::incomplete;
    const std::string_view key = key_of(expected);
    if (std::memcmp(bytes.data(), key.data(), kMpaKeySize) != 0)
        return MpaParseError::bad_key;
    const auto size = mpa_frame_size(bytes);
    if (!size)
        return size.error();
    if (bytes.size() < *size)
        return MpaParseError::incomplete;

    const std::uint16_t bits = wire::load_be16(bytes.data() + kMpaKeySize);
    ParsedMpaFrame parsed;
    MpaFrame &frame = parsed.frame;
    frame.kind = expected;
    frame.markers = (bits & kFlagMarkers) != 0;
    frame.crc = (bits & kFlagCrc) != 0;
    frame.reject = (bits & kFlagReject) != 0;
    frame.revision = static_cast<std::uint8_t>(bits & kRevisionMask);
    if (frame.revision != 1 && frame.revision != 2)
        return MpaParseError::unsupported_revision;

    auto private_data = bytes.subspan(kMpaHeaderSize, *size - kMpaHeaderSize);
    if (frame.revision == 2 && (bits & kFlagEnhanced) != 0) {
        if (private_data.size() >= kMpaEnhancedDataSize) {
            frame.enhanced = parse_enhanced(private_data.data());
            private_data = private_data.subspan(kMpaEnhancedDataSize);
        } else if (!frame.reject) {
            return MpaParseError::enhanced_data_missing;
        }
        // A reject need not carry the data: the connection ends either way, and refusing to
        // read it would hide the reject (and its private data) behind a parse error.
    }
    frame.private_data.assign(private_data.begin(), private_data.end());
    parsed.size = *size;
    return parsed;
}

std::vector<std::byte> encode_mpa_frame(const MpaFrame &frame)
{
    if (frame.enhanced && frame.revision != 2)
        throw std::invalid_argument("MPA enhanced data needs revision 2");
    const std::size_t enhanced_size = frame.enhanced ? kMpaEnhancedDataSize : 0;
    const std::size_t pd_length = enhanced_size + frame.private_data.size();
    if (pd_length > kMpaMaxPrivateData)
        throw std::invalid_argument("MPA private data above 512 bytes");

    std::vector<std::byte> bytes(kMpaHeaderSize + pd_length);
    std::memcpy(bytes.data(), key_of(frame.kind).data(), kMpaKeySize);
    std::uint16_t bits = frame.revision;
    bits |= frame.markers ? kFlagMarkers : 0;
    bits |= frame.crc ? kFlagCrc : 0;
    bits |= frame.reject ? kFlagReject : 0;
    bits |= frame.enhanced ? kFlagEnhanced : 0;
    wire::store_be16(bytes.data() + kMpaKeySize, bits);
    wire::store_be16(bytes.data() + kMpaKeySize + 2, static_cast<std::uint16_t>(pd_length));
    if (frame.enhanced)
        encode_enhanced(bytes.data() + kMpaHeaderSize, *frame.enhanced);
    std::copy(frame.private_data.begin(), frame.private_data.end(),
              bytes.begin() + static_cast<std::ptrdiff_t>(kMpaHeaderSize + enhanced_size));
    return bytes;
}

MpaFrame make_mpa_request(const MpaSettings &local, std::span<const std::byte> private_data)
{
    MpaFrame request;
    request.kind = MpaFrameKind::request;
    request.crc = local.crc;
    request.enhanced = MpaEnhancedData{local.ird, local.ord, local.peer_to_peer,
                                       local.peer_to_peer ? local.rtr : MpaRtrTypes{}};
    request.private_data.assign(private_data.begin(), private_data.end());
    return request;
}

MpaFrame make_mpa_reject(const MpaFrame &request, std::span<const std::byte> private_data)
{
    MpaFrame reject;
    reject.kind = MpaFrameKind::reply;
    reject.reject = true;
    reject.crc = request.crc;
    reject.revision = request.revision;
    if (request.enhanced)
        reject.enhanced = MpaEnhancedData{}; // siw sends the words with a reject too
    reject.private_data.assign(private_data.begin(), private_data.end());
    return reject;
}

MpaResponderAnswer answer_mpa_request(const MpaFrame &request, const MpaSettings &local,
                                      std::span<const std::byte> private_data)
{
    MpaResponderAnswer answer;
    if (request.markers)
        answer.refusal = MpaRefusal::markers;
    else if (!request.enhanced)
        answer.refusal = MpaRefusal::not_enhanced;
    if (answer.refusal == MpaRefusal::none && request.enhanced->peer_to_peer) {
        answer.negotiated.rtr = pick_rtr(request.enhanced->rtr, local.rtr);
        if (answer.negotiated.rtr == MpaRtr::none)
            answer.refusal = MpaRefusal::no_matching_rtr;
    }
    if (answer.refusal != MpaRefusal::none) {
        answer.reply = make_mpa_reject(request, {});
        answer.reply.markers = false; // said explicitly: we will not send markers either
        answer.negotiated = {};
        return answer;
    }

    // CRC when either side wants it (RFC 5044 7.1: a request for CRC must be honoured).  Our
    // IRD no deeper than the initiator's ORD can use, our ORD within the initiator's IRD, so
    // that a strict initiator (siw without relaxed_ird_negotiation) finds both sufficient.
    const MpaEnhancedData &theirs = *request.enhanced;
    answer.negotiated.crc = request.crc || local.crc;
    answer.negotiated.ird = std::min(local.ird, theirs.ord);
    answer.negotiated.ord = std::min(local.ord, theirs.ird);
    answer.reply.kind = MpaFrameKind::reply;
    answer.reply.crc = answer.negotiated.crc;
    answer.reply.revision = 2;
    answer.reply.enhanced = MpaEnhancedData{answer.negotiated.ird, answer.negotiated.ord,
                                            theirs.peer_to_peer,
                                            rtr_bits(answer.negotiated.rtr)};
    answer.reply.private_data.assign(private_data.begin(), private_data.end());
    return answer;
}

MpaInitiatorOutcome accept_mpa_reply(const MpaFrame &request, const MpaFrame &reply,
                                     const MpaSettings &local)
{
    MpaInitiatorOutcome outcome;
    if (reply.reject)
        outcome.refusal = MpaRefusal::rejected;
    else if (reply.markers)
        outcome.refusal = MpaRefusal::markers;
    else if (!reply.enhanced || !request.enhanced)
        outcome.refusal = MpaRefusal::not_enhanced;
    else if (reply.enhanced->ord > local.ird)
        outcome.refusal = MpaRefusal::insufficient_ird;
    if (outcome.refusal != MpaRefusal::none)
        return outcome;

    const MpaEnhancedData &theirs = *reply.enhanced;
    if (request.enhanced->peer_to_peer) {
        outcome.negotiated.rtr = pick_rtr(theirs.rtr, request.enhanced->rtr);
        if (outcome.negotiated.rtr == MpaRtr::none) {
            outcome.refusal = MpaRefusal::no_matching_rtr;
            return outcome;
        }
    }
    // A responder IRD below our ORD lowers our ORD (RFC 6581 3.2 lets the initiator choose
    // between that and a Terminate; NDK's read limits are maxima, so lowering is right).
    outcome.negotiated.crc = request.crc || reply.crc;
    outcome.negotiated.ird = theirs.ord;
    outcome.negotiated.ord = std::min(local.ord, theirs.ird);
    return outcome;
}

} // namespace ndk::soft::iwarp
