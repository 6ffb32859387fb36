#include "providers/soft/shm/shm_messages.hpp"

#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace ndk::soft::shm {

namespace {

// ---- encoding -----------------------------------------------------------------------------

// Writes a fixed part and what follows it into `out`, or reports that it does not fit.
class Writer {
public:
    explicit Writer(std::span<std::byte> out) : out_(out) {}

    template <class Wire>
    void fixed(const Wire &wire)
    {
        static_assert(std::is_trivially_copyable_v<Wire>);
        raw(std::as_bytes(std::span(&wire, 1)));
    }
    void raw(std::span<const std::byte> bytes)
    {
        if (!fits_ || bytes.size() > out_.size() - used_) {
            fits_ = false;
            return;
        }
        if (!bytes.empty())
            std::memcpy(out_.data() + used_, bytes.data(), bytes.size());
        used_ += bytes.size();
    }
    // The next `size` bytes, to be written by the caller, or null when they do not fit.
    std::byte *claim(std::size_t size)
    {
        if (!fits_ || size > out_.size() - used_) {
            fits_ = false;
            return nullptr;
        }
        std::byte *at = out_.data() + used_;
        used_ += size;
        return at;
    }
    std::size_t length() const { return fits_ ? used_ : 0; }

private:
    std::span<std::byte> out_;
    std::size_t used_ = 0;
    bool fits_ = true;
};

WireHeader header_of(MessageType type, std::uint16_t flags = 0)
{
    return {static_cast<std::uint16_t>(type), flags, 0};
}

std::uint32_t private_length(std::span<const std::byte> data)
{
    if (data.size() > kMaxPrivateData)
        throw std::invalid_argument("private data longer than kMaxPrivateData");
    return static_cast<std::uint32_t>(data.size());
}

WireEndpoint wire_endpoint(const Endpoint &endpoint)
{
    if (endpoint.family != AddressFamily::ipv4 && endpoint.family != AddressFamily::ipv6)
        throw std::invalid_argument("endpoint family");
    WireEndpoint wire{static_cast<std::uint16_t>(endpoint.family), endpoint.port, {}};
    std::memcpy(wire.address, endpoint.address.data(), sizeof wire.address);
    return wire;
}

// The payload's descriptor and the bytes that follow it in the slot.
WirePayload wire_payload(const Payload &payload, std::span<const std::byte> &trailer,
                         WireVector &list)
{
    WirePayload wire{payload.total_length, static_cast<std::uint16_t>(payload.form), 0, 0};
    switch (payload.form) {
    case PayloadForm::inline_bytes:
        if (payload.total_length != payload.bytes.size())
            throw std::invalid_argument("inline payload length");
        wire.count = static_cast<std::uint32_t>(payload.bytes.size());
        trailer = payload.bytes;
        return wire;
    case PayloadForm::vectors:
    case PayloadForm::shared_vectors: // its WireRegion is written by encode_with_payload
        if (payload.bytes.size() % sizeof(WireVector) != 0)
            throw std::invalid_argument("vector payload bytes");
        wire.count = static_cast<std::uint32_t>(payload.vector_count());
        trailer = payload.bytes;
        return wire;
    case PayloadForm::vector_list:
        if (payload.list_count == 0 || payload.list_count > kMaxRemoteVectors)
            throw std::invalid_argument("vector list count");
        wire.count = payload.list_count;
        list = {payload.list_address, std::uint64_t{payload.list_count} * sizeof(WireVector)};
        trailer = std::as_bytes(std::span(&list, 1));
        return wire;
    }
    throw std::invalid_argument("payload form");
}

// What follows a fixed part that carries a payload: a shared-vectors payload's region, then
// the payload's trailer (wire_payload); the message's length, or 0 when it does not fit.
std::size_t write_payload_after(Writer &writer, const Payload &payload,
                                std::span<const std::byte> trailer)
{
    if (payload.form == PayloadForm::shared_vectors)
        writer.fixed(payload.region);
    writer.raw(trailer);
    return writer.length();
}

// One field of a fixed part, stored at its offset in the message (which need not be aligned).
template <class T>
void put(std::byte *fixed, std::size_t offset, T value)
{
    static_assert(std::is_trivially_copyable_v<T>);
    std::memcpy(fixed + offset, &value, sizeof value);
}

// The payload's descriptor stored field by field at `at` (see encode_send).
void put_payload(std::byte *at, const WirePayload &payload)
{
    put(at, offsetof(WirePayload, total_length), payload.total_length);
    put(at, offsetof(WirePayload, form), payload.form);
    put(at, offsetof(WirePayload, reserved), payload.reserved);
    put(at, offsetof(WirePayload, count), payload.count);
}

// A Send, whose fixed part is stored field by field into the message, not built on the stack
// and copied: that copy loaded 16 bytes at a time what had just been stored 2 or 8 bytes at a
// time (the header's type and flags, the payload's descriptor), and each such load waited for
// the stores to retire instead of taking their values (a failed store forwarding, three per
// Send, a quarter of encode()'s samples each in the one-process shm ping-pong's profile:
// docs/performance.md, "The receiving side's lookups").
std::size_t encode_send(Writer &writer, const Send &m)
{
    std::span<const std::byte> trailer;
    WireVector list{};
    const WirePayload payload = wire_payload(m.payload, trailer, list);
    std::byte *at = writer.claim(sizeof(WireSend));
    if (at == nullptr)
        return 0;
    const auto flags = static_cast<std::uint16_t>((m.solicited ? kSolicited : 0) |
                                                  (m.invalidate ? kInvalidate : 0));
    put(at, offsetof(WireSend, header) + offsetof(WireHeader, type),
        static_cast<std::uint16_t>(MessageType::send));
    put(at, offsetof(WireSend, header) + offsetof(WireHeader, flags), flags);
    put(at, offsetof(WireSend, header) + offsetof(WireHeader, reserved), std::uint32_t{0});
    put(at, offsetof(WireSend, sequence), m.sequence);
    put(at, offsetof(WireSend, invalidate_token), m.invalidate ? m.invalidate_token : 0);
    put(at, offsetof(WireSend, rnr_timeout_ms), m.rnr_timeout_ms);
    put_payload(at + offsetof(WireSend, payload), payload);
    return write_payload_after(writer, m.payload, trailer);
}

template <class Wire>
std::size_t encode_with_payload(Writer &writer, Wire wire, const Payload &payload)
{
    std::span<const std::byte> trailer;
    WireVector list{};
    wire.payload = wire_payload(payload, trailer, list);
    writer.fixed(wire);
    return write_payload_after(writer, payload, trailer);
}

WireStatus wire_status(MessageType type, std::uint64_t sequence, std::uint32_t status)
{
    return {header_of(type), sequence, status, 0};
}

// ---- decoding -----------------------------------------------------------------------------

// Reads the message front to back; every read is checked against what is left.
class Reader {
public:
    explicit Reader(std::span<const std::byte> bytes) : bytes_(bytes) {}

