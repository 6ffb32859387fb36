#include "soft_engine.hpp"

namespace ndk::soft {

Engine::Engine() : thread_([this] { run(); }) {}

Engine::~Engine()
{
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
        timers_.clear(); // nobody is left to be timed out
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

uint64_t Engine::post_after(std::chrono::microseconds delay, std::function<void()> task)
{
    uint64_t id = 0;
    {
        std::lock_guard lock(mu_);
        id = next_timer_++;
        timers_.emplace(Clock::now() + delay, std::make_pair(id, std::move(task)));
    }
    wake_.notify_one();
    return id;
}

void Engine::cancel(uint64_t timer)
{
    std::lock_guard lock(mu_);
    for (auto it = timers_.begin(); it != timers_.end(); ++it) {
        if (it->second.first == timer) {
            timers_.erase(it);
            return;
        }
    }
}

bool Engine::may_run() const
{
    return !tasks_.empty() && (!manual_ || draining_ > 0 || credits_ > 0);
}

void Engine::promote_due_timers(Clock::time_point now)
{
    while (!timers_.empty() && timers_.begin()->first <= now) {
        tasks_.push_back(std::move(timers_.begin()->second.second));
        timers_.erase(timers_.begin());
    }
}

void Engine::drain()
{
    std::unique_lock lock(mu_);
    ++draining_;
    wake_.notify_one();
    idle_.wait(lock, [this] { return tasks_.empty() && !busy_; });
    --draining_;
}

void Engine::set_manual(bool manual)
{
    {
        std::lock_guard lock(mu_);
        manual_ = manual;
    }
    wake_.notify_one();
}

unsigned Engine::step(unsigned steps)
{
    std::unique_lock lock(mu_);
    credits_ = steps;
    wake_.notify_one();
    idle_.wait(lock, [this] { return credits_ == 0 || (tasks_.empty() && !busy_); });
    unsigned ran = steps - credits_;
    credits_ = 0;
    return ran;
}

size_t Engine::queued()
{
    std::lock_guard lock(mu_);
    promote_due_timers(Clock::now());
    return tasks_.size();
}

bool Engine::idle()
{
    std::lock_guard lock(mu_);
    return tasks_.empty() && !busy_ && timers_.empty();
}

void Engine::run()
{
    std::unique_lock lock(mu_);
    for (;;) {
        promote_due_timers(Clock::now());
        if (stopping_ && tasks_.empty())
            return; // nothing left to deliver
        if (!may_run() && !stopping_) {
            if (timers_.empty())
                wake_.wait(lock);
            else {
                // A copy: a cancel() may erase the timer (and its key) while we wait.
                Clock::time_point due = timers_.begin()->first;
                wake_.wait_until(lock, due);
            }
            continue;
        }
        auto task = std::move(tasks_.front());
        tasks_.pop_front();
        busy_ = true;
        if (manual_ && draining_ == 0 && credits_ > 0)
            --credits_;
        lock.unlock();
        task();
        lock.lock();
        busy_ = false;
        if (tasks_.empty() || credits_ == 0)
            idle_.notify_all();
    }
}

} // namespace ndk::soft
