// Knobs of the soft RNIC: how it completes calls (inline / pending / random, seeded), which
// calls it fails and how, what NDK_ADAPTER_INFO it reports, and how many objects it allows.
// Knobs are set as text key/value pairs, at miniport creation and at run time through the
// harness control entry (see core/include/ndk/provider.h), so any front end can drive them.
// A knob never makes the provider break the contract (digest 1.0): a forced failure returns a
// status the function may return, a pending mode still calls the completion exactly once.
// The one exception is `misbehave` (soft_misbehave.hpp), which exists to break it on purpose.
#pragma once

#include "providers/kit/kit_test_knobs.hpp"

#include "ndk/ndkpi.h"
#include "soft_misbehave.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <string_view>
#include <string>
#include <vector>
#include <utility>

namespace ndk::soft {

using CompletionMode = kit::CompletionMode;

// Which knob governs a call's completion mode.
enum class CallKind { Create, Request, Close };

struct InjectedFailure {
    NTSTATUS status;
    bool async; // complete with PENDING and then report the status through the completion
};

struct ObjectCaps { // NDIS_NDK_CAPABILITIES counts; 0 means no cap
    ULONG max_qp = 0, max_cq = 0, max_mr = 0, max_pd = 0, max_mw = 0, max_srq = 0;
};

struct ArmedFailure {
    InjectedFailure failure;
    int remaining; // < 0: every call
};

// What the knobs hold: set() writes it, the provider reads it through Knobs (under its lock,
// except `misbehave`, which the data path reads lock-free).
struct KnobValues {
    CompletionMode create_mode = CompletionMode::Inline;
    CompletionMode request_mode = CompletionMode::Inline;
    CompletionMode close_mode = CompletionMode::Inline;
    uint64_t seed = 0;
    std::mt19937_64 rng{0};
    std::map<std::string, ArmedFailure, std::less<>> failures;
    NDK_ADAPTER_INFO info{};
    ObjectCaps caps{};
    std::optional<NDK_VERSION> provider_version; // restricts to one major when set
    bool adapter_not_ready = false;
    std::pair<uint16_t, uint16_t> ephemeral{49152, 65535};
    std::string addresses;
    bool manual_progress = false;
    uint32_t rnr_timeout_ms = 100;
    uint32_t connect_timeout_ms = 10000;
    // sge_check=completion: too many SGEs in an initiator request is found when it executes
    // (docs/semantics.md ND-LOCAL-LENGTH); read on the data path, so lock-free.
    std::atomic<bool> sge_check_at_completion{false};
    std::atomic<Misbehave> misbehave{Misbehave::None};
};

// One row of the knob table (soft_knob_table.cpp): the knobs it covers, what docs/knobs.md
// says of them, and how a value is parsed and printed.  The table is the one place a knob is
// defined: set(), get(), the `knobs` listing and docs/knobs.md's table all come from it.
using KnobSet = std::string (*)(KnobValues &, std::string_view name, const std::string &value);
using KnobGet = std::string (*)(const KnobValues &, std::string_view name);
struct KnobSpec {
    const char *names;  // the knob names, space-separated; "" for the NDK_ADAPTER_INFO fields
    const char *title;  // docs/knobs.md's first column when it is not the names
    const char *values; // what a value is
    const char *effect; // what it does
    KnobSet set;        // returns "" or why the value is refused; nullptr: not set here
    KnobGet get;        // nullptr: not read here (write only, or the provider entry's knob)
};
std::span<const KnobSpec> knob_table();
// Whether `spec` is the row of knob `name`.
bool covers(const KnobSpec &spec, std::string_view name);
// Every knob name, in the table's order (the `knobs` knob).
std::vector<std::string> knob_names();
// The table as the markdown table of docs/knobs.md.
std::string knob_table_markdown();
NDK_ADAPTER_INFO default_adapter_info();

class Knobs {
public:
    Knobs();

    // Set one knob from text.  Returns STATUS_SUCCESS, STATUS_NOT_SUPPORTED for an unknown key,
    // or STATUS_INVALID_PARAMETER with `error` explaining the bad value.
    NTSTATUS set(const std::string &key, const std::string &value, std::string &error);
    // Read one knob as text; STATUS_NOT_SUPPORTED for an unknown key.
    NTSTATUS get(const std::string &key, std::string &value) const;
    // Apply "key=value" lines (or ';'-separated pairs).
    NTSTATUS apply(const std::string &options, std::string &error);

    // True when this call should return STATUS_PENDING and complete later.
    bool should_pend(CallKind kind);
    // Take one injected failure for an NDK function, if any is armed.
    std::optional<InjectedFailure> take_failure(const char *function);

    NDK_ADAPTER_INFO adapter_info(NDK_VERSION reported) const;
    ObjectCaps caps() const;
    // The provider's highest minor version for a major version; nullopt if the major is unknown.
    std::optional<USHORT> highest_minor(USHORT major) const;
    bool adapter_not_ready() const;
    std::pair<uint16_t, uint16_t> ephemeral_ports() const;
    std::string addresses() const;
    // progress=manual: the engine runs only when stepped (docs/knobs.md, "Progress").
    bool manual_progress() const;
    // How long a send waits for a receive at the peer before it fails (receiver not ready).
    std::chrono::milliseconds rnr_timeout() const;
    // How long connection establishment waits for the peer's Accept / CompleteConnect.
    std::chrono::milliseconds connect_timeout() const;
    // Whether an initiator request with more SGEs than the QP allows is posted and completed
    // STATUS_DATA_OVERRUN (knob sge_check=completion) rather than refused inline.
    bool sge_check_at_completion() const
    {
        return v_.sge_check_at_completion.load(std::memory_order_relaxed);
    }
    // The contract rule the provider breaks on purpose; read on the data path, so lock-free.
    Misbehave misbehave() const { return v_.misbehave.load(std::memory_order_relaxed); }

private:
    bool decide(CompletionMode mode);

    mutable std::mutex mu_;
    KnobValues v_;
};

// NDK function names that return an NTSTATUS and so can be failed by the `fail` knob.
bool is_fallible_function(const std::string &name);

} // namespace ndk::soft