    template <class Wire>
    bool fixed(Wire &wire)
    {
        if (sizeof(Wire) > bytes_.size() - used_)
            return false;
        std::memcpy(&wire, bytes_.data() + used_, sizeof(Wire));
        used_ += sizeof(Wire);
        return true;
    }
    // Exactly `length` more bytes, and nothing after them.
    bool rest(std::uint64_t length, std::span<const std::byte> &out)
    {
        if (length != bytes_.size() - used_)
            return false;
        out = bytes_.subspan(used_);
        used_ = bytes_.size();
        return true;
    }

private:
    std::span<const std::byte> bytes_;
    std::size_t used_ = 0;
};

bool valid_endpoint(const WireEndpoint &wire, Endpoint &out)
{
    if (wire.family == static_cast<std::uint16_t>(AddressFamily::ipv4)) {
        for (std::size_t i = 4; i < sizeof wire.address; ++i)
            if (wire.address[i] != 0)
                return false;
    } else if (wire.family != static_cast<std::uint16_t>(AddressFamily::ipv6)) {
        return false;
    }
    out.family = static_cast<AddressFamily>(wire.family);
    out.port = wire.port;
    std::memcpy(out.address.data(), wire.address, sizeof wire.address);
    return true;
}

bool region_holds(const WireRegion &region, const WireVector &v)
{
    return v.address >= region.base && v.address - region.base <= region.size &&
           v.length <= region.size - (v.address - region.base);
}

// The payload descriptor and its trailer (the rest of the message); nullptr when valid, else
// the violation.  `sink`: a Read Request's, which cannot be inline.
const char *decode_payload(const WirePayload &wire, Reader &reader, Payload &out, bool sink)
{
    if (wire.reserved != 0)
        return "payload reserved field";
    out.total_length = wire.total_length;
    std::span<const std::byte> trailer;
    switch (wire.form) {
    case static_cast<std::uint16_t>(PayloadForm::inline_bytes):
        if (sink)
            return "inline sink";
        if (wire.total_length != wire.count)
            return "inline length differs from its count";
        if (!reader.rest(wire.count, trailer))
            return "inline bytes differ from their count";
        out.form = PayloadForm::inline_bytes;
        out.bytes = trailer;
        return nullptr;
    case static_cast<std::uint16_t>(PayloadForm::shared_vectors):
        if (!reader.fixed(out.region))
            return "shared region too short";
        if (out.region.reserved != 0 || out.region.fd < 0 || out.region.size == 0 ||
            out.region.base > UINT64_MAX - out.region.size)
            return "shared region fields";
        [[fallthrough]];
    case static_cast<std::uint16_t>(PayloadForm::vectors): {
        if (!reader.rest(std::uint64_t{wire.count} * sizeof(WireVector), trailer))
            return "vector bytes differ from their count";
        out.form = static_cast<PayloadForm>(wire.form);
        out.bytes = trailer;
        const bool shared = out.form == PayloadForm::shared_vectors;
        std::uint64_t sum = 0;
        for (std::size_t i = 0; i < out.vector_count(); ++i) {
            const WireVector v = out.vector(i);
            if (v.length > UINT64_MAX - sum)
                return "vector lengths overflow";
            sum += v.length;
            if (shared && !region_holds(out.region, v))
                return "shared vector outside its region";
        }
        return sum == wire.total_length ? nullptr : "vector lengths differ from the total";
    }
    case static_cast<std::uint16_t>(PayloadForm::vector_list): {
        WireVector list{};
        if (wire.count == 0 || wire.count > kMaxRemoteVectors)
            return "vector list count";
        if (!reader.fixed(list) || !reader.rest(0, trailer))
            return "vector list descriptor size";
        if (list.length != std::uint64_t{wire.count} * sizeof(WireVector))
            return "vector list length differs from its count";
        out.form = PayloadForm::vector_list;
        out.list_address = list.address;
        out.list_count = wire.count;
        return nullptr;
    }
    default:
        return "payload form";
    }
}

Message malformed(const char *why) { return Malformed{why}; }

Message decode_connect_request(Reader &reader)
{
    WireConnectRequest wire{};
    if (!reader.fixed(wire))
        return malformed("connect request too short");
    ConnectRequest request;
    if (wire.header.flags != 0 || wire.reserved != 0 || wire.sender.reserved != 0)
        return malformed("connect request flags or reserved fields");
    if (!valid_endpoint(wire.source, request.source) ||
        !valid_endpoint(wire.destination, request.destination))
        return malformed("connect request address");
    if (wire.sender.pid <= 0)
        return malformed("connect request pid");
    if (wire.private_length > kMaxPrivateData || !reader.rest(wire.private_length, request.private_data))
        return malformed("connect request private data length");
    request.inbound_read_limit = wire.inbound_read_limit;
    request.outbound_read_limit = wire.outbound_read_limit;
    request.sender = {wire.sender.pid, wire.sender.start_time};
    return request;
}

Message decode_reply(Reader &reader)
{
    WireReply wire{};
    Reply reply;
    if (!reader.fixed(wire) || wire.header.flags != 0 || wire.reserved != 0)
        return malformed("reply header");
    if (wire.private_length > kMaxPrivateData || !reader.rest(wire.private_length, reply.private_data))
        return malformed("reply private data length");
    reply.inbound_read_limit = wire.inbound_read_limit;
    reply.outbound_read_limit = wire.outbound_read_limit;
    return reply;
}

Message decode_reject(Reader &reader)
{
    WireReject wire{};
    if (!reader.fixed(wire) || (wire.header.flags & ~kPrivateDataPresent) != 0 || wire.reserved != 0)
        return malformed("reject header");
    std::span<const std::byte> data;
    if (wire.private_length > kMaxPrivateData || !reader.rest(wire.private_length, data))
        return malformed("reject private data length");
    if ((wire.header.flags & kPrivateDataPresent) == 0) {
        if (!data.empty())
            return malformed("reject private data without its flag");
        return Reject{};
    }
    return Reject{data};
}

// A message that is its header alone.
template <class Bare>
Message decode_bare(Reader &reader)
{
    WireHeader header{};
    std::span<const std::byte> rest;
    if (!reader.fixed(header) || header.flags != 0 || !reader.rest(0, rest))
        return malformed("header-only message with flags or a body");
    return Bare{};
}

Message decode_disconnect(Reader &reader)
{
    WireDisconnect wire{};
    std::span<const std::byte> rest;
    if (!reader.fixed(wire) || !reader.rest(0, rest) || wire.header.flags != 0 || wire.reserved != 0)
        return malformed("disconnect size or reserved fields");
    if (wire.reason < static_cast<std::uint32_t>(DisconnectReason::graceful) ||
        wire.reason > static_cast<std::uint32_t>(DisconnectReason::error))
        return malformed("disconnect reason");
    return Disconnect{static_cast<DisconnectReason>(wire.reason)};
}

// Decoded in `out`, the caller's variant, so that the common message is built where it is
// used: a Send decoded on the stack and then moved into the variant returned was a `rep stos`
// and a `rep movs` of its 112 bytes per message, three quarters of decode()'s samples in the
// one-process shm ping-pong (docs/performance.md, "The receiving side's lookups").
void decode_send(Reader &reader, Message &out)
{
    WireSend wire{};
    if (!reader.fixed(wire)) {
        out = Malformed{"send too short"};
        return;
    }
    if ((wire.header.flags & ~(kSolicited | kInvalidate)) != 0) {
        out = Malformed{"send flags"};
        return;
    }
    if ((wire.header.flags & kInvalidate) == 0 && wire.invalidate_token != 0) {
        out = Malformed{"send token without invalidate"};
        return;
    }
    Send &send = out.emplace<Send>();
    send.sequence = wire.sequence;
    send.solicited = (wire.header.flags & kSolicited) != 0;
    send.invalidate = (wire.header.flags & kInvalidate) != 0;
    send.invalidate_token = wire.invalidate_token;
    send.rnr_timeout_ms = wire.rnr_timeout_ms;
    if (const char *why = decode_payload(wire.payload, reader, send.payload, false))
        out = Malformed{why};
}

template <class Tagged>
Message decode_tagged(Reader &reader)
{
    constexpr bool sink = std::is_same_v<Tagged, ReadRequest>;
    WireTagged wire{};
    if (!reader.fixed(wire))
        return malformed("tagged message too short");
    if (wire.header.flags != 0 || wire.reserved != 0)
        return malformed("tagged message flags or reserved fields");
    Tagged tagged;
    tagged.sequence = wire.sequence;
    tagged.remote_address = wire.remote_address;
    tagged.remote_token = wire.remote_token;
    Payload &payload = [&]() -> Payload & {
        if constexpr (sink)
            return tagged.sink;
        else
            return tagged.payload;
    }();
    if (const char *why = decode_payload(wire.payload, reader, payload, sink))
        return malformed(why);
    return tagged;
}

template <class Result>
Message decode_status(Reader &reader)
{
    WireStatus wire{};
    std::span<const std::byte> rest;
    if (!reader.fixed(wire) || !reader.rest(0, rest) || wire.header.flags != 0 || wire.reserved != 0)
        return malformed("status message size or reserved fields");
    return Result{wire.sequence, wire.status};
}

std::size_t max_inline(std::size_t max_message, std::size_t fixed)
{
    return max_message > fixed ? max_message - fixed : 0;
}

} // namespace

