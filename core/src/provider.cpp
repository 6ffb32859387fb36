// ndk::Provider (ndk/registry.hpp): a provider entry with its options, or a layer stacked over
// another Provider, and what a run sets for it.
#include "ndk/registry.hpp"

#include <algorithm>
#include <dlfcn.h>
#include <map>
#include <sstream>

namespace ndk {

namespace {

// "key=value" lines or ';'-separated pairs, the later of two keys winning.
std::map<std::string, std::string> parse_knobs(std::string text)
{
    std::replace(text.begin(), text.end(), ';', '\n');
    std::map<std::string, std::string> knobs;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
        if (size_t eq = line.find('='); eq != std::string::npos)
            knobs[line.substr(0, eq)] = line.substr(eq + 1);
    return knobs;
}

} // namespace

std::vector<std::string> Provider::run_scoped_knobs(const std::string &options) const
{
    if (beneath_)
        return beneath_->run_scoped_knobs(options);
    std::vector<std::string> knobs;
    if (builtin_ == nullptr)
        return knobs;
    std::map<std::string, std::string> given = parse_knobs(options_ + "\n" + options);
    for (const BuiltinProvider::RunScoped &scoped : builtin_->run_scoped) {
        auto when = given.find(scoped.when_knob);
        if (when != given.end() && when->second == scoped.when_value && !given.contains(scoped.knob))
            knobs.emplace_back(scoped.knob);
    }
    return knobs;
}

NDIS_STATUS Provider::create_miniport(const char *options, char *error, ULONG error_length,
                                      NDIS_HANDLE *miniport) const
{
    if (beneath_)
        return layer_create_(beneath_, options, error, error_length, miniport);
    if (options_.empty())
        return entry_->CreateMiniport(options, error, error_length, miniport);
    std::string all = options_ + (options ? options : "");
    return entry_->CreateMiniport(all.c_str(), error, error_length, miniport);
}

Provider::~Provider()
{
    if (library_ != nullptr)
        dlclose(library_);
}

} // namespace ndk
