// The wire messages of one soft connection between two processes: the establishment exchange
// on the control socket (shm_link.hpp) and the data operations in the ring slots.  The set is
// iWARP's (RDMAP over DDP): untagged Send, tagged Write, Read Request answered by the
// responder, Terminate; so a TCP wire can later carry the same operations with its own
// framing, and the soft provider above does not care which transport moved them.
//
// Each message is a fixed little header of explicit-size fields (the Wire* structs below,
// their layout pinned by static_asserts) followed by what its counts announce.  Both ends run
// on one host, so the fields are in its byte order, asserted little-endian.
//
// The peer is another process and may be buggy or hostile: decode() checks every field it
// wrote (type, flags, reserved words, enum values, counts and lengths against the bytes
// actually received, sums of vector lengths without overflow) and returns Malformed for any
// violation, never reading past the message.  A decoded message's spans point into the bytes
// given to decode(): a private copy (the ring copies a slot out before it is decoded), so the
// peer cannot change what was checked.
//
// Payloads too large for a slot travel by reference: a list of (address, length) vectors in
// the sender's address space, which the receiver pulls with process_vm_readv (or, for a Read
// Request's sink, the responder pushes with process_vm_writev).  A list too long for the slot
// is itself sent by reference (PayloadForm::vector_list: its address and count), and the
// receiver pulls the list first (shm_peer_vectors.hpp); the sender keeps both alive until the
// request is acknowledged, as it keeps its buffers.
#pragma once

#include "providers/soft/os/process_identity.hpp"

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <variant>

