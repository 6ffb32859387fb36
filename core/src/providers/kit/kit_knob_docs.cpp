#include "providers/kit/kit_knob_docs.hpp"

#include <sstream>

namespace ndk::kit {

std::vector<std::string> knob_names_of(const char *names)
{
    std::vector<std::string> all;
    std::istringstream words{std::string(names)};
    for (std::string word; words >> word;)
        all.push_back(word);
    return all;
}

std::string knob_names_cell(const char *names)
{
    std::string cell;
    for (const std::string &name : knob_names_of(names))
        cell += (cell.empty() ? "`" : ", `") + name + "`";
    return cell;
}

std::string knob_markdown_header() { return "| knob | acted by | values | effect |\n|---|---|---|---|\n"; }

std::string knob_markdown_row(const std::string &knobs, const char *acted_by, const char *values,
                              const char *effect)
{
    auto cell = [](std::string text) {
        for (size_t at = text.find('|'); at != std::string::npos; at = text.find('|', at + 2))
            text.replace(at, 1, "\\|");
        return text;
    };
    return "| " + knobs + " | " + acted_by + " | " + cell(values) + " | " + cell(effect) + " |\n";
}

} // namespace ndk::kit
