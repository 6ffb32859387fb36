// The context table: see contexts.hpp for the rule, docs/architecture.md for why.
#include "contexts.hpp"

#include "ndk/objects.hpp"

namespace ndk::py {
namespace {

struct Slot {
    std::weak_ptr<Adapter> owner;
    std::shared_ptr<ContextTable> table;
};

// Immortal: the tables hold Python objects, which must not be released by a static destructor
// after the interpreter has finalized.  Keyed by the adapter's address; `owner` tells a live
// adapter from a dead one whose address was reused.
std::unordered_map<const Adapter *, Slot> &tables = *new std::unordered_map<const Adapter *, Slot>;

} // namespace

bool passed_as_is(pyb::handle context, const char *parameter, PVOID *value)
{
    if (!PyLong_Check(context.ptr()))
        return false;
    auto number = static_cast<uintptr_t>(unsigned_arg(context, 8 * sizeof(PVOID), parameter));
    *value = reinterpret_cast<PVOID>(number);
    return number < ContextTable::kHandleBase || number >= ContextTable::kHandleEnd;
}

namespace {

template <class Raw, class Out>
std::vector<Out> convert(const Object &cq, std::span<const Raw> raw)
{
    std::vector<Out> out(raw.size());
    auto table = contexts_of(cq.adapter());
    for (size_t i = 0; i < raw.size(); ++i) {
        out[i].raw = raw[i];
        out[i].qp_context = table->peek(raw[i].QPContext);
        out[i].request_context = table->take(raw[i].RequestContext);
    }
    return out;
}

} // namespace

PVOID ContextTable::hold(pyb::handle context, const char *parameter, size_t uses)
{
    PVOID as_is = nullptr;
    if (passed_as_is(context, parameter, &as_is))
        return as_is;
    auto [known, added] = handles_.try_emplace(context.ptr(), 0);
    if (added) {
        do { // 2^40 handles, reused after the last; one still held is skipped
            known->second = next_handle_;
            next_handle_ += kHandleStep;
            if (next_handle_ >= kHandleEnd)
                next_handle_ = kHandleBase;
        } while (entries_.count(known->second) != 0);
        entries_.emplace(known->second,
                         Entry{pyb::reinterpret_borrow<pyb::object>(context), 0});
    }
    entries_.at(known->second).uses += uses;
    return reinterpret_cast<PVOID>(known->second);
}

void ContextTable::unhold(PVOID value, size_t uses)
{
    auto it = entries_.find(reinterpret_cast<uintptr_t>(value));
    if (it == entries_.end())
        return;
    if (it->second.uses > uses) {
        it->second.uses -= uses;
        return;
    }
    // Erase first, release after: the object's __del__ may post (and so use the table).
    pyb::object dying = std::move(it->second.object);
    handles_.erase(dying.ptr());
    entries_.erase(it);
}

pyb::object ContextTable::take(PVOID value)
{
    auto it = entries_.find(reinterpret_cast<uintptr_t>(value));
    if (it == entries_.end())
        return pyb::reinterpret_steal<pyb::object>(
            PyLong_FromUnsignedLongLong(reinterpret_cast<uintptr_t>(value)));
    pyb::object object = it->second.object;
    if (--it->second.uses == 0) {
        handles_.erase(object.ptr());
        entries_.erase(it);
    }
    return object;
}

pyb::object ContextTable::peek(PVOID value) const
{
    auto it = entries_.find(reinterpret_cast<uintptr_t>(value));
    if (it == entries_.end())
        return pyb::reinterpret_steal<pyb::object>(
            PyLong_FromUnsignedLongLong(reinterpret_cast<uintptr_t>(value)));
    return it->second.object;
}

void ContextTable::clear()
{
    std::unordered_map<uintptr_t, Entry> dying;
    dying.swap(entries_);
    handles_.clear();
}

const std::shared_ptr<ContextTable> &contexts_of(const std::shared_ptr<Adapter> &adapter)
{
    auto it = tables.find(adapter.get());
    if (it != tables.end() && it->second.owner.lock() == adapter)
        return it->second.table;
    // A new adapter: sweep the tables of adapters that went without close() first.
    std::vector<std::shared_ptr<ContextTable>> dying;
    for (auto i = tables.begin(); i != tables.end();) {
        if (i->second.owner.expired()) {
            dying.push_back(std::move(i->second.table));
            i = tables.erase(i);
        } else {
            ++i;
        }
    }
    auto &slot = tables[adapter.get()];
    slot.owner = adapter;
    slot.table = std::make_shared<ContextTable>();
    return slot.table;
}

void drop_contexts(const Adapter &adapter)
{
    auto it = tables.find(&adapter);
    if (it == tables.end())
        return;
    std::shared_ptr<ContextTable> table = std::move(it->second.table);
    tables.erase(it);
    table->clear();
}

HeldContext::HeldContext(const Object &target, pyb::handle context, const char *parameter,
                         size_t uses)
{
    if (passed_as_is(context, parameter, &value_))
        return;
    if (uses == 0)
        return;
    table_ = contexts_of(target.adapter());
    value_ = table_->hold(context, parameter, uses);
    uses_ = uses;
}

HeldContext::~HeldContext()
{
    if (table_ && kept_ < uses_)
        table_->unhold(value_, uses_ - kept_);
}

std::vector<ResultObject> results_of(const Object &cq, std::span<const NDK_RESULT> raw)
{
    return convert<NDK_RESULT, ResultObject>(cq, raw);
}

std::vector<ResultExObject> results_of(const Object &cq, std::span<const NDK_RESULT_EX> raw)
{
    return convert<NDK_RESULT_EX, ResultExObject>(cq, raw);
}

void forget_contexts(const Object &cq, std::span<const NDK_RESULT_EX> raw)
{
    auto table = contexts_of(cq.adapter());
    if (table->size() == 0)
        return;
    for (const auto &r : raw)
        table->take(r.RequestContext);
}

} // namespace ndk::py
