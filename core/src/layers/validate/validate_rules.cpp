// The rule table: one row per contract rule the layer checks.  docs/validation.md is generated
// from it (`ndk rules --markdown`), and a test keeps the two equal.
#include "ndk/validation.hpp"

#include <algorithm>
#include <array>

namespace ndk::validate {

namespace {

constexpr Side P = Side::Provider;
constexpr Side C = Side::Consumer;
constexpr Severity E = Severity::Error;
constexpr Severity W = Severity::Warning;

constexpr std::array kRules{
    // Objects as the provider hands them out.
    Rule{"OBJECT-HEADER-VERSION", P, E, "1.0",
         "A new object's Header.Version is the version the adapter reported at open."},
    Rule{"OBJECT-HEADER-TYPE", P, E, "1.0",
         "A new object's Header.ObjectType is the type that was created."},
    Rule{"OBJECT-HEADER-RESERVED", P, E, "1.0",
         "A new object's Header.NdkReserved is zero, and the provider leaves it alone until the "
         "object is closed."},
    Rule{"OBJECT-DISPATCH", P, E, "1.0",
         "Dispatch is set, with every entry present, before the object is returned."},
    // The three ways a call completes.
    Rule{"CREATE-COMPLETION-INLINE", P, E, "1.0",
         "A create that returned anything but STATUS_PENDING never calls its completion."},
    Rule{"CREATE-COMPLETION-TWICE", P, E, "1.0",
         "A pending create calls its completion exactly once."},
    Rule{"CREATE-COMPLETION-MISSING", P, E, "1.0",
         "A create that returned STATUS_PENDING calls its completion (within "
         "validate_timeout_ms, and before the adapter's close returns)."},
    Rule{"CREATE-OUT-PARAM-PENDING", P, E, "1.0",
         "A create that returns STATUS_PENDING does not write its out-parameter."},
    Rule{"CREATE-OUT-PARAM-INLINE", P, E, "1.0",
         "A create that returns STATUS_SUCCESS has written the new object to its "
         "out-parameter (NDK_FN_CREATE_COMPLETION: a status other than STATUS_PENDING means "
         "the object is in the out-parameter and the completion is never called)."},
    Rule{"REQUEST-COMPLETION-INLINE", P, E, "1.0",
         "A request that returned anything but STATUS_PENDING never calls its completion."},
    Rule{"REQUEST-COMPLETION-TWICE", P, E, "1.0",
         "A pending request calls its completion exactly once."},
    Rule{"REQUEST-COMPLETION-MISSING", P, E, "1.0",
         "A request that returned STATUS_PENDING calls its completion (within "
         "validate_timeout_ms, and before the adapter's close returns)."},
    Rule{"STATUS-UNDOCUMENTED", P, W, "1.1-1.10",
         "A function returns (or completes with) a status its reference page documents; "
         "\"other\" codes are allowed, so this is a warning."},
    // Lifetime.
    Rule{"CALLBACK-AFTER-CLOSE", P, E, "3.1",
         "No callback on an object after its close completion, or after a close that returned "
         "STATUS_SUCCESS."},
    Rule{"CLOSE-ANTECEDENT-OPEN", P, E, "3.1",
         "An antecedent's close does not complete while a successor is still open."},
    // Completion queues.
    Rule{"CQ-NOTIFY-UNARMED", P, E, "3.2",
         "A CQ notification comes only after an arm."},
    Rule{"CQ-NOTIFY-TWICE", P, E, "3.2", "A CQ notification comes once per arm."},
    Rule{"CQ-CALLBACK-CONCURRENT", P, E, "3.2",
         "Notification callbacks on one CQ are serialized: a new one waits until the previous "
         "one returned."},
    Rule{"MODERATION-PENDING", P, E, "1.3",
         "NdkControlCqInterruptModeration never returns STATUS_PENDING."},
    Rule{"MODERATION-NOT-SUPPORTED", P, E, "1.3",
         "NdkControlCqInterruptModeration returns STATUS_NOT_SUPPORTED exactly when "
         "NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED is not set."},
    // Results.
    Rule{"RESULT-PROVIDER-ERROR-CODE", P, E, "2.3",
         "NDK_RESULT_EX.ProviderErrorCode is 0 when Status is STATUS_SUCCESS (NDKPI 2.1 and "
         "later; before 2.1 its offset is padding)."},
    Rule{"RESULT-INVALIDATE-TOKEN", P, E, "2.3",
         "A ReceiveAndInvalidate result carries the invalidated token in "
         "TypeSpecificCompletionOutput."},
    Rule{"WR-SILENT-COMPLETED", P, E, "2.5",
         "A request posted with NDK_OP_FLAG_SILENT_SUCCESS that succeeds produces no "
         "completion."},
    Rule{"WR-COMPLETION-ORDER", P, E, "4.2",
         "Requests complete in the order they were posted, per initiator queue, receive queue "
         "and SRQ."},
    Rule{"WR-COMPLETION-MISSING", P, E, "3.4",
         "A request that succeeded inline (and is not a silent success) completes through the "
         "CQ; judged when a later request of its queue completed and its QP is closed."},
    // The consumer's side.
    Rule{"OBJECT-CLOSED-CALL", C, E, "3.1",
         "No call on an object whose close was called, nor such an object passed as an "
         "argument (the call is not forwarded)."},
    Rule{"CQ-CONCURRENT-CALL", C, E, "3.2",
         "NdkGetCqResults, NdkGetCqResultsEx and NdkArmCq are never called concurrently on one "
         "CQ."},
    Rule{"CQ-RESULTS-EX-VERSION", C, E, "2.3",
         "NdkGetCqResultsEx is called only on an adapter opened at NDKPI 1.2 or later "
         "(NDK_RESULT_EX begins at 1.2)."},
    Rule{"CQ-RESIZE-UNSUPPORTED", C, E, "1.3",
         "NdkResizeCq is called only when NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED is set."},
    Rule{"POST-CONCURRENT", C, E, "3.3",
         "Posts to one queue (initiator queue, receive queue, SRQ) are never concurrent."},
    Rule{"POST-QUEUE-DEPTH", C, E, "3.3",
         "A queue never holds more requests than its depth (a request is outstanding until its "
         "completion, or a later one of its queue, was retrieved)."},
    Rule{"SGE-TOKEN", C, E, "2.4",
         "A non-inline SGE's MemoryRegionToken is a local token of a registered MR (or the "
         "privileged token) of the queue's PD."},
    Rule{"PRIVATE-DATA-NULL", C, E, "1.8",
         "A NULL pPrivateData comes with a zero length."},
    Rule{"CONNDATA-AFTER-ESTABLISH", C, E, "1.8",
         "NdkGetConnectionData is not called after NdkAccept (passive side) or "
         "NdkCompleteConnect (active side)."},
};

} // namespace

std::span<const Rule> rules() { return kRules; }

const Rule *find_rule(std::string_view id)
{
    auto it = std::find_if(kRules.begin(), kRules.end(),
                           [&](const Rule &rule) { return id == rule.id; });
    return it == kRules.end() ? nullptr : &*it;
}

const char *side_name(Side side) { return side == Side::Provider ? "provider" : "consumer"; }

const char *severity_name(Severity severity)
{
    return severity == Severity::Error ? "error" : "warning";
}

} // namespace ndk::validate
