#include "kit_mapped_memory.hpp"

#include <cinttypes>
#include <cstdio>
#include <memory>

namespace ndk::kit {

bool range_mapped_for(uintptr_t start, size_t length, MappedAccess access)
{
    if (length > UINTPTR_MAX - start)
        return false;
    const uintptr_t end = start + length;
    std::unique_ptr<FILE, int (*)(FILE *)> maps(std::fopen("/proc/self/maps", "re"), &std::fclose);
    if (!maps)
        return false;
    // The kernel lists the mappings in address order: walk them, moving `covered` up to each
    // mapping's end while the mappings touch and allow the access.
    uintptr_t covered = start;
    char line[512];
    while (covered < end && std::fgets(line, sizeof line, maps.get()) != nullptr) {
        uintptr_t from = 0, to = 0;
        char perms[5] = {};
        if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s", &from, &to, perms) != 3)
            continue; // the rest of an over-long line (a path), not a mapping
        if (to <= covered)
            continue;
        if (from > covered)
            return false; // a hole in the range
        if (perms[0] != 'r' || (access == MappedAccess::ReadWrite && perms[1] != 'w'))
            return false;
        covered = to;
    }
    return covered >= end;
}

NTSTATUS check_mapped(uintptr_t start, size_t length, bool write)
{
    return range_mapped_for(start, length, write ? MappedAccess::ReadWrite : MappedAccess::Read)
               ? STATUS_SUCCESS
               : STATUS_ACCESS_VIOLATION;
}

} // namespace ndk::kit
