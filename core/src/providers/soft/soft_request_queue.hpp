// A FIFO of posted requests (a QP's initiator or receive queue, an SRQ) whose slots are reused:
// a request is built in place in the next free slot and left there when it is consumed, so its
// vectors (SGL, inline data, page list) keep their capacity for the next one.  Once a queue
// has held its working depth, posting allocates nothing (docs/performance.md).  The storage
// grows geometrically with what is outstanding, never to the queue's full depth up front: a
// deep QP that stays shallow costs little memory.  Guarded by the adapter's lock.
//
// Its head and count live in the queue until place_counts() puts them elsewhere: an in-process
// connection keeps both ends' in the cache line of its lock (soft_connection_line.hpp), where
// each message writes them, while the slots' storage, written only at growth, stays here.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace ndk::soft {

// T: default-constructible, with `clear()` that resets it for reuse (keeping capacity).
template <class T>
class RequestQueue {
public:
    RequestQueue() = default;
    // The head and count may point into the queue itself: never copied or moved.
    RequestQueue(const RequestQueue &) = delete;
    RequestQueue &operator=(const RequestQueue &) = delete;

    bool empty() const { return *count_ == 0; }
    size_t size() const { return *count_; }

    // The slot the next request is built in; it joins the queue only at commit().  A request
    // whose build fails is never committed and its slot is taken again by the next post.
    T &next_slot()
    {
        if (*count_ == slots_.size())
            grow();
        T &slot = slots_[index(*count_)];
        slot.clear();
        return slot;
    }
    void commit() { ++*count_; }

    T &front() { return slots_[*head_]; }
    T &at(size_t i) { return slots_[index(i)]; }
    // The head is consumed; its slot stays, with its storage, for a later request.
    void pop_front()
    {
        *head_ = static_cast<uint32_t>(index(1));
        --*count_;
    }

    // Keep the head at `head` and the count at `count` from now on (nullptr: in the queue
    // itself), with the values they have now.  The places outlive the queue's use of them.
    void place_counts(uint32_t *head, uint32_t *count)
    {
        head = head != nullptr ? head : &own_head_;
        count = count != nullptr ? count : &own_count_;
        uint32_t h = *head_, n = *count_;
        head_ = head;
        count_ = count;
        *head_ = h;
        *count_ = n;
    }

private:
    // A queue holds at most its depth (a ULONG), so its head and count fit 32 bits.
    size_t index(size_t i) const { return (*head_ + i) % slots_.size(); }

    void grow()
    {
        std::vector<T> bigger(std::max<size_t>(4, slots_.size() * 2));
        for (size_t i = 0; i < *count_; ++i)
            bigger[i] = std::move(slots_[index(i)]);
        slots_.swap(bigger);
        *head_ = 0;
    }

    std::vector<T> slots_;
    uint32_t own_head_ = 0, own_count_ = 0;
    uint32_t *head_ = &own_head_, *count_ = &own_count_;
};

} // namespace ndk::soft
