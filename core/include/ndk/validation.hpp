// The validation layer's public face: its rule table and the violations one validated adapter
// recorded.  The layer itself (core/src/layers/validate) is an interposer between the consumer
// and any provider: it forwards every call and every callback the contract allows, and records
// each contract violation, by either side, with a rule ID and the digest section it comes from
// (docs/validation.md, generated from rules() by `ndk rules --markdown`).
#pragma once

#include "ndk/ndkpi.h"
#include "ndk/provider.h"

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ndk {
class Provider;
}

namespace ndk::validate {

// Who broke the rule.
enum class Side { Provider, Consumer };
// A Warning is a finding the contract tolerates ("other" status codes are allowed): reported,
// but never a failure on its own.
enum class Severity { Error, Warning };

struct Rule {
    const char *id;      // "CREATE-COMPLETION-INLINE"
    Side side;
    Severity severity;
    const char *section; // the digest section, "1.0"
    const char *summary; // one sentence: what the rule requires
};

// Every rule, in the order of docs/validation.md.
std::span<const Rule> rules();
// nullptr when there is no such rule.
const Rule *find_rule(std::string_view id);

const char *side_name(Side side);         // "provider" / "consumer"
const char *severity_name(Severity sev);  // "error" / "warning"

struct Violation {
    std::string rule;    // a Rule::id
    std::string object;  // the object it concerns, "CQ#3" ("adapter" for the adapter itself)
    std::string call;    // the NDK function or callback, "NdkArmCq", "NdkCqNotificationCallback"
    std::string message; // what happened, in words
    std::string section; // the rule's digest section
    Side side = Side::Provider;
    Severity severity = Severity::Error;
};

// What one validated miniport recorded.  Shared by the layer and the consumer's Adapter, so the
// record outlives the adapter's close.
class Session {
public:
    virtual ~Session() = default;
    // Every violation recorded so far, oldest first.  Also judges the calls still waiting for a
    // completion against the completion timeout (option validate_timeout_ms).
    virtual std::vector<Violation> violations() = 0;
    virtual void clear() = 0;
};

// Wrap `inner` in the validation layer: the result opens adapters whose every object is a
// validated stand-in for the provider's, over a miniport of `inner` created with the options
// that are not the layer's own validate_*.  Its name is the inner provider's.
std::shared_ptr<Provider> wrap(std::shared_ptr<Provider> inner);

// The session behind a miniport created by a wrapped provider; nullptr for any other.
std::shared_ptr<Session> session_of(const Provider &provider, NDIS_HANDLE miniport);

} // namespace ndk::validate
