// What the consumer hands a provider as a context (the context of a create, request or close
// completion; a CQ's, SRQ's, listener's or connector's event context) is a handle into this
// table, never a pointer to consumer memory.  A provider that calls a completion after an
// inline return, calls it twice, calls an event callback after the object's close completed,
// or passes a context it made up, finds nothing here: the call is ignored (and counted),
// instead of writing through freed memory (docs/semantics.md, "The consumer's side").
//
// Handles are never reused while the process lives, and each entry remembers its type, so a
// context given for one kind of callback and passed to another does not match either.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <typeindex>
#include <unordered_map>

namespace ndk {

class ContextTable {
public:
    // The process's table.  Immortal: providers' threads may still call in during exit.
    static ContextTable &instance();

    template <class T>
    void *add(std::shared_ptr<T> target)
    {
        return add_entry(std::type_index(typeid(T)), std::move(target));
    }
    void *add_entry(std::type_index type, std::shared_ptr<void> target);
    // The entry for `handle` if it is a live T, else nullptr.  The entry stays.
    template <class T>
    std::shared_ptr<T> find(void *handle)
    {
        return std::static_pointer_cast<T>(find_entry(std::type_index(typeid(T)), handle, false));
    }
    // The same, and the entry goes: a completion that may come only once.
    template <class T>
    std::shared_ptr<T> take(void *handle)
    {
        return std::static_pointer_cast<T>(find_entry(std::type_index(typeid(T)), handle, true));
    }
    void erase(void *handle);
    bool contains(void *handle);
    std::shared_ptr<void> find_entry(std::type_index type, void *handle, bool take);

    // How many provider calls carried a context that matched nothing (late, repeated or
    // forged): a provider fault the validation layer reports by rule when it is on.
    uint64_t unmatched() const { return unmatched_.load(std::memory_order_relaxed); }
    void count_unmatched() { unmatched_.fetch_add(1, std::memory_order_relaxed); }

private:
    struct Entry {
        std::type_index type;
        std::shared_ptr<void> target;
    };
    std::mutex mu_;
    std::unordered_map<uintptr_t, Entry> entries_;
    // Not near 0 (NULL, small ints) nor a plausible heap address of ours; a step of 16 keeps
    // handles aligned like the pointers a provider expects.
    uintptr_t next_ = 0x7ADC00000000;
    std::atomic<uint64_t> unmatched_{0};
};

} // namespace ndk
