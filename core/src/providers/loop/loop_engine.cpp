#include "loop_engine.hpp"

namespace ndk::loop {

Engine::Engine() : thread_([this] { loop(); }) { id_ = thread_.get_id(); }

Engine::~Engine() { stop(); }

void Engine::post(std::function<void()> task)
{
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(task));
    wake_.notify_one();
}

void Engine::run(const std::function<void()> &task)
{
    if (std::this_thread::get_id() == id_) {
        task();
        return;
    }
    std::mutex done_mu;
    std::condition_variable done_cv;
    bool done = false;
    post([&] {
        task();
        std::lock_guard lock(done_mu);
        done = true;
        done_cv.notify_one();
    });
    std::unique_lock lock(done_mu);
    done_cv.wait(lock, [&] { return done; });
}

void Engine::stop()
{
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
        wake_.notify_one();
    }
    if (thread_.joinable() && std::this_thread::get_id() != id_)
        thread_.join();
}

void Engine::loop()
{
    std::unique_lock lock(mu_);
    for (;;) {
        wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty())
            return; // stopping, and nothing left to deliver
        std::function<void()> task = std::move(tasks_.front());
        tasks_.pop_front();
        lock.unlock();
        task();
        lock.lock();
    }
}

} // namespace ndk::loop
