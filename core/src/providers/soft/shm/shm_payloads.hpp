// The soft data path's bytes in shm messages (shm_messages.hpp), both ways:
//  - the initiator describes its resolved spans as a message payload: the bytes themselves when
//    they fit the slot (no copy by the target at all); else their vectors in the slot, with the
//    shared allocation they all lie in when there is one (ndk/shared_memory.hpp), which the
//    target maps; else a list of vectors the target pulls first (kept alive by the initiator
//    until the answer);
//  - the target sees a received payload as the PayloadSource or PayloadSink its target side
//    takes (soft_target.hpp): the inline bytes, the initiator's allocation mapped here
//    (memcpy), or the initiator's memory by cross-memory copy.
// docs/transport.md, "The shm transport in the soft provider" and "Zero-copy".
#pragma once

#include "providers/soft/shm/shm_cross_memory_payload.hpp"
#include "providers/soft/shm/shm_messages.hpp"
#include "providers/soft/shm/shm_peer_mappings.hpp"
#include "providers/soft/shm/shm_peer_vectors.hpp"
#include "providers/soft/soft_target.hpp"

#include <optional>
#include <vector>

namespace ndk::soft {

// How much a slot can carry, from shm::max_inline_send / max_slot_vectors for the message.
struct SlotRoom {
    size_t inline_bytes = 0; // 0: the bytes never go inline (a Read's sink)
    size_t vectors = 0;
    size_t shared_vectors = 0; // beside the shared allocation's WireRegion
};

// The payload describing `spans` (this process's memory).  `list` holds the vectors when they
// do not fit the slot: it must stay unchanged until the target has answered.
shm::Payload outgoing_payload(const Spans &spans, SlotRoom room,
                              std::vector<shm::WireVector> &list);

// The bytes a message carries in its slot as one Span, for a LocalPayload over it: a small
// Send's whole path at the target, with nothing to open and no Spans vector to allocate.  Only
// read from (Span has no const form).
inline Span inline_span(std::span<const std::byte> bytes)
{
    return {const_cast<unsigned char *>(reinterpret_cast<const unsigned char *>(bytes.data())),
            bytes.size()};
}

// A received payload as the target side takes it.  Valid while the message's bytes are.  An
// inline payload needs none of it: a LocalPayload over its inline_span() is the cheaper object.
class IncomingPayload final : public PayloadSource, public PayloadSink {
public:
    // False (and status() says why) when the payload's vectors cannot be had: malformed, or
    // the list could not be pulled from `peer`.  A shared_vectors payload is copied through
    // the allocation `mappings` maps (at the first copy: nothing is mapped for a request the
    // target refuses), or by cross-memory attach when it cannot be mapped.
    bool open(pid_t peer, const shm::Payload &payload, shm::PeerMappings &mappings);
    bool mapped() const { return mapping_ != nullptr; } // a copy took the memcpy path
    shm::PeerVectorsStatus status() const { return status_; }

    size_t length() const override { return length_; }
    bool copy_to(const Spans &sink) override;
    bool copy_from(const Spans &source) override; // only a payload of vectors: a Read's sink

private:
    shm::PeerVectorsStatus status_ = shm::PeerVectorsStatus::ok;
    Span inline_{}; // an inline payload's bytes (inline_span)
    std::vector<iovec> vectors_;
    std::optional<CrossMemoryPayload> remote_;
    // Maps the shared allocation of a shared_vectors payload, once; false when there is none
    // or it cannot be mapped.
    bool map_shared();

    shm::PeerMappings *shared_ = nullptr; // a shared_vectors payload not mapped yet
    pid_t peer_ = 0;
    shm::WireRegion region_{};
    std::shared_ptr<const shm::PeerMapping> mapping_; // kept while the copy may run
    Spans mapped_;                                    // the vectors, as this process sees them
    size_t length_ = 0;
};

} // namespace ndk::soft
