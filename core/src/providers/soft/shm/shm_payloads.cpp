#include "providers/soft/shm/shm_payloads.hpp"

#include "providers/soft/soft_memory.hpp"
#include "ndk/shared_memory.hpp"

#include <cstring>

namespace ndk::soft {
namespace {

// The one shared allocation of this process that holds every vector, if there is one.
std::optional<shm::WireRegion> shared_region(std::span<const shm::WireVector> list)
{
    std::optional<SharedRange> range =
        find_shared_memory(reinterpret_cast<const void *>(list.front().address),
                           list.front().length);
    if (!range)
        return std::nullopt;
    for (const shm::WireVector &v : list.subspan(1))
        if (v.address < range->base || v.address - range->base > range->size ||
            v.length > range->size - (v.address - range->base))
            return std::nullopt;
    return shm::WireRegion{range->base, range->size, range->device, range->inode, range->fd, 0};
}

} // namespace

shm::Payload outgoing_payload(const Spans &spans, SlotRoom room,
                              std::vector<shm::WireVector> &list)
{
    size_t total = total_length(spans);
    list.clear();
    // One span small enough travels in the slot (and nothing, for a zero-length send); several
    // go as vectors even when small: the slot's bytes are one span, and gathering them would
    // cost the copy this saves.
    if (spans.empty())
        return shm::Payload::inline_data({});
    if (total <= room.inline_bytes && spans.size() == 1)
        return shm::Payload::inline_data(
            {reinterpret_cast<const std::byte *>(spans.front().host), total});
    for (const Span &s : spans)
        if (s.length > 0)
            list.push_back({reinterpret_cast<std::uintptr_t>(s.host), s.length});
    if (list.size() <= room.shared_vectors)
        if (std::optional<shm::WireRegion> region = shared_region(list))
            return shm::Payload::shared_vectors_of(*region, list);
    if (list.size() <= room.vectors)
        return shm::Payload::vectors_of(list);
    return shm::Payload::remote_list(list, total);
}

bool IncomingPayload::open(pid_t peer, const shm::Payload &payload, shm::PeerMappings &mappings)
{
    remote_.reset();
    mapping_.reset();
    shared_ = nullptr;
    inline_ = {};
    if (payload.form == shm::PayloadForm::inline_bytes) {
        inline_ = inline_span(payload.bytes);
        length_ = payload.bytes.size();
        status_ = shm::PeerVectorsStatus::ok;
        return true;
    }
    status_ = shm::peer_vectors(peer, payload, vectors_).status;
    if (status_ != shm::PeerVectorsStatus::ok)
        return false;
    remote_.emplace(peer, vectors_);
    length_ = remote_->length();
    if (payload.form == shm::PayloadForm::shared_vectors) {
        // Mapped at the first copy, which the target side makes only once the token, bounds
        // and access of its own region passed: a refused request maps nothing.
        shared_ = &mappings;
        peer_ = peer;
        region_ = payload.region;
    }
    return true;
}

bool IncomingPayload::map_shared()
{
    if (shared_ == nullptr)
        return false;
    mapping_ = shared_->map(peer_, region_);
    shared_ = nullptr; // tried once: mapped, or cross-memory attach from here on
    if (!mapping_)
        return false;
    // decode() checked every vector to lie inside the region; peer_vectors() that they add up
    // to the total.
    mapped_.clear();
    for (const iovec &v : vectors_)
        mapped_.push_back({reinterpret_cast<unsigned char *>(mapping_->local(
                               region_, reinterpret_cast<std::uintptr_t>(v.iov_base))),
                           v.iov_len});
    return true;
}

bool IncomingPayload::copy_to(const Spans &sink)
{
    if (mapping_ || map_shared())
        return copy_spans(sink, mapped_) == length_;
    if (remote_)
        return remote_->copy_to(sink);
    return LocalPayload(std::span(&inline_, 1)).copy_to(sink);
}

bool IncomingPayload::copy_from(const Spans &source)
{
    if (mapping_ || map_shared())
        return copy_spans(mapped_, source) == length_;
    return remote_ && remote_->copy_from(source); // inline bytes are never a sink
}

} // namespace ndk::soft
