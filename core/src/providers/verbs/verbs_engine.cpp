#include "verbs_engine.hpp"

#include <cerrno>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace ndk::verbs {

Engine::Engine() : wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

Engine::~Engine()
{
    if (thread_.joinable())
        stop();
    if (wake_fd_ >= 0)
        close(wake_fd_);
}

void Engine::watch(int fd, std::function<void()> on_readable)
{
    watches_.push_back({fd, std::move(on_readable)});
}

void Engine::start() { thread_ = std::thread([this] { loop(); }); }

void Engine::stop()
{
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    wake();
    if (thread_.joinable())
        thread_.join();
}

void Engine::wake()
{
    uint64_t one = 1;
    while (write(wake_fd_, &one, sizeof one) < 0 && errno == EINTR) {
    }
}

void Engine::post(std::function<void()> task)
{
    {
        std::lock_guard lock(mu_);
        tasks_.push_back(std::move(task));
    }
    wake();
}

void Engine::run(const std::function<void()> &task)
{
    if (on_engine() || !thread_.joinable()) {
        task();
        return;
    }
    std::mutex mu;
    std::condition_variable cv;
    bool finished = false;
    post([&] {
        task();
        std::lock_guard lock(mu);
        finished = true;
        cv.notify_one();
    });
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return finished; });
}

void Engine::loop()
{
    std::vector<pollfd> fds;
    fds.push_back({wake_fd_, POLLIN, 0});
    for (const Watch &w : watches_)
        fds.push_back({w.fd, POLLIN, 0});
    for (;;) {
        // Tasks first: they are what the consumer asked for; then the devices' events.
        for (;;) {
            std::function<void()> task;
            {
                std::lock_guard lock(mu_);
                if (tasks_.empty()) {
                    if (stopping_)
                        return;
                    break;
                }
                task = std::move(tasks_.front());
                tasks_.pop_front();
            }
            task();
        }
        for (pollfd &p : fds)
            p.revents = 0;
        if (poll(fds.data(), fds.size(), -1) < 0)
            continue; // EINTR
        if (fds[0].revents & POLLIN) {
            uint64_t count;
            while (read(wake_fd_, &count, sizeof count) > 0) {
            }
        }
        for (size_t i = 1; i < fds.size(); ++i)
            if (fds[i].revents & (POLLIN | POLLERR | POLLHUP))
                watches_[i - 1].on_readable();
    }
}

} // namespace ndk::verbs
