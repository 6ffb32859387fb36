// ndk::Call (core/include/ndk/call.hpp, core/src/consumer/call.cpp): what a call record says
// for an inline return and for a pending call, waiting with a time-out, completion actions,
// and the records the consumer API returns for real provider calls.
#include "support.hpp"

#include "ndk/objects.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace {

using namespace std::chrono_literals;
using Seconds = ndk::Call::Seconds;

TEST(Call, DefaultCallIsNotValid)
{
    ndk::Call call;
    EXPECT_FALSE(call.valid());
    EXPECT_TRUE(ndk::Call::begin().valid());
}

TEST(Call, InlineResultIsDoneAtOnce)
{
    ndk::Call call = ndk::Call::inline_result(STATUS_INVALID_PARAMETER);
    EXPECT_TRUE(call.done());
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, call.status());
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, call.result());
    EXPECT_EQ(call.completions(), 0);
    EXPECT_FALSE(call.completion_status());
    EXPECT_TRUE(call.wait(Seconds(0)));
    EXPECT_EQ(call.object(), nullptr);
    NTSTATUS seen = ndktest::kNoStatus;
    call.on_complete([&](NTSTATUS s) { seen = s; }); // already done: runs now
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, seen);
}

// An inline return through returned(): the context is released there (ASan checks it), no
// completion is expected, and a waiting action runs before the call is done.
TEST(Call, ReturnedInlineRunsTheActionAndReleasesTheContext)
{
    auto adapter = ndk::Adapter::open("soft", ""); // the calls' owner (Call::context)
    ndk::Call call = ndk::Call::begin();
    int runs = 0;
    call.on_complete([&](NTSTATUS s) {
        ++runs;
        EXPECT_STATUS(STATUS_SUCCESS, s);
    });
    void *context = call.context(*adapter);
    call.returned(STATUS_SUCCESS, context);
    EXPECT_TRUE(call.done());
    EXPECT_EQ(runs, 1);
    EXPECT_EQ(call.completions(), 0);
    EXPECT_STATUS(STATUS_SUCCESS, call.result());
}

TEST(Call, PendingCallIsDoneOnlyWhenItsCompletionComesAndActionsRunInOrder)
{
    auto adapter = ndk::Adapter::open("soft", ""); // the calls' owner (Call::context)
    ndk::Call call = ndk::Call::begin();
    std::atomic<int> runs{0};
    std::atomic<NTSTATUS> action_status{ndktest::kNoStatus};
    call.on_complete([&](NTSTATUS s) {
        action_status = s;
        ++runs;
    });
    void *context = call.context(*adapter);
    call.returned(STATUS_PENDING, context);
    EXPECT_FALSE(call.done());
    EXPECT_STATUS(STATUS_PENDING, call.status());
    EXPECT_THROW(call.result(), std::logic_error);
    EXPECT_FALSE(call.completion_status());
    EXPECT_FALSE(call.wait(Seconds(0.05))) << "nothing can complete this call yet";

    std::thread provider([context] { ndk::Call::request_completion(context, STATUS_CANCELLED); });
    ASSERT_TRUE(call.wait(Seconds(5)));
    provider.join();
    EXPECT_TRUE(call.done());
    EXPECT_STATUS(STATUS_PENDING, call.status()) << "the inline status is kept";
    EXPECT_EQ(call.completions(), 1);
    ASSERT_TRUE(call.completion_status());
    EXPECT_STATUS(STATUS_CANCELLED, *call.completion_status());
    EXPECT_STATUS(STATUS_CANCELLED, call.result());
    // The action ran once, before the waiter woke.
    EXPECT_EQ(runs.load(), 1);
    EXPECT_STATUS(STATUS_CANCELLED, action_status.load());
    // An action added after the call is done runs at once, in this thread.
    std::thread::id where;
    call.on_complete([&](NTSTATUS) { where = std::this_thread::get_id(); });
    EXPECT_EQ(where, std::this_thread::get_id());
    ndk::release_parked();

    // Several actions run in the order they were added.
    ndk::Call ordered = ndk::Call::begin();
    std::vector<int> order;
    ordered.on_complete([&](NTSTATUS) { order.push_back(1); });
    ordered.on_complete([&](NTSTATUS) { order.push_back(2); });
    void *ordered_context = ordered.context(*adapter);
    ordered.returned(STATUS_PENDING, ordered_context);
    ndk::Call::close_completion(ordered_context); // a close completion reports STATUS_SUCCESS
    ASSERT_TRUE(ordered.wait(Seconds(5)));
    EXPECT_STATUS(STATUS_SUCCESS, ordered.result());
    EXPECT_EQ(order, (std::vector<int>{1, 2}));
    ndk::release_parked();
}

// A call the provider never completes goes with its adapter: the context table lets go of it
// at the adapter's close, and with it what the call holds (misbehave=never_complete kept the
// adapter itself alive through the create's wrapper).
TEST(Call, AnAdaptersCloseReleasesTheCallsNeverCompleted)
{
    auto adapter = ndk::Adapter::open("soft", "");
    auto held = std::make_shared<int>(7);
    std::weak_ptr<int> watch = held;
    ndk::Call call = ndk::Call::begin();
    call.on_complete([held = std::move(held)](NTSTATUS) {});
    void *context = call.context(*adapter);
    call.returned(STATUS_PENDING, context); // and no completion ever comes
    call = ndk::Call();
    EXPECT_FALSE(watch.expired()) << "the context table holds the pending call";
    adapter->close();
    ndk::release_parked();
    EXPECT_TRUE(watch.expired()) << "the adapter's close let the call go";
}

TEST(CallThroughAdapter, InlineAndPendingCreates)
{
    auto adapter = ndk::Adapter::open("soft", "");
    ndk::Call inline_call = adapter->create_pd();
    EXPECT_STATUS(STATUS_SUCCESS, inline_call.status());
    EXPECT_EQ(inline_call.completions(), 0);
    ASSERT_NE(inline_call.object(), nullptr) << "an inline create has its object at once";
    EXPECT_EQ(inline_call.object()->type(), NdkObjectTypePd);

    std::string reply;
    ASSERT_STATUS(STATUS_SUCCESS, adapter->set_knob("create_mode", "pending", reply));
    ndk::Call pending = adapter->create_cq(8);
    EXPECT_STATUS(STATUS_PENDING, pending.status());
    ASSERT_TRUE(pending.wait(Seconds(5)));
    EXPECT_EQ(pending.completions(), 1);
    EXPECT_STATUS(STATUS_SUCCESS, pending.result());
    auto cq = std::dynamic_pointer_cast<ndk::Cq>(pending.object());
    ASSERT_NE(cq, nullptr);
    EXPECT_TRUE(cq->is_open());
    EXPECT_EQ(cq->type(), NdkObjectTypeCq);
}

TEST(CallThroughAdapter, FailuresInlineAndAsync)
{
    auto adapter =
        ndk::Adapter::open("soft", "fail=NdkCreatePd STATUS_INSUFFICIENT_RESOURCES async 1");
    ndk::Call async_failure = adapter->create_pd();
    EXPECT_STATUS(STATUS_PENDING, async_failure.status());
    ASSERT_TRUE(async_failure.wait(Seconds(5)));
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, async_failure.result());
    EXPECT_EQ(async_failure.object(), nullptr);
    EXPECT_EQ(async_failure.completions(), 1);

    ndk::Call inline_failure = adapter->create_cq(0);
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, inline_failure.status());
    EXPECT_TRUE(inline_failure.done());
    EXPECT_EQ(inline_failure.completions(), 0);
    EXPECT_EQ(inline_failure.object(), nullptr);
}

} // namespace
