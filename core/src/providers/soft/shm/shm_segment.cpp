#include "providers/soft/shm/shm_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>
#include <utility>

namespace ndk::soft::shm {

namespace {

// What both sides rely on: the size never changes, and no more seals can be added (a seal
// against writes added by the peer would fault our stores).
constexpr int kRequiredSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

[[noreturn]] void fail(int error, const char *what)
{
    throw std::system_error(error, std::generic_category(), what);
}

std::size_t round_to_pages(std::size_t size)
{
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    return (size + page - 1) / page * page;
}

std::byte *map_shared(int fd, std::size_t size)
{
    void *base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
        fail(errno, "mmap of a shm segment");
    return static_cast<std::byte *>(base);
}

} // namespace

ShmSegment ShmSegment::create(const std::string &debug_name, std::size_t size)
{
    if (size == 0)
        fail(EINVAL, "shm segment of size 0");
    size = round_to_pages(size);
    // CLOEXEC: a child the consumer execs must not inherit its connections' memory.
    os::UniqueFd fd(::memfd_create(debug_name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (!fd)
        fail(errno, "memfd_create");
    if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0)
        fail(errno, "ftruncate of a shm segment");
    if (::fcntl(fd.get(), F_ADD_SEALS, kRequiredSeals) != 0)
        fail(errno, "sealing a shm segment");
    std::byte *base = map_shared(fd.get(), size);
    return ShmSegment(std::move(fd), base, size);
}

ShmSegment ShmSegment::adopt(os::UniqueFd fd)
{
    const int seals = ::fcntl(fd.get(), F_GET_SEALS);
    if (seals < 0 || (seals & kRequiredSeals) != kRequiredSeals)
        fail(EINVAL, "adopting a shm segment that is not sealed");
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        fail(errno, "fstat of a shm segment");
    if (st.st_size <= 0)
        fail(EINVAL, "adopting an empty shm segment");
    const auto size = static_cast<std::size_t>(st.st_size);
    std::byte *base = map_shared(fd.get(), size);
    return ShmSegment(std::move(fd), base, size);
}

ShmSegment::ShmSegment(os::UniqueFd fd, std::byte *base, std::size_t size)
    : fd_(std::move(fd)), base_(base), size_(size)
{
}

ShmSegment::ShmSegment(ShmSegment &&other) noexcept
    : fd_(std::move(other.fd_)), base_(std::exchange(other.base_, nullptr)),
      size_(std::exchange(other.size_, 0))
{
}

ShmSegment &ShmSegment::operator=(ShmSegment &&other) noexcept
{
    if (this != &other) {
        unmap();
        fd_ = std::move(other.fd_);
        base_ = std::exchange(other.base_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

ShmSegment::~ShmSegment() { unmap(); }

std::string ShmSegment::file_id() const
{
    struct stat st {};
    if (::fstat(fd_.get(), &st) != 0)
        return {};
    return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

void ShmSegment::unmap()
{
    if (base_ != nullptr)
        ::munmap(base_, size_);
    base_ = nullptr;
    size_ = 0;
}

} // namespace ndk::soft::shm
