#include "providers/soft/shm/shm_registry.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace ndk::soft::shm {

namespace fs = std::filesystem;

namespace {

constexpr const char *kLockName = ".lock";
constexpr const char *kTempPrefix = ".tmp-";
constexpr const char *kFormat = "ndk-shm-endpoint 1";

[[noreturn]] void fail(int error, const std::string &what)
{
    throw std::system_error(error, std::generic_category(), what);
}

// Addresses become file names: only the characters of IPv4/IPv6 text (and an IPv6 zone), so
// no '/', no "..", and never a leading '.' (those names are the registry's own).
void check_address(const std::string &address)
{
    if (address.empty() || address.size() > 64 || address.front() == '.')
        throw std::invalid_argument("shm registry: bad address '" + address + "'");
    for (const char c : address) {
        const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                        (c >= 'A' && c <= 'Z') || c == '.' || c == ':' || c == '%' || c == '-' ||
                        c == '_';
        if (!ok)
            throw std::invalid_argument("shm registry: bad address '" + address + "'");
    }
}

// Abstract socket names are arbitrary bytes, but a line-based file must not hold a newline.
void check_socket_name(const std::string &name)
{
    if (name.empty() || name.find_first_of("\n\0", 0, 2) != std::string::npos)
        throw std::invalid_argument("shm registry: bad socket name");
}

std::string serialize(const EndpointEntry &entry)
{
    std::ostringstream out;
    out << kFormat << '\n'
        << "address " << entry.address << '\n'
        << "port " << entry.port << '\n'
        << "pid " << entry.owner.pid << '\n'
        << "start " << entry.owner.start_time << '\n'
        << "socket " << entry.socket_name << '\n';
    return out.str();
}

// Nothing for a missing, foreign or malformed file: all of them are "no valid entry".
std::optional<EndpointEntry> read_entry(const fs::path &path)
{
    std::ifstream file(path);
    std::string line;
    if (!file || !std::getline(file, line) || line != kFormat)
        return std::nullopt;
    EndpointEntry entry;
    int fields = 0;
    while (std::getline(file, line)) {
        const auto space = line.find(' ');
        if (space == std::string::npos)
            return std::nullopt;
        const std::string key = line.substr(0, space);
        const std::string value = line.substr(space + 1);
        try {
            if (key == "address")
                entry.address = value;
            else if (key == "port")
                entry.port = static_cast<std::uint16_t>(std::stoul(value));
            else if (key == "pid")
                entry.owner.pid = static_cast<pid_t>(std::stol(value));
            else if (key == "start")
                entry.owner.start_time = std::stoull(value);
            else if (key == "socket")
                entry.socket_name = value;
            else
                continue;
        } catch (const std::exception &) {
            return std::nullopt;
        }
        ++fields;
    }
    if (fields != 5)
        return std::nullopt;
    return entry;
}

// A temporary file's name says who wrote it, so a sweep can tell a dead writer's leftover
// from a live writer's file in progress.
std::string temp_name(const os::ProcessIdentity &self)
{
    static std::atomic<unsigned> serial{0};
    return std::string(kTempPrefix) + std::to_string(self.pid) + '-' +
           std::to_string(self.start_time) + '-' + std::to_string(serial.fetch_add(1));
}

bool temp_writer_running(const std::string &name)
{
    os::ProcessIdentity writer;
    if (std::sscanf(name.c_str() + std::char_traits<char>::length(kTempPrefix), "%d-%" SCNu64,
                    &writer.pid, &writer.start_time) != 2)
        return false;
    return os::is_running(writer);
}

// An existing directory must be ours, a real directory and closed to others: another user
// could otherwise plant entries that send our connects to their process.  False when it is
// not there (any more: a fabric's last user, or a sweep, removed it).
bool check_private_directory(const fs::path &directory)
{
    struct stat st {};
    if (::lstat(directory.c_str(), &st) != 0) {
        if (errno == ENOENT)
            return false;
        fail(errno, "stat of the shm registry " + directory.string());
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
        fail(EPERM, "the shm registry " + directory.string() +
                        " is not a private directory of this user");
    return true;
}

constexpr const char *kFabricPrefix = "fabric.";

} // namespace

EndpointRegistry::EndpointRegistry(fs::path directory) : directory_(std::move(directory))
{
    make_directory();
}

// A fabric's directory may be removed by another process at any moment while it holds no
// entry (its last user's close, or any adapter's sweep, remove_if_unused()): one found gone
// right after it was made, or found, is made again.
void EndpointRegistry::make_directory() const
{
    for (;;) {
        if (::mkdir(directory_.c_str(), 0700) != 0) {
            if (errno == ENOENT) {
                // The parent (the user's default directory, for a fabric) is missing: made
                // first.
                const fs::path parent = directory_.parent_path();
                if (::mkdir(parent.c_str(), 0700) != 0 && errno != EEXIST)
                    fail(errno, "creating " + parent.string());
                if (!check_private_directory(parent))
                    continue;
                if (::mkdir(directory_.c_str(), 0700) != 0 && errno != EEXIST)
                    fail(errno, "creating the shm registry " + directory_.string());
            } else if (errno != EEXIST) {
                fail(errno, "creating the shm registry " + directory_.string());
            }
        }
        if (check_private_directory(directory_))
            return;
    }
}

fs::path EndpointRegistry::default_directory()
{
    return fs::path("/dev/shm") / ("ndk-harness-" + std::to_string(::geteuid()));
}

fs::path EndpointRegistry::fabric_directory(const fs::path &base, const std::string &name)
{
    return base / (kFabricPrefix + name);
}

os::UniqueFd EndpointRegistry::lock() const
{
    const fs::path path = directory_ / kLockName;
    for (;;) {
        os::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
        if (!fd) {
            if (errno != ENOENT)
                fail(errno, "opening " + path.string());
            make_directory(); // removed by its last user meanwhile: ours again
            continue;
        }
        int rc;
        do
            rc = ::flock(fd.get(), LOCK_EX);
        while (rc != 0 && errno == EINTR);
        if (rc != 0)
            fail(errno, "flock of " + path.string());
        // The file locked must still be the directory's: remove_if_unused() unlinks it (with
        // the directory) while holding it, and whoever waited on that file holds nothing.
        struct stat held {}, named {};
        if (::fstat(fd.get(), &held) != 0)
            fail(errno, "fstat of " + path.string());
        if (::stat(path.c_str(), &named) == 0 && named.st_dev == held.st_dev &&
            named.st_ino == held.st_ino)
            return fd; // unlocked when closed
    }
}

fs::path EndpointRegistry::entry_path(const std::string &address, std::uint16_t port) const
{
    check_address(address);
    return directory_ / (address + '#' + std::to_string(port));
}

void EndpointRegistry::publish(const EndpointEntry &entry)
{
    const fs::path target = entry_path(entry.address, entry.port);
    const fs::path temp = directory_ / temp_name(os::self_identity());
    {
        os::UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
        if (!fd)
            fail(errno, "creating " + temp.string());
        const std::string text = serialize(entry);
        if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
            const int error = errno != 0 ? errno : EIO;
            ::unlink(temp.c_str());
            fail(error, "writing " + temp.string());
        }
    }
    // rename() swaps the name in one step: a reader sees the old entry or the whole new one.
    if (::rename(temp.c_str(), target.c_str()) != 0) {
        const int error = errno;
        ::unlink(temp.c_str());
        fail(error, "publishing " + target.string());
    }
}

