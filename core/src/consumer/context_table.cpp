#include "context_table.hpp"

namespace ndk {

ContextTable &ContextTable::instance()
{
    static ContextTable &table = *new ContextTable;
    return table;
}

void *ContextTable::add_entry(std::type_index type, std::shared_ptr<void> target)
{
    std::lock_guard lock(mu_);
    next_ += 16;
    entries_.emplace(next_, Entry{type, std::move(target)});
    return reinterpret_cast<void *>(next_);
}

std::shared_ptr<void> ContextTable::find_entry(std::type_index type, void *handle, bool take)
{
    std::shared_ptr<void> found;
    {
        std::lock_guard lock(mu_);
        auto it = entries_.find(reinterpret_cast<uintptr_t>(handle));
        if (it != entries_.end() && it->second.type == type) {
            found = take ? std::move(it->second.target) : it->second.target;
            if (take)
                entries_.erase(it);
        }
    }
    if (!found)
        count_unmatched();
    return found; // a taken entry is released by the caller, outside the lock
}

bool ContextTable::contains(void *handle)
{
    std::lock_guard lock(mu_);
    return entries_.count(reinterpret_cast<uintptr_t>(handle)) != 0;
}

void ContextTable::erase(void *handle)
{
    std::shared_ptr<void> gone;
    std::lock_guard lock(mu_);
    auto it = entries_.find(reinterpret_cast<uintptr_t>(handle));
    if (it == entries_.end())
        return;
    gone = std::move(it->second.target);
    entries_.erase(it);
}

} // namespace ndk