// ---- Payload ------------------------------------------------------------------------------

Payload Payload::inline_data(std::span<const std::byte> data)
{
    Payload payload;
    payload.form = PayloadForm::inline_bytes;
    payload.total_length = data.size();
    payload.bytes = data;
    return payload;
}

Payload Payload::vectors_of(std::span<const WireVector> vectors)
{
    Payload payload;
    payload.form = PayloadForm::vectors;
    payload.bytes = std::as_bytes(vectors);
    for (const WireVector &v : vectors)
        payload.total_length += v.length;
    return payload;
}

Payload Payload::shared_vectors_of(const WireRegion &region,
                                   std::span<const WireVector> vectors)
{
    Payload payload = vectors_of(vectors);
    payload.form = PayloadForm::shared_vectors;
    payload.region = region;
    return payload;
}

Payload Payload::remote_list(std::span<const WireVector> list_in_this_process,
                             std::uint64_t total_length)
{
    Payload payload;
    payload.form = PayloadForm::vector_list;
    payload.total_length = total_length;
    payload.list_address = reinterpret_cast<std::uintptr_t>(list_in_this_process.data());
    payload.list_count = static_cast<std::uint32_t>(list_in_this_process.size());
    return payload;
}

std::size_t Payload::vector_count() const { return bytes.size() / sizeof(WireVector); }

