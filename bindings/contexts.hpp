// NDK contexts from Python: qp_context and request_context take any Python object.
//
// The rule (docs/architecture.md, "The binding"): an int is passed to the provider as is (0 is
// NULL, the default) and comes back as that int; any other object, None included, is passed as
// a handle while a per-adapter table holds a reference to it, and a result carrying the handle
// gives back the very same object.  Handles come from a range of their own
// ([kHandleBase, kHandleEnd), never an object's address), and an int inside that range is held
// like an object, so an int context never aliases an object context (an int equal to id() of
// a held object came back as that object, and the object's completion as an int).  A request
// context is held from the post until the completion that carries it is retrieved
// (Cq.get_results*, wait_results, poll_into: that one leaves the raw handle in its array and
// only drops the reference), or until the adapter closes (a successful SILENT_SUCCESS request
// has no completion); a post that does not return SUCCESS releases it at once.  A qp_context
// is held until the adapter closes, since every completion of the QP carries it, even after
// the QP's close.
//
// Every table operation runs with the GIL held, which is what serializes them.
#pragma once

#include "py_support.hpp"

#include <cstddef>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

namespace ndk {
class Adapter;
class Object;
}

namespace ndk::py {

// Whether `context` (an int outside the handles' range) is passed to the provider as is; its
// value into *value either way for an int (an int out of range raises, naming `parameter`).
bool passed_as_is(pyb::handle context, const char *parameter, PVOID *value);

class ContextTable {
public:
    // The handles' range: in the kernel's half of the address space, where neither a user
    // space pointer nor a count falls; a step of 16 keeps them aligned like pointers.
    static constexpr uintptr_t kHandleBase = 0xFFFF'C000'0000'0000;
    static constexpr uintptr_t kHandleEnd = 0xFFFF'D000'0000'0000;
    static constexpr uintptr_t kHandleStep = 16;

    // The PVOID that stands for `context` (see above), holding it `uses` times when it is not
    // an int.  `parameter` names the argument in errors (a negative or too large int).
    PVOID hold(pyb::handle context, const char *parameter, size_t uses = 1);
    // Undo `uses` holds of `value` (a post that did not return SUCCESS).
    void unhold(PVOID value, size_t uses = 1);
    // The object a completion's request context stands for, dropping one hold; an int for a
    // value the table does not hold.
    pyb::object take(PVOID value);
    // The same without dropping the hold (qp_context).
    pyb::object peek(PVOID value) const;
    size_t size() const { return entries_.size(); }
    void clear();

private:
    struct Entry {
        pyb::object object;
        size_t uses;
    };
    std::unordered_map<uintptr_t, Entry> entries_;   // handle -> the object it stands for
    std::unordered_map<PyObject *, uintptr_t> handles_; // a held object -> its handle
    uintptr_t next_handle_ = kHandleBase;
};

// The table of `adapter` (created on first use).  GIL held.
const std::shared_ptr<ContextTable> &contexts_of(const std::shared_ptr<Adapter> &adapter);
// Forget the table of a closed adapter, releasing every object it held.  GIL held.
void drop_contexts(const Adapter &adapter);

// One request context, held for one post: released again unless the post returned SUCCESS
// (or if it threw).  Construct and destroy with the GIL held.
class HeldContext {
public:
    HeldContext(const Object &target, pyb::handle context, const char *parameter = "request_context",
                size_t uses = 1);
    ~HeldContext();
    HeldContext(const HeldContext &) = delete;
    HeldContext &operator=(const HeldContext &) = delete;
    PVOID value() const { return value_; }
    // The post returned `status` for `posted` of the uses: keep those.
    void posted(size_t count) { kept_ = count; }

private:
    std::shared_ptr<ContextTable> table_; // null for an int
    PVOID value_ = nullptr;
    size_t uses_ = 0;
    size_t kept_ = 0;
};

} // namespace ndk::py

namespace ndk::py {

// NDK_RESULT / NDK_RESULT_EX as Python sees them (ndk.Result, ndk.ResultEx): the raw record
// and the context objects it stands for.
struct ResultObject {
    NDK_RESULT raw{};
    pyb::object qp_context;
    pyb::object request_context;
};
struct ResultExObject {
    NDK_RESULT_EX raw{};
    pyb::object qp_context;
    pyb::object request_context;
};

// Results retrieved from `cq`, with their contexts taken from its adapter's table.  GIL held.
std::vector<ResultObject> results_of(const Object &cq, std::span<const NDK_RESULT> raw);
std::vector<ResultExObject> results_of(const Object &cq, std::span<const NDK_RESULT_EX> raw);
// Results that stay raw (Cq.poll_into): drop the holds of their request contexts.  GIL held.
void forget_contexts(const Object &cq, std::span<const NDK_RESULT_EX> raw);

} // namespace ndk::py
