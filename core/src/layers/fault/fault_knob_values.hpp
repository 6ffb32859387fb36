// The values of the fault layer's knobs that need more than a word (docs/knobs.md): the
// completion modes and `fail`, parsed and printed here for its knob table
// (fault_knob_table.cpp).
#pragma once

#include "ndk/ndkpi.h"

#include <optional>
#include <string>

namespace ndk::fault {

// create_mode, request_mode, close_mode.
enum class CompletionMode { Inline, Pending, Random };
std::optional<CompletionMode> parse_completion_mode(const std::string &text);
const char *completion_mode_name(CompletionMode mode);

// `fail`: "<NdkFunction> <status> [inline|async] [count]", count -1 meaning every call.
struct FailureSpec {
    std::string function;
    NTSTATUS status = STATUS_SUCCESS;
    bool async = false; // STATUS_PENDING, then the status through the completion
    int count = 1;
};
// "" and `spec` filled, or the reason the value is refused.
std::string parse_failure(const std::string &value, FailureSpec &spec);
// One armed failure as a `fail` read prints it ("NdkCreatePd STATUS_... async 1").
std::string failure_text(const std::string &function, NTSTATUS status, bool async, int remaining);

} // namespace ndk::fault
