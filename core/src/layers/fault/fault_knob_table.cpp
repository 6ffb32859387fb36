// The fault layer's knob table: docs/knobs.md's rows of the layer (its first rows; the soft
// provider's table, core/src/providers/soft/soft_knob_table.cpp, gives the rest), and how the
// layer sets and reads each knob.  Injection::set and get find the row and call it.
#include "layers/fault/fault_layer.hpp"

#include "providers/kit/kit_functions.hpp"
#include "providers/kit/kit_knob_docs.hpp"

#include <charconv>
#include <sstream>

namespace ndk::fault {

// ---- the actions, under Injection's lock ------------------------------------------------------

namespace {

// The mode `name` (create_mode, request_mode, close_mode) names.
template <class Modes>
auto &mode_of(Modes &modes, std::string_view name)
{
    return name == "create_mode"    ? modes.create
           : name == "request_mode" ? modes.request
                                    : modes.close;
}

} // namespace

std::string Injection::set_mode(Injection &in, std::string_view name, const std::string &value)
{
    auto mode = parse_completion_mode(value);
    if (!mode)
        return "expected inline, pending or random";
    mode_of(in.modes_, name) = *mode;
    return "";
}

std::string Injection::get_mode(const Injection &in, std::string_view name)
{
    return completion_mode_name(mode_of(in.modes_, name));
}

std::string Injection::set_seed(Injection &in, std::string_view, const std::string &value)
{
    uint64_t seed = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seed);
    if (ec != std::errc() || end != value.data() + value.size())
        return "expected an integer";
    in.seed_ = seed;
    in.random_.seed(seed);
    return "";
}

std::string Injection::get_seed(const Injection &in, std::string_view)
{
    return std::to_string(in.seed_);
}

std::string Injection::set_fail(Injection &in, std::string_view, const std::string &value)
{
    FailureSpec spec;
    std::string refused = parse_failure(value, spec);
    if (refused.empty())
        in.failures_[spec.function] = ArmedFailure{spec.status, spec.async, spec.count};
    return refused;
}

std::string Injection::get_fail(const Injection &in, std::string_view)
{
    std::string text;
    for (const auto &[function, armed] : in.failures_)
        text += failure_text(function, armed.status, armed.async, armed.remaining);
    return text;
}

std::string Injection::clear_failures(Injection &in, std::string_view, const std::string &)
{
    in.failures_.clear();
    return "";
}

std::string Injection::set_misbehave(Injection &in, std::string_view, const std::string &value)
{
    for (const MisbehaveName &m : misbehave_table())
        if (value == m.name) {
            in.misbehave_.store(m.value, std::memory_order_release);
            return "";
        }
    std::string reply = "unknown misbehave '" + value + "'; the fault layer acts:";
    for (const MisbehaveName &m : misbehave_table())
        reply += std::string(" ") + m.name;
    return reply;
}

std::string Injection::get_misbehave(const Injection &in, std::string_view)
{
    const Misbehave now = in.misbehave_.load(std::memory_order_acquire);
    for (const MisbehaveName &m : misbehave_table())
        if (m.value == now)
            return m.name;
    return "none";
}

// `hold` arms, `release` lets every held call go on, `held` is read only.
std::string Injection::set_hold(Injection &in, std::string_view name, const std::string &value)
{
    if (name == "held")
        return "read only";
    if (name == "release") {
        in.hold_.clear();
        ++in.release_generation_;
        in.cv_.notify_all();
        return "";
    }
    if (kit::find_function(value) == nullptr)
        return "'" + value + "' is not an NDK dispatch function";
    in.hold_ = value;
    return "";
}

std::string Injection::get_hold(const Injection &in, std::string_view name)
{
    if (name == "held")
        return std::to_string(in.held_);
    return name == "hold" ? in.hold_ : "";
}

// ---- the table -----------------------------------------------------------------------------

namespace {

// Write-only knobs (a trigger) read as "".
std::string nothing(const Injection &, std::string_view) { return ""; }

} // namespace

