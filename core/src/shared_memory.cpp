#include "ndk/shared_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace ndk {
namespace {

// The process's shared allocations by their base address.  A function-local static: the
// table exists before the first allocation of any static initialiser and outlives it.
struct Table {
    std::shared_mutex mu;
    std::map<std::uintptr_t, SharedRange> by_base;
};

Table &table()
{
    static Table *t = new Table; // never destroyed: a late free at exit still finds it
    return *t;
}

[[noreturn]] void fail(const char *what)
{
    throw std::system_error(errno, std::generic_category(), what);
}

} // namespace

SharedMemory::SharedMemory(std::size_t size) : requested_(size)
{
    if (size == 0)
        throw std::invalid_argument("SharedMemory: size 0");
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    if (size > SIZE_MAX - page)
        throw std::invalid_argument("SharedMemory: size too large");
    const std::size_t whole = (size + page - 1) / page * page;
    // The name shows in /proc/PID/maps ("/memfd:ndk-harness-alloc (deleted)").
    int fd = ::memfd_create("ndk-harness-alloc", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        fail("memfd_create");
    struct stat st {};
    if (::ftruncate(fd, static_cast<off_t>(whole)) != 0 ||
        ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
        ::fstat(fd, &st) != 0) {
        int error = errno;
        ::close(fd);
        errno = error;
        fail("shared memory setup");
    }
    void *base = ::mmap(nullptr, whole, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        int error = errno;
        ::close(fd);
        errno = error;
        fail("mmap");
    }
    range_ = {reinterpret_cast<std::uintptr_t>(base), whole, fd,
              static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
    std::unique_lock lock(table().mu);
    table().by_base.emplace(range_.base, range_);
}

SharedMemory::SharedMemory(SharedMemory &&other) noexcept
    : range_(std::exchange(other.range_, {})), requested_(std::exchange(other.requested_, 0))
{
}

SharedMemory::~SharedMemory()
{
    if (range_.fd < 0)
        return;
    {
        // Out of the table first: a lookup never names an allocation being unmapped.
        std::unique_lock lock(table().mu);
        table().by_base.erase(range_.base);
    }
    ::munmap(data(), range_.size);
    ::close(range_.fd);
}

std::optional<SharedRange> find_shared_memory(const void *address, std::size_t length)
{
    const auto first = reinterpret_cast<std::uintptr_t>(address);
    std::shared_lock lock(table().mu);
    auto it = table().by_base.upper_bound(first);
    if (it == table().by_base.begin())
        return std::nullopt;
    const SharedRange &range = std::prev(it)->second;
    const std::uintptr_t offset = first - range.base;
    if (offset > range.size || length > range.size - offset)
        return std::nullopt;
    return range;
}

std::size_t shared_memory_count()
{
    std::shared_lock lock(table().mu);
    return table().by_base.size();
}

} // namespace ndk
