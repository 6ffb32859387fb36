#include "layers/fault/fault_knob_values.hpp"

#include "ndk/status.hpp"
#include "providers/kit/kit_functions.hpp"

#include <charconv>
#include <sstream>
#include <vector>

namespace ndk::fault {

std::optional<CompletionMode> parse_completion_mode(const std::string &text)
{
    if (text == "inline")
        return CompletionMode::Inline;
    if (text == "pending")
        return CompletionMode::Pending;
    if (text == "random")
        return CompletionMode::Random;
    return std::nullopt;
}

const char *completion_mode_name(CompletionMode mode)
{
    switch (mode) {
    case CompletionMode::Inline: return "inline";
    case CompletionMode::Pending: return "pending";
    case CompletionMode::Random: return "random";
    }
    return "?";
}

std::string parse_failure(const std::string &value, FailureSpec &spec)
{
    std::istringstream in(value);
    std::vector<std::string> words;
    for (std::string word; in >> word;)
        words.push_back(word);
    if (words.size() < 2 || words.size() > 4)
        return "expected '<NdkFunction> <status> [inline|async] [count]'";
    const kit::NdkFunction *row = kit::find_function(words[0]);
    if (row == nullptr || !row->injectable)
        return "'" + words[0] + "' is not an NDK function that returns a status";
    auto status = parse_status(words[1]);
    if (!status)
        return "unknown status '" + words[1] + "'";
    if (*status == STATUS_SUCCESS || *status == STATUS_PENDING)
        return "a failure status must not be SUCCESS or PENDING";
    bool async = words.size() > 2 && words[2] == "async";
    if (words.size() > 2 && words[2] != "async" && words[2] != "inline")
        return "mode must be inline or async";
    if (async && row->returns == kit::Returns::Inline)
        return words[0] + " completes inline only, it cannot fail asynchronously";
    long count = 1;
    if (words.size() > 3) {
        const std::string &text = words[3];
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
        if (ec != std::errc() || end != text.data() + text.size() || count == 0 || count < -1)
            return "count must be a positive integer or -1 (every call)";
    }
    spec = FailureSpec{words[0], *status, async, static_cast<int>(count)};
    return "";
}

std::string failure_text(const std::string &function, NTSTATUS status, bool async, int remaining)
{
    return function + " " + status_name(status) + " " + (async ? "async" : "inline") + " " +
           std::to_string(remaining) + "\n";
}

} // namespace ndk::fault