// In docs/knobs.md's order.
const Injection::Knob Injection::kKnobTable[] = {
    {.names = "create_mode",
     .values = "`inline` (default), `pending`, `random`",
     .effect = "how NdkCreateXxx completes: return the object, or STATUS_PENDING and the create "
               "completion later, from the layer's thread. `inline` adds no pend: at open it is "
               "refused (STATUS_NOT_SUPPORTED, a skip) unless the provider's `completes_inline` "
               "says it completes these calls inline",
     .set = set_mode,
     .get = get_mode},
    {.names = "request_mode",
     .values = "same",
     .effect =
         "the same for asynchronous requests (RegisterMr, DeregisterMr, "
         "InitializeFastRegisterMr, ResizeCq, ModifySrq, Listen, BuildLAM, CompleteConnect, "
         "Disconnect), and whether a refused or unreachable Connect reports inline or through "
         "its completion (a failure its page documents pends, an argument check stays "
         "inline). Connect and Accept always pend: they wait for the peer",
     .set = set_mode,
     .get = get_mode},
    {.names = "close_mode",
     .values = "same",
     .effect =
         "the same for NdkCloseXxx (a close also pends while successors are open, digest 3.1)",
     .set = set_mode,
     .get = get_mode},
    {.names = "seed",
     .values = "integer",
     .effect = "seed of `random` mode: the same seed gives the same sequence",
     .set = set_seed,
     .get = get_seed},
    {.names = "fail",
     .values = "`\"<NdkFunction> <status> [inline|async] [count]\"` (posts such as NdkSend, "
               "NdkWrite, NdkBind are inline only)",
     .effect = "the next `count` calls (default 1, -1 = every call) of that function return "
               "`status` inline, or STATUS_PENDING and then `status` through the completion, "
               "without reaching the provider (a failed post does not release the QP's deferred "
               "requests, as a provider's own inline failure would, digest 3.4). "
               "Python: `ad.knobs.fail(\"NdkCreatePd\", Status.INSUFFICIENT_RESOURCES, "
               "mode=\"async\", count=1)`",
     .set = set_fail,
     .get = get_fail},
    {.names = "clear_failures",
     .values = "any",
     .effect = "disarm every `fail`",
     .set = clear_failures,
     .get = nothing},
    {.names = "misbehave",
     .values = "`none` (default) or a name below",
     .effect = "break one NDK contract rule on purpose (the only knob that does): the fault layer "
               "acts the names visible at the ABI edge, the provider those that need its internals "
               "(the table below says which); one at a time. An unknown name is "
               "STATUS_INVALID_PARAMETER and the reply lists the valid ones. At open or at run "
               "time; it applies to what happens after it is set (objects already created keep "
               "their header, a request already pending completes as the mode was when it pended)",
     .set = set_misbehave,
     .get = get_misbehave},
    {.names = "hold release held",
     .values = "set `hold` to an NDK dispatch function name (`NdkGetCqResults`, `NdkArmCq`, "
               "`NdkSend`, ... any NDK dispatch function); set `release` (any value); read `held`",
     .effect =
         "the next call of that function, on any adapter of this miniport, blocks in the "
         "layer, before it reaches the provider, until `release` is set, its adapter is "
         "closed (which sets `release`), or an object the call is on or takes as an argument "
         "is closed (docs/semantics.md, CLOSE-HELD), or, in Python on the "
         "main thread, until a signal's handler raises (Ctrl-C: KeyboardInterrupt, raised when "
         "the call returns; HOLD-SIGINT); the hold is consumed by that one call. `release` also "
         "disarms a hold that caught "
         "nothing. `held` is how many calls are blocked now; reading `hold` gives the armed "
         "name (empty once consumed). Run time only, like `step`. For tests that a validation "
         "layer sees a consumer calling concurrently",
     .set = set_hold,
     .get = get_hold},
};

std::span<const Injection::Knob> Injection::knob_table() { return kKnobTable; }

const std::vector<std::string> &Injection::knob_names()
{
    static const std::vector<std::string> names = [] {
        std::vector<std::string> all;
        for (const Knob &knob : kKnobTable)
            for (const std::string &name : kit::knob_names_of(knob.names))
                all.push_back(name);
        return all;
    }();
    return names;
}

bool Injection::is_knob(std::string_view key) { return find_knob(key) != nullptr; }

const Injection::Knob *Injection::find_knob(std::string_view key)
{
    for (const Knob &knob : kKnobTable)
        for (const std::string &name : kit::knob_names_of(knob.names))
            if (name == key)
                return &knob;
    return nullptr;
}

std::string Injection::knob_table_markdown()
{
    std::string rows;
    for (const Knob &knob : kKnobTable)
        rows += kit::knob_markdown_row(kit::knob_names_cell(knob.names), "fault layer", knob.values,
                                       knob.effect);
    return rows;
}

} // namespace ndk::fault