namespace ndk::soft::shm {

static_assert(std::endian::native == std::endian::little, "the shm wire is little-endian");

enum class MessageType : std::uint16_t {
    // Establishment, on the control socket.
    connect_request = 1,
    reply = 2,
    reject = 3,
    ready_to_use = 4, // the active side's CompleteConnect
    abandon = 5,      // establishment given up (close, timeout) by either side
    refuse_reply = 7, // the active side turns the Reply down (reject after it, close, timeout)
    // In the ring.
    disconnect = 6,
    send = 16,
    write = 17,
    read_request = 18,
    ack = 19,
    receive_ready = 20, // a receive was posted after a Send had to wait for one
    terminate = 21,
};

// NDK's limit on private data with a connect, accept or reject (ND_MAX_PRIVATE_DATA-ish for
// iWARP's MPA: what every provider accepts).
inline constexpr std::size_t kMaxPrivateData = 196;
// A vector list pulled from the peer is bounded, so a hostile count cannot make the receiver
// allocate without limit (16 MiB of list).
inline constexpr std::uint32_t kMaxRemoteVectors = 1u << 20;

// ---- the layout on the wire ---------------------------------------------------------------

struct WireHeader {
    std::uint16_t type;
    std::uint16_t flags; // per type; bits not defined for the type must be 0
    std::uint32_t reserved; // 0
};
struct WireEndpoint {
    std::uint16_t family; // AddressFamily
    std::uint16_t port;
    std::uint8_t address[16]; // IPv4 in the first 4 bytes, the rest 0
};
struct WireIdentity {
    std::int32_t pid;
    std::uint32_t reserved;
    std::uint64_t start_time;
};
struct WireConnectRequest {
    WireHeader header;
    WireEndpoint source;
    WireEndpoint destination;
    std::uint32_t inbound_read_limit;
    std::uint32_t outbound_read_limit;
    WireIdentity sender;
    std::uint32_t private_length; // bytes following
    std::uint32_t reserved;
};
struct WireReply {
    WireHeader header;
    std::uint32_t inbound_read_limit;
    std::uint32_t outbound_read_limit;
    std::uint32_t private_length;
    std::uint32_t reserved;
};
struct WireReject {
    WireHeader header;
    std::uint32_t private_length;
    std::uint32_t reserved;
};
struct WireDisconnect {
    WireHeader header;
    std::uint32_t reason;
    std::uint32_t reserved;
};
struct WireVector {
    std::uint64_t address; // in the address space of the side that wrote it
    std::uint64_t length;
};
// The sender's shared allocation (ndk/shared_memory.hpp) that every vector of a
// shared_vectors payload lies in: a sealed memfd the receiver may map and copy through instead
// of cross-memory attach.  Named by the sender's descriptor number, which the receiver opens
// as /proc/<pid>/fd/<fd> and accepts only if it is this file (device, inode), sealed, and at
// least `size` bytes; otherwise it copies by cross-memory attach as for form vectors.
struct WireRegion {
    std::uint64_t base; // where the allocation starts in the sender's address space
    std::uint64_t size;
    std::uint64_t device;
    std::uint64_t inode;
    std::int32_t fd;
    std::uint32_t reserved;
};
struct WirePayload {
    std::uint64_t total_length;
    std::uint16_t form; // PayloadForm
    std::uint16_t reserved;
    std::uint32_t count; // inline: bytes; vectors: vectors following; vector_list: its vectors
};
struct WireSend {
    WireHeader header; // flags: kSolicited, kInvalidate
    std::uint64_t sequence;
    std::uint32_t invalidate_token; // 0 unless kInvalidate
    // How long the target holds the Send when no receive is posted before it answers
    // IO_TIMEOUT: the initiator's RNR timeout, decided at the target so that a late receive
    // cannot race the initiator's own timer (docs/transport.md).
    std::uint32_t rnr_timeout_ms;
    WirePayload payload;
};
struct WireTagged { // Write, and Read Request (whose payload is the requester's sink)
    WireHeader header;
    std::uint64_t sequence;
    std::uint64_t remote_address;
    std::uint32_t remote_token;
    std::uint32_t reserved;
    WirePayload payload;
};
struct WireStatus { // Ack and Terminate
    WireHeader header;
    std::uint64_t sequence;
    std::uint32_t status; // an NTSTATUS
    std::uint32_t reserved;
};

static_assert(sizeof(WireHeader) == 8);
static_assert(sizeof(WireEndpoint) == 20);
static_assert(sizeof(WireIdentity) == 16);
static_assert(sizeof(WireConnectRequest) == 80 && offsetof(WireConnectRequest, sender) == 56 &&
              offsetof(WireConnectRequest, private_length) == 72);
static_assert(sizeof(WireReply) == 24);
static_assert(sizeof(WireReject) == 16);
static_assert(sizeof(WireDisconnect) == 16);
static_assert(sizeof(WireVector) == 16);
static_assert(sizeof(WirePayload) == 16);
static_assert(sizeof(WireRegion) == 40);
static_assert(sizeof(WireSend) == 40 && offsetof(WireSend, payload) == 24);
static_assert(sizeof(WireTagged) == 48 && offsetof(WireTagged, payload) == 32);
static_assert(sizeof(WireStatus) == 24);

inline constexpr std::uint16_t kSolicited = 1;
inline constexpr std::uint16_t kInvalidate = 2;
// A Reject's flag: it carries private data (NdkReject) rather than none at all (the passive
// connector closed before it accepted); the two differ for the consumer.
inline constexpr std::uint16_t kPrivateDataPresent = 1;

// The longest establishment message: a ConnectRequest with all its private data.
inline constexpr std::size_t kMaxControlMessage = sizeof(WireConnectRequest) + kMaxPrivateData;

// ---- the messages as the program sees them ------------------------------------------------

enum class AddressFamily : std::uint16_t { ipv4 = 4, ipv6 = 6 };

struct Endpoint {
    AddressFamily family = AddressFamily::ipv4;
    std::array<std::uint8_t, 16> address{};
    std::uint16_t port = 0;
    bool operator==(const Endpoint &) const = default;
};

enum class PayloadForm : std::uint16_t {
    inline_bytes = 1, // in the slot
    vectors = 2,      // (address, length) vectors in the slot, in the sender's memory
    vector_list = 3,  // the vector list itself in the sender's memory: its address and count
    shared_vectors = 4, // a WireRegion, then vectors as for `vectors`, all inside the region
};

struct Payload {
    PayloadForm form = PayloadForm::inline_bytes;
    std::uint64_t total_length = 0;
    // inline_bytes: the bytes; vectors and shared_vectors: the WireVectors as raw bytes
    // (vector() reads one).
    std::span<const std::byte> bytes;
    // shared_vectors: the sender's allocation the vectors lie in.
    WireRegion region{};
    // vector_list: where the list is, and how many vectors it holds.
    std::uint64_t list_address = 0;
    std::uint32_t list_count = 0;

