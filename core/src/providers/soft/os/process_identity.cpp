#include "providers/soft/os/process_identity.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>

namespace ndk::soft::os {

std::optional<ProcessIdentity> identify(pid_t pid)
{
    if (pid <= 0)
        return std::nullopt;
    std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
    if (!file)
        return std::nullopt;
    const std::string stat((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    // Field 2 is the command name in parentheses and may itself hold spaces and ')': the
    // fields after it start after the *last* ')'.
    const auto close = stat.rfind(')');
    if (close == std::string::npos)
        return std::nullopt;
    std::istringstream fields(stat.substr(close + 1));
    std::string state;
    fields >> state; // field 3
    if (state == "Z" || state == "X" || state == "x")
        return std::nullopt;
    std::string skipped;
    for (int field = 4; field < 22; ++field)
        fields >> skipped;
    std::uint64_t start_time = 0;
    if (!(fields >> start_time))
        return std::nullopt;
    return ProcessIdentity{pid, start_time};
}

ProcessIdentity self_identity()
{
    const auto self = identify(::getpid());
    if (!self)
        throw std::runtime_error("cannot read /proc/self/stat");
    return *self;
}

bool is_running(const ProcessIdentity &who)
{
    const auto now = identify(who.pid);
    return now && *now == who;
}

} // namespace ndk::soft::os