AddResult EndpointRegistry::add(const EndpointEntry &entry, EndpointEntry *holder)
{
    const fs::path path = entry_path(entry.address, entry.port);
    check_socket_name(entry.socket_name);
    const os::UniqueFd held = lock();
    if (const auto existing = read_entry(path); existing && os::is_running(existing->owner)) {
        if (holder != nullptr)
            *holder = *existing;
        return AddResult::in_use;
    }
    publish(entry);
    return AddResult::added;
}

std::optional<EndpointEntry> EndpointRegistry::find(const std::string &address,
                                                    std::uint16_t port) const
{
    auto entry = read_entry(entry_path(address, port));
    if (!entry || !os::is_running(entry->owner))
        return std::nullopt;
    return entry;
}

bool EndpointRegistry::remove(const std::string &address, std::uint16_t port,
                              const os::ProcessIdentity &owner)
{
    const fs::path path = entry_path(address, port);
    // Not ours (or gone with the directory): nothing to lock for, and lock() would make the
    // directory again.
    if (const auto existing = read_entry(path); !existing || existing->owner != owner)
        return false;
    const os::UniqueFd held = lock();
    const auto existing = read_entry(path);
    if (!existing || existing->owner != owner)
        return false;
    return ::unlink(path.c_str()) == 0;
}

std::vector<EndpointEntry> EndpointRegistry::list() const
{
    std::vector<EndpointEntry> entries;
    std::error_code error; // a directory its last user removed lists nothing
    for (fs::directory_iterator it(directory_, error), end; !error && it != end;
         it.increment(error)) {
        if (it->path().filename().string().front() == '.')
            continue;
        if (auto entry = read_entry(it->path()); entry && os::is_running(entry->owner))
            entries.push_back(std::move(*entry));
    }
    return entries;
}

std::size_t EndpointRegistry::reclaim_stale()
{
    const os::UniqueFd held = lock();
    bool live = false;
    return reclaim_stale_locked(&live);
}

std::size_t EndpointRegistry::reclaim_stale_locked(bool *live)
{
    std::size_t reclaimed = 0;
    std::vector<fs::path> doomed;
    for (const auto &file : fs::directory_iterator(directory_)) {
        const std::string name = file.path().filename().string();
        if (name == kLockName)
            continue;
        if (name.rfind(kTempPrefix, 0) == 0) {
            if (!temp_writer_running(name))
                doomed.push_back(file.path());
            else
                *live = true;
            continue;
        }
        if (file.is_directory()) {
            *live = true; // a fabric inside the default directory: it has sweeps of its own
            continue;
        }
        const auto entry = read_entry(file.path());
        if (!entry || !os::is_running(entry->owner)) {
            doomed.push_back(file.path());
            ++reclaimed;
        } else {
            *live = true;
        }
    }
    for (const auto &path : doomed)
        ::unlink(path.c_str());
    return reclaimed;
}

bool EndpointRegistry::remove_if_unused()
{
    const os::UniqueFd held = lock();
    bool live = false;
    reclaim_stale_locked(&live);
    if (live)
        return false;
    // The lock file first, still held: a writer waiting on it finds it unlinked and starts
    // again (lock()); one that makes a new lock file meanwhile keeps the directory (ENOTEMPTY).
    ::unlink((directory_ / kLockName).c_str());
    return ::rmdir(directory_.c_str()) == 0;
}

std::size_t EndpointRegistry::reclaim_unused_fabrics(const fs::path &base)
{
    std::size_t removed = 0;
    std::error_code error;
    std::vector<fs::path> fabrics;
    for (fs::directory_iterator it(base, error), end; !error && it != end; it.increment(error))
        if (it->path().filename().string().rfind(kFabricPrefix, 0) == 0)
            fabrics.push_back(it->path());
    for (const auto &fabric : fabrics) {
        try {
            removed += EndpointRegistry(fabric).remove_if_unused();
        } catch (const std::exception &) {
            // Not ours to sweep (another user's, or not a private directory): left alone.
        }
    }
    return removed;
}

} // namespace ndk::soft::shm