WireVector Payload::vector(std::size_t i) const
{
    // A copy: the bytes of a decoded message need not be aligned for a WireVector.
    WireVector v;
    std::memcpy(&v, bytes.data() + i * sizeof(WireVector), sizeof v);
    return v;
}

// ---- encode / decode ----------------------------------------------------------------------

std::size_t encode(const Message &message, std::span<std::byte> out)
{
    Writer writer(out);
    struct Encoder {
        Writer &w;
        std::size_t operator()(const Malformed &) const
        {
            throw std::invalid_argument("encoding a Malformed message");
        }
        std::size_t operator()(const ConnectRequest &m) const
        {
            WireConnectRequest wire{header_of(MessageType::connect_request),
                                    wire_endpoint(m.source),
                                    wire_endpoint(m.destination),
                                    m.inbound_read_limit,
                                    m.outbound_read_limit,
                                    {m.sender.pid, 0, m.sender.start_time},
                                    private_length(m.private_data),
                                    0};
            w.fixed(wire);
            w.raw(m.private_data);
            return w.length();
        }
        std::size_t operator()(const Reply &m) const
        {
            w.fixed(WireReply{header_of(MessageType::reply), m.inbound_read_limit,
                              m.outbound_read_limit, private_length(m.private_data), 0});
            w.raw(m.private_data);
            return w.length();
        }
        std::size_t operator()(const Reject &m) const
        {
            const auto data = m.private_data.value_or(std::span<const std::byte>{});
            const std::uint16_t flags = m.private_data ? kPrivateDataPresent : 0;
            w.fixed(WireReject{header_of(MessageType::reject, flags), private_length(data), 0});
            w.raw(data);
            return w.length();
        }
        std::size_t operator()(const ReadyToUse &) const
        {
            w.fixed(header_of(MessageType::ready_to_use));
            return w.length();
        }
        std::size_t operator()(const Abandon &) const
        {
            w.fixed(header_of(MessageType::abandon));
            return w.length();
        }
        std::size_t operator()(const RefuseReply &) const
        {
            w.fixed(header_of(MessageType::refuse_reply));
            return w.length();
        }
        std::size_t operator()(const Disconnect &m) const
        {
            if (m.reason < DisconnectReason::graceful || m.reason > DisconnectReason::error)
                throw std::invalid_argument("disconnect reason");
            w.fixed(WireDisconnect{header_of(MessageType::disconnect),
                                   static_cast<std::uint32_t>(m.reason), 0});
            return w.length();
        }
        std::size_t operator()(const Send &m) const { return encode_send(w, m); }
        std::size_t operator()(const Write &m) const
        {
            const WireTagged wire{header_of(MessageType::write), m.sequence, m.remote_address,
                                  m.remote_token, 0, {}};
            return encode_with_payload(w, wire, m.payload);
        }
        std::size_t operator()(const ReadRequest &m) const
        {
            if (m.sink.form == PayloadForm::inline_bytes)
                throw std::invalid_argument("a read request's sink is never inline");
            const WireTagged wire{header_of(MessageType::read_request), m.sequence,
                                  m.remote_address, m.remote_token, 0, {}};
            return encode_with_payload(w, wire, m.sink);
        }
        std::size_t operator()(const Ack &m) const
        {
            w.fixed(wire_status(MessageType::ack, m.sequence, m.status));
            return w.length();
        }
        std::size_t operator()(const ReceiveReady &) const
        {
            w.fixed(header_of(MessageType::receive_ready));
            return w.length();
        }
        std::size_t operator()(const Terminate &m) const
        {
            w.fixed(wire_status(MessageType::terminate, m.sequence, m.status));
            return w.length();
        }
    };
    return std::visit(Encoder{writer}, message);
}

