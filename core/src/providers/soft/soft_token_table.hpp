// The memory tokens of one soft adapter: which MR or MW a local or remote token names.
//
// A token is an index into this table and a generation, so naming its owner costs one bounds
// check and one compare instead of a hash lookup (three per message on the data path).  Each MR
// and MW holds a slot for its life; every token issued for a slot takes the slot's next
// generation, so a token that was revoked (Deregister, Invalidate, a window's unbind) or never
// issued (forged) names nothing until its slot has issued 4095 more tokens.  The adapter's lock
// is held for all of it.  `Owner` is SoftObject in the provider (a SoftMr or SoftMw).
#pragma once

#include "ndk/ndkpi.h"

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace ndk::soft {

template <class Owner>
class TokenTable {
public:
    // A slot for `owner`, or nullopt when every index is in use.
    std::optional<uint32_t> open(Owner &owner)
    {
        uint32_t index = 0;
        if (!free_.empty()) {
            // Oldest closed slot first: a slot's generations (and so the time before a stale
            // token could name a later owner) are spread over every object that comes and goes.
            index = free_.front();
            free_.pop_front();
        } else {
            if (slots_.size() > kIndexMask)
                return std::nullopt;
            index = static_cast<uint32_t>(slots_.size());
            // Slots start at scattered generations, so neighbouring slots rarely share one (a
            // forged token one index away from a real one names nothing).
            slots_.push_back(Slot{.generation = (index * 2654435761u) % (kGenerations - 1)});
        }
        slots_[index].owner = &owner;
        return index;
    }

    // The owner is gone: its tokens name nothing, the slot serves another owner later.  The
    // generation stays, so the old owner's tokens stay dead.
    void close(uint32_t slot)
    {
        Slot &s = slots_[slot];
        s.owner = nullptr;
        s.local = s.remote = 0;
        free_.push_back(slot);
    }

    // A new token for the slot: never 0 (the generation is >= 1) nor the privileged token 1;
    // it names nothing until enabled.
    UINT32 issue(uint32_t slot)
    {
        Slot &s = slots_[slot];
        s.generation = s.generation % (kGenerations - 1) + 1; // 1 .. kGenerations - 1
        return (s.generation << kIndexBits) | slot;
    }

    // `token` (issued for its slot) now names the slot's owner, as a local or a remote token.
    void enable(UINT32 token, bool remote)
    {
        Slot &s = slots_[token & kIndexMask];
        (remote ? s.remote : s.local) = token;
    }

    // `token` names nothing any more (no effect on a token not enabled).
    void revoke(UINT32 token)
    {
        uint32_t index = token & kIndexMask;
        if (token == 0 || index >= slots_.size())
            return;
        Slot &s = slots_[index];
        if (s.local == token)
            s.local = 0;
        if (s.remote == token)
            s.remote = 0;
    }

    // What `token` names as a local (remote = false) or remote token, or nullptr.
    Owner *owner(UINT32 token, bool remote) const
    {
        uint32_t index = token & kIndexMask;
        if (token == 0 || index >= slots_.size())
            return nullptr;
        const Slot &slot = slots_[index];
        return (remote ? slot.remote : slot.local) == token ? slot.owner : nullptr;
    }

private:
    static constexpr unsigned kIndexBits = 20;
    static constexpr uint32_t kIndexMask = (uint32_t{1} << kIndexBits) - 1;
    static constexpr uint32_t kGenerations = uint32_t{1} << (32 - kIndexBits);

    struct Slot {
        Owner *owner = nullptr;
        UINT32 local = 0;        // the enabled local token, 0: none (0 is never a token)
        UINT32 remote = 0;       // the enabled remote token, 0: none
        uint32_t generation = 0; // of the last token issued
    };
    std::vector<Slot> slots_;
    std::deque<uint32_t> free_; // closed slots, reused oldest first
};

} // namespace ndk::soft
