// docs/knobs.md's knob table, as the knob tables of a provider and of the fault layer write
// their rows: one spelling of a row, so the tables of both read as one.
#pragma once

#include <string>
#include <vector>

namespace ndk::kit {

// "knob a b c" -> {"knob", "a", "b", "c"}: a row's space-separated knob names.
std::vector<std::string> knob_names_of(const char *names);
// The first cell of a row: its names, each in backquotes ("`hold`, `release`, `held`").
std::string knob_names_cell(const char *names);
// "| knob | acted by | values | effect |" and the line under it.
std::string knob_markdown_header();
// One row; a '|' in the text is escaped.
std::string knob_markdown_row(const std::string &knobs, const char *acted_by, const char *values,
                              const char *effect);

} // namespace ndk::kit