namespace {

void decode_into(std::span<const std::byte> bytes, Message &out)
{
    WireHeader header{};
    if (!Reader(bytes).fixed(header)) {
        out = malformed("shorter than a header");
        return;
    }
    if (header.reserved != 0) {
        out = malformed("header reserved field");
        return;
    }
    Reader reader(bytes);
    switch (static_cast<MessageType>(header.type)) {
    case MessageType::connect_request:
        out = decode_connect_request(reader);
        return;
    case MessageType::reply:
        out = decode_reply(reader);
        return;
    case MessageType::reject:
        out = decode_reject(reader);
        return;
    case MessageType::ready_to_use:
        out = decode_bare<ReadyToUse>(reader);
        return;
    case MessageType::abandon:
        out = decode_bare<Abandon>(reader);
        return;
    case MessageType::refuse_reply:
        out = decode_bare<RefuseReply>(reader);
        return;
    case MessageType::receive_ready:
        out = decode_bare<ReceiveReady>(reader);
        return;
    case MessageType::disconnect:
        out = decode_disconnect(reader);
        return;
    case MessageType::send:
        decode_send(reader, out);
        return;
    case MessageType::write:
        out = decode_tagged<Write>(reader);
        return;
    case MessageType::read_request:
        out = decode_tagged<ReadRequest>(reader);
        return;
    case MessageType::ack:
        out = decode_status<Ack>(reader);
        return;
    case MessageType::terminate:
        out = decode_status<Terminate>(reader);
        return;
    }
    out = malformed("message type");
}

} // namespace

Message decode(std::span<const std::byte> bytes)
{
    Message message; // returned on the one path: the caller's object (decode_send)
    decode_into(bytes, message);
    return message;
}

std::size_t max_inline_send(std::size_t max_message) { return max_inline(max_message, sizeof(WireSend)); }
std::size_t max_inline_write(std::size_t max_message)
{
    return max_inline(max_message, sizeof(WireTagged));
}

std::size_t max_slot_vectors(std::size_t max_message, MessageType type)
{
    const std::size_t fixed = type == MessageType::send ? sizeof(WireSend) : sizeof(WireTagged);
    return max_inline(max_message, fixed) / sizeof(WireVector);
}

std::size_t max_slot_shared_vectors(std::size_t max_message, MessageType type)
{
    const std::size_t fixed = type == MessageType::send ? sizeof(WireSend) : sizeof(WireTagged);
    return max_inline(max_message, fixed + sizeof(WireRegion)) / sizeof(WireVector);
}

} // namespace ndk::soft::shm
