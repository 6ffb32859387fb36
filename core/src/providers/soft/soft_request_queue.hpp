// A FIFO of posted requests (a QP's initiator or receive queue, an SRQ) whose slots are reused:
// a request is built in place in the next free slot and left there when it is consumed, so its
// vectors (SGL, inline data, page list) keep their capacity for the next one.  Once a queue
// has held its working depth, posting allocates nothing (docs/performance.md).  The storage
// grows geometrically with what is outstanding, never to the queue's full depth up front: a
// deep QP that stays shallow costs little memory.  Guarded by the adapter's lock.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace ndk::soft {

// T: default-constructible, with `clear()` that resets it for reuse (keeping capacity).
template <class T>
class RequestQueue {
public:
    bool empty() const { return count_ == 0; }
    size_t size() const { return count_; }

    // The slot the next request is built in; it joins the queue only at commit().  A request
    // whose build fails is never committed and its slot is taken again by the next post.
    T &next_slot()
    {
        if (count_ == slots_.size())
            grow();
        T &slot = slots_[index(count_)];
        slot.clear();
        return slot;
    }
    void commit() { ++count_; }

    T &front() { return slots_[head_]; }
    T &at(size_t i) { return slots_[index(i)]; }
    // The head is consumed; its slot stays, with its storage, for a later request.
    void pop_front()
    {
        head_ = index(1);
        --count_;
    }

private:
    size_t index(size_t i) const { return (head_ + i) % slots_.size(); }

    void grow()
    {
        std::vector<T> bigger(std::max<size_t>(4, slots_.size() * 2));
        for (size_t i = 0; i < count_; ++i)
            bigger[i] = std::move(slots_[index(i)]);
        slots_.swap(bigger);
        head_ = 0;
    }

    std::vector<T> slots_;
    size_t head_ = 0;
    size_t count_ = 0;
};

} // namespace ndk::soft
