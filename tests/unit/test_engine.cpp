// The soft provider's engine (core/src/providers/soft/soft_engine.{hpp,cpp}): one thread per
// adapter that runs every callback in order; drain() waits for tasks queued by tasks.
#include "providers/soft/soft_engine.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using ndk::soft::Engine;

TEST(Engine, RunsTasksInOrderOnOneThreadThatIsNotTheCaller)
{
    Engine engine;
    std::mutex mu;
    std::vector<int> order;
    std::set<std::thread::id> threads;
    bool all_on_engine = true;
    for (int i = 0; i < 500; ++i) {
        engine.post([&, i] {
            std::lock_guard lock(mu);
            order.push_back(i);
            threads.insert(std::this_thread::get_id());
            all_on_engine = all_on_engine && engine.on_engine_thread();
        });
    }
    engine.drain();
    std::lock_guard lock(mu);
    ASSERT_EQ(order.size(), 500u);
    for (int i = 0; i < 500; ++i)
        EXPECT_EQ(order[i], i);
    EXPECT_EQ(threads.size(), 1u);
    EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
    EXPECT_TRUE(all_on_engine);
    EXPECT_FALSE(engine.on_engine_thread());
}

TEST(Engine, DrainWaitsForTasksQueuedByTasks)
{
    Engine engine;
    engine.drain(); // an idle engine: returns at once
    std::atomic<int> ran{0};
    // Each task queues the next one: 100 generations, none queued by the test itself.
    std::function<void(int)> step = [&](int left) {
        ++ran;
        if (left > 0)
            engine.post([&step, left] { step(left - 1); });
    };
    engine.post([&step] { step(99); });
    engine.drain();
    EXPECT_EQ(ran.load(), 100);
}

TEST(Engine, TaskPostedByATaskRunsAfterItReturns)
{
    Engine engine;
    std::mutex mu;
    std::vector<std::string> log;
    auto add = [&](const char *entry) {
        std::lock_guard lock(mu);
        log.emplace_back(entry);
    };
    // Hold the engine until both tasks are queued, so "outer" cannot run before "second" is
    // posted: then "inner", posted by "outer", must come after "second".
    std::promise<void> release;
    std::shared_future<void> gate = release.get_future().share();
    engine.post([gate] { gate.wait(); });
    engine.post([&] {
        engine.post([&] { add("inner"); });
        add("outer:end");
    });
    engine.post([&] { add("second"); });
    release.set_value();
    engine.drain();
    std::lock_guard lock(mu);
    EXPECT_EQ(log, (std::vector<std::string>{"outer:end", "second", "inner"}));
}

TEST(Engine, ConcurrentPostersKeepTheirOwnOrder)
{
    Engine engine;
    constexpr int kThreads = 4, kEach = 250;
    std::mutex mu;
    std::vector<std::vector<int>> seen(kThreads);
    std::vector<std::thread> posters;
    for (int t = 0; t < kThreads; ++t) {
        posters.emplace_back([&, t] {
            for (int i = 0; i < kEach; ++i)
                engine.post([&, t, i] {
                    std::lock_guard lock(mu);
                    seen[t].push_back(i);
                });
        });
    }
    for (auto &poster : posters)
        poster.join();
    engine.drain();
    std::lock_guard lock(mu);
    for (int t = 0; t < kThreads; ++t) {
        ASSERT_EQ(seen[t].size(), static_cast<size_t>(kEach)) << t;
        for (int i = 0; i < kEach; ++i)
            EXPECT_EQ(seen[t][i], i) << t;
    }
}

TEST(Engine, DestructionDeliversEverythingQueued)
{
    auto ran = std::make_shared<std::atomic<int>>(0);
    std::mutex mu;
    std::condition_variable cv;
    bool release = false;
    std::thread opener;
    {
        Engine engine;
        // Hold the engine so the rest is (very likely) still queued when destruction starts;
        // the gate opens from another thread while ~Engine waits.
        engine.post([&] {
            std::unique_lock lock(mu);
            cv.wait(lock, [&] { return release; });
        });
        for (int i = 0; i < 50; ++i)
            engine.post([ran] { ++*ran; });
        opener = std::thread([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            std::lock_guard lock(mu);
            release = true;
            cv.notify_all();
        });
    } // ~Engine
    opener.join();
    EXPECT_EQ(ran->load(), 50);
}

// Manual progress: nothing runs until stepped; step(n) runs at most n and reports how many.
TEST(EngineManual, StepRunsExactlyTheRequestedTasks)
{
    Engine engine;
    engine.set_manual(true);
    std::atomic<int> ran{0};
    for (int i = 0; i < 5; ++i)
        engine.post([&] { ++ran; });
    EXPECT_EQ(engine.queued(), 5u);
    EXPECT_EQ(ran.load(), 0);
    EXPECT_EQ(engine.step(2), 2u);
    EXPECT_EQ(ran.load(), 2);
    EXPECT_EQ(engine.queued(), 3u);
    EXPECT_EQ(engine.step(10), 3u) << "fewer ran: the queue emptied";
    EXPECT_EQ(ran.load(), 5);
    EXPECT_EQ(engine.step(1), 0u);
}

// drain() steps through manual progress: an adapter close must never hang on it.
TEST(EngineManual, DrainRunsEverythingEvenWhenManual)
{
    Engine engine;
    engine.set_manual(true);
    std::atomic<int> ran{0};
    engine.post([&] {
        ++ran;
        engine.post([&] { ++ran; }); // queued by a task: drained too
    });
    engine.drain();
    EXPECT_EQ(ran.load(), 2);
}

// A timer becomes a task when due; a cancelled timer never runs.
TEST(EngineTimers, DueTimerRunsAndCancelledTimerDoesNot)
{
    Engine engine;
    std::promise<void> fired;
    std::atomic<bool> cancelled_ran{false};
    uint64_t cancelled =
        engine.post_after(std::chrono::milliseconds(1), [&] { cancelled_ran = true; });
    engine.cancel(cancelled);
    engine.post_after(std::chrono::milliseconds(2), [&] { fired.set_value(); });
    ASSERT_EQ(fired.get_future().wait_for(std::chrono::seconds(5)), std::future_status::ready);
    engine.drain();
    EXPECT_FALSE(cancelled_ran.load());
}

// Under manual progress a due timer waits for a step like any other task.
TEST(EngineTimers, DueTimerIsSteppedUnderManualProgress)
{
    Engine engine;
    engine.set_manual(true);
    std::atomic<int> ran{0};
    engine.post_after(std::chrono::microseconds(1), [&] { ++ran; });
    while (engine.queued() == 0) // due, promoted to the queue, not run
        std::this_thread::yield();
    EXPECT_EQ(ran.load(), 0);
    EXPECT_EQ(engine.step(1), 1u);
    EXPECT_EQ(ran.load(), 1);
}

} // namespace