    static Payload inline_data(std::span<const std::byte> data);
    static Payload vectors_of(std::span<const WireVector> vectors); // total: their sum
    static Payload shared_vectors_of(const WireRegion &region,
                                     std::span<const WireVector> vectors);
    static Payload remote_list(std::span<const WireVector> list_in_this_process,
                               std::uint64_t total_length);

    std::size_t vector_count() const; // vectors in the slot (forms vectors, shared_vectors)
    WireVector vector(std::size_t i) const;
};

struct ConnectRequest {
    Endpoint source;
    Endpoint destination;
    std::uint32_t inbound_read_limit = 0; // reads the sender accepts at once (IRD)
    std::uint32_t outbound_read_limit = 0; // reads the sender issues at once (ORD)
    os::ProcessIdentity sender;
    std::span<const std::byte> private_data;
};
struct Reply {
    std::uint32_t inbound_read_limit = 0;
    std::uint32_t outbound_read_limit = 0;
    std::span<const std::byte> private_data;
};
struct Reject {
    std::optional<std::span<const std::byte>> private_data;
};
struct ReadyToUse {};
struct Abandon {};
struct RefuseReply {};
enum class DisconnectReason : std::uint32_t { graceful = 1, abortive = 2, error = 3 };
struct Disconnect {
    DisconnectReason reason = DisconnectReason::graceful;
};
struct Send {
    std::uint64_t sequence = 0;
    bool solicited = false;
    bool invalidate = false;
    std::uint32_t invalidate_token = 0;
    std::uint32_t rnr_timeout_ms = 0;
    Payload payload;
};
struct Write {
    std::uint64_t sequence = 0;
    std::uint64_t remote_address = 0;
    std::uint32_t remote_token = 0;
    Payload payload;
};
struct ReadRequest {
    std::uint64_t sequence = 0;
    std::uint64_t remote_address = 0;
    std::uint32_t remote_token = 0;
    Payload sink; // form vectors or vector_list; total_length is the read's length
};
struct Ack {
    std::uint64_t sequence = 0;
    std::uint32_t status = 0;
};
struct ReceiveReady {};
struct Terminate {
    std::uint64_t sequence = 0;
    std::uint32_t status = 0;
};
// What decode() returns for bytes that are not a valid message; `why` names the first
// violation (a static string, for logs and tests).
struct Malformed {
    const char *why = "";
};

using Message = std::variant<Malformed, ConnectRequest, Reply, Reject, ReadyToUse, Abandon,
                             RefuseReply, Disconnect, Send, Write, ReadRequest, Ack, ReceiveReady, Terminate>;

// Write `message` into `out`; its length, or 0 when it does not fit (the caller then picks a
// by-reference payload form).  Throws std::invalid_argument for a message that could never be
// valid (private data over kMaxPrivateData, an enum out of range, a Malformed).
std::size_t encode(const Message &message, std::span<std::byte> out);

// The message in `bytes`, or Malformed.  Never reads outside `bytes`.
Message decode(std::span<const std::byte> bytes);

// The most inline payload bytes a Send (or Write) can carry in a message of `max_message`
// bytes, and the most vectors.
std::size_t max_inline_send(std::size_t max_message);
std::size_t max_inline_write(std::size_t max_message);
std::size_t max_slot_vectors(std::size_t max_message, MessageType type);
// The most vectors a shared_vectors payload carries (its WireRegion takes slot room).
std::size_t max_slot_shared_vectors(std::size_t max_message, MessageType type);

} // namespace ndk::soft::shm
