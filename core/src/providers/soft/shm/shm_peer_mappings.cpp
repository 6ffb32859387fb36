#include "providers/soft/shm/shm_peer_mappings.hpp"

#include "providers/soft/os/unique_fd.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>

namespace ndk::soft::shm {
namespace {

std::string fd_path(pid_t peer, std::int32_t fd)
{
    return "/proc/" + std::to_string(peer) + "/fd/" + std::to_string(fd);
}

bool same_file(const struct stat &st, std::uint64_t device, std::uint64_t inode)
{
    return static_cast<std::uint64_t>(st.st_dev) == device &&
           static_cast<std::uint64_t>(st.st_ino) == inode;
}

} // namespace

PeerMapping::~PeerMapping() { ::munmap(base_, size_); }

std::shared_ptr<const PeerMapping> PeerMappings::open(pid_t peer, const WireRegion &region)
{
    os::UniqueFd fd(::open(fd_path(peer, region.fd).c_str(), O_RDWR | O_CLOEXEC));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0 || !same_file(st, region.device, region.inode) ||
        !S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) < region.size ||
        region.size > SIZE_MAX)
        return nullptr;
    const int seals = ::fcntl(fd.get(), F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK))
        return nullptr;
    const auto size = static_cast<std::size_t>(region.size);
    void *base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (base == MAP_FAILED)
        return nullptr;
    // The mapping holds the file; the descriptor goes now.
    return std::make_shared<const PeerMapping>(static_cast<std::byte *>(base), size);
}

void PeerMappings::sweep(pid_t peer)
{
    std::erase_if(entries_, [peer](const Entry &e) {
        struct stat st {};
        return ::stat(fd_path(peer, e.fd).c_str(), &st) != 0 ||
               !same_file(st, e.device, e.inode);
    });
}

std::shared_ptr<const PeerMapping> PeerMappings::map(pid_t peer, const WireRegion &region)
{
    std::lock_guard lock(mu_);
    ++uses_;
    for (Entry &e : entries_) {
        if (e.fd == region.fd && e.device == region.device && e.inode == region.inode &&
            e.size >= region.size) {
            e.last_use = uses_;
            return e.mapping;
        }
    }
    sweep(peer);
    if (entries_.size() >= kMaxMappings)
        entries_.erase(std::min_element(entries_.begin(), entries_.end(),
                                        [](const Entry &a, const Entry &b) {
                                            return a.last_use < b.last_use;
                                        }));
    std::shared_ptr<const PeerMapping> mapping = open(peer, region);
    entries_.push_back({region.fd, region.device, region.inode, region.size, mapping, uses_});
    return mapping;
}

std::size_t PeerMappings::mapped() const
{
    std::lock_guard lock(mu_);
    return static_cast<std::size_t>(
        std::count_if(entries_.begin(), entries_.end(), [](const Entry &e) { return e.mapping; }));
}

void PeerMappings::clear()
{
    std::lock_guard lock(mu_);
    entries_.clear();
}

} // namespace ndk::soft::shm
