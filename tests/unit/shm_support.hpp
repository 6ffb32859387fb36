// Helpers of the shm transport's tests (test_shm_*.cpp): forked children that are killed and
// reaped whatever happens to the test, pipes for handshakes (a byte, or an EOF that releases
// every waiting child at once), and unique names, so no test leaves a process, a socket name
// or a file behind and none synchronizes by sleeping.
#pragma once

#include "providers/soft/os/peer_watch.hpp"
#include "providers/soft/shm/shm_handoff.hpp"
#include "providers/soft/shm/shm_ring.hpp"
#include "providers/soft/os/unique_fd.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <exception>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

namespace ndk::soft::shm::test_support {

// A child process running `body` (its return value is the exit code; an exception is 100).
// The child leaves with _exit: it must not run the parent's atexit handlers or gtest's.
class Child {
public:
    template <class Body>
    static Child spawn(Body &&body)
    {
        const pid_t pid = ::fork();
        if (pid < 0)
            throw std::runtime_error("fork failed");
        if (pid == 0) {
            int code = 100;
            try {
                code = body();
            } catch (...) {
            }
            ::_exit(code);
        }
        return Child(pid);
    }

    Child(Child &&other) noexcept : pid_(std::exchange(other.pid_, -1)) {}
    Child(const Child &) = delete;
    Child &operator=(const Child &) = delete;
    ~Child()
    {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            reap();
        }
    }

    pid_t pid() const { return pid_; }

    // Reap the child; its exit code, or 128 + the signal that killed it.
    int wait()
    {
        const int status = reap();
        if (WIFEXITED(status))
            return WEXITSTATUS(status);
        return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
    }

    void kill(int signal = SIGKILL) const { ::kill(pid_, signal); }

private:
    explicit Child(pid_t pid) : pid_(pid) {}

    int reap()
    {
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        pid_ = -1;
        return status;
    }

    pid_t pid_;
};

struct Pipe {
    os::UniqueFd read_end;
    os::UniqueFd write_end;

    Pipe()
    {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0)
            throw std::runtime_error("pipe2 failed");
        read_end.reset(fds[0]);
        write_end.reset(fds[1]);
    }

    void put(char c) const
    {
        if (::write(write_end.get(), &c, 1) != 1)
            throw std::runtime_error("pipe write failed");
    }

    // The next byte, or nothing (-1) at EOF: the writer closed its end or died.
    int get() const
    {
        char c;
        ssize_t n;
        do
            n = ::read(read_end.get(), &c, 1);
        while (n < 0 && errno == EINTR);
        return n == 1 ? static_cast<unsigned char>(c) : -1;
    }
};

// A watch on our own child: it cannot be reaped behind our back, so its pid is its own.
inline os::PeerWatch watch_child(const Child &child)
{
    const auto identity = os::identify(child.pid());
    auto watch = identity ? os::PeerWatch::open(*identity) : std::nullopt;
    if (!watch)
        throw std::runtime_error("child exited before it was watched");
    return std::move(*watch);
}

// The connection the watched child makes to `listener`; throws if the child exits without
// connecting, where a plain accept() would wait forever.
inline os::UniqueFd accept_while_alive(int listener, const os::PeerWatch &child)
{
    pollfd fds[2] = {{listener, POLLIN, 0}, {child.fd(), POLLIN, 0}};
    while (::poll(fds, 2, -1) < 0 && errno == EINTR) {
    }
    if ((fds[0].revents & POLLIN) == 0)
        throw std::runtime_error("child exited without connecting");
    return accept_connection(listener);
}

// Pop one message, or false once the ring is empty and its producer has exited: the
// transport's "connection error", never a hang.  After seeing the exit, one more look: the
// producer's last messages may have landed after the previous pop.
inline bool pop_while_alive(RingConsumer &ring, const os::PeerWatch &producer,
                            std::span<std::byte> out, std::size_t &length)
{
    for (;;) {
        const RingStatus status = ring.try_pop(out, length);
        if (status == RingStatus::ok)
            return true;
        if (status != RingStatus::empty)
            throw std::runtime_error("ring corrupt");
        if (producer.exited())
            return ring.try_pop(out, length) == RingStatus::ok;
        ::sched_yield();
    }
}

// A fixture with a fresh private registry directory, removed whatever the test's outcome.
class ShmRegistryDirTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        char templ[] = "/dev/shm/ndk-harness-test-XXXXXX";
        ASSERT_NE(::mkdtemp(templ), nullptr);
        dir_ = templ;
    }
    void TearDown() override
    {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
    }

    std::filesystem::path dir_;
};

// A name no other test process uses: this pid and a counter.
inline std::string unique_name(const char *what)
{
    static std::atomic<unsigned> serial{0};
    return std::string("ndk-harness-test/") + what + '/' + std::to_string(::getpid()) + '/' +
           std::to_string(serial.fetch_add(1));
}

} // namespace ndk::soft::shm::test_support
