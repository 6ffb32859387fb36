// The text of knobs (docs/knobs.md): the one rule for a knob given at open and at run time
// (Adapter::set_knob), and the options' lines made of (key, value) pairs.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ndk {

using KnobList = std::vector<std::pair<std::string, std::string>>;

// Why `key`=`value` cannot be a knob setting, "" when it can: a value is one line of text
// without a control character (a newline would start another knob among the options' lines,
// a NUL would cut the value short) and without ';' (the options' other separator); a key has
// none of those nor '='.
std::string knob_problem(const std::string &key, const std::string &value);

// The options' "key=value" lines for Adapter::open; ndk::Error STATUS_INVALID_PARAMETER
// with knob_problem's reason when a pair is refused.
std::string options_text(const KnobList &knobs);

} // namespace ndk
