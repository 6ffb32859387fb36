#include "soft_engine.hpp"

namespace ndk::soft {

Engine::Engine() : thread_([this] { run(); }) {}

Engine::~Engine()
{
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void Engine::post(std::function<void()> task)
{
    {
        std::lock_guard lock(mu_);
        tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
}

void Engine::drain()
{
    std::unique_lock lock(mu_);
    idle_.wait(lock, [this] { return tasks_.empty() && !busy_; });
}

void Engine::run()
{
    std::unique_lock lock(mu_);
    for (;;) {
        wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) // stopping, and nothing left to deliver
            return;
        auto task = std::move(tasks_.front());
        tasks_.pop_front();
        busy_ = true;
        lock.unlock();
        task();
        lock.lock();
        busy_ = false;
        if (tasks_.empty())
            idle_.notify_all();
    }
}

} // namespace ndk::soft
