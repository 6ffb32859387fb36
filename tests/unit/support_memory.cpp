// The memory the unit tests' MDLs describe (support.hpp: test_memory, Mapping).
#include "support.hpp"

#include <sys/mman.h>

#include <system_error>

namespace ndktest {

namespace {

void *map_anonymous(size_t size, int prot)
{
    void *base = ::mmap(nullptr, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED)
        throw std::system_error(errno, std::generic_category(), "mmap");
    return base;
}

} // namespace

uintptr_t test_memory()
{
    static void *const base = map_anonymous(size_t{16} << 20, PROT_READ | PROT_WRITE);
    return reinterpret_cast<uintptr_t>(base);
}

Mapping::Mapping(size_t pages, int prot)
    : base_(map_anonymous(pages * NDK_PAGE_SIZE, prot)), size_(pages * NDK_PAGE_SIZE)
{
}

Mapping::~Mapping() { ::munmap(base_, size_); }

} // namespace ndktest
