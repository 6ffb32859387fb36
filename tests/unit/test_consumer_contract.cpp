// The consumer side's concurrency contract (docs/semantics.md, "The consumer's side"): a close
// that meets a call in flight on another thread pends until the call returns, and a provider
// that breaks the completion rules (a completion after an inline return, a second completion,
// an event after the close, an object without a dispatch table) never makes the consumer touch
// freed memory.  Run without the validation layer, which would catch these first.
#include "support.hpp"

#include "ndk/objects.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

namespace {

using Seconds = ndk::Call::Seconds;
using namespace std::chrono_literals;

template <class T>
std::shared_ptr<T> made(const ndk::Call &call)
{
    EXPECT_TRUE(call.wait(Seconds(5)));
    EXPECT_STATUS(STATUS_SUCCESS, call.result());
    return std::dynamic_pointer_cast<T>(call.object());
}

std::string knob(ndk::Adapter &adapter, const std::string &key)
{
    std::string value;
    EXPECT_STATUS(STATUS_SUCCESS, adapter.get_knob(key, value));
    return value;
}

void set_knob(ndk::Adapter &adapter, const std::string &key, const std::string &value)
{
    std::string reply;
    ASSERT_STATUS(STATUS_SUCCESS, adapter.set_knob(key, value, reply)) << reply;
}

// Wait until the soft provider holds one call (knob `held`).
void await_held(ndk::Adapter &adapter)
{
    for (int i = 0; i < 500 && knob(adapter, "held") != "1"; ++i)
        std::this_thread::sleep_for(2ms);
    ASSERT_EQ("1", knob(adapter, "held"));
}

TEST(ConsumerContract, ACloseMeetingACallInFlightPendsUntilItReturns)
{
    auto adapter = ndk::Adapter::open("soft", "");
    auto cq = made<ndk::Cq>(adapter->create_cq(8));
    ASSERT_TRUE(cq);
    // A call in flight, as every method enters one around its provider call (InCall): kept
    // here on this thread, so that nothing but its end can let the close go on.
    std::optional<ndk::InCall> in_flight(cq->enter());
    ndk::Call close = cq->close();
    EXPECT_STATUS(STATUS_PENDING, close.status()) << "not issued while the call is inside";
    EXPECT_FALSE(close.done());
    EXPECT_FALSE(cq->is_open());
    EXPECT_THROW(cq->arm(NDK_CQ_NOTIFY_ANY), ndk::ClosedError) << "no new call enters";
    in_flight.reset(); // the call returns: it issues the close
    ASSERT_TRUE(close.wait(Seconds(5)));
    EXPECT_STATUS(STATUS_SUCCESS, close.result());
}

// docs/semantics.md CLOSE-HELD: a call the fault layer holds (knob `hold`) on an object ends
// its hold when that object closes, goes on into the provider and returns normally, and then
// issues the close, which completes.  No check of the hold runs on a timer here (the Python
// binding's signal check is not set in this program): only the close's wake can end it.
TEST(ConsumerContract, AnObjectsCloseEndsTheHoldOfACallOnIt)
{
    auto adapter = ndk::Adapter::open("soft", "");
    auto cq = made<ndk::Cq>(adapter->create_cq(8));
    auto other = made<ndk::Cq>(adapter->create_cq(8));
    ASSERT_TRUE(cq && other);
    set_knob(*adapter, "hold", "NdkGetCqResultsEx");
    std::atomic<bool> returned{false};
    std::thread poller([&] {
        EXPECT_TRUE(cq->get_results_ex(4).empty()) << "the held poll returns normally";
        returned = true;
    });
    await_held(*adapter);
    other->close().wait(Seconds(5)); // another object's close leaves the hold as it is
    EXPECT_EQ("1", knob(*adapter, "held"));
    ndk::Call close = cq->close();
    poller.join();
    EXPECT_TRUE(returned);
    ASSERT_TRUE(close.wait(Seconds(5)));
    EXPECT_STATUS(STATUS_SUCCESS, close.result());
    EXPECT_EQ("0", knob(*adapter, "held"));
}

// The same for an object passed to the call as an argument: the QP of a Connect.
TEST(ConsumerContract, TheCloseOfAnArgumentEndsTheHoldOfTheCall)
{
    auto adapter = ndk::Adapter::open("soft", "");
    auto cq = made<ndk::Cq>(adapter->create_cq(8));
    auto pd = made<ndk::Pd>(adapter->create_pd());
    ASSERT_TRUE(cq && pd);
    auto qp = made<ndk::Qp>(pd->create_qp(cq, cq, nullptr, 4, 4, 1, 1, 0));
    auto connector = made<ndk::Connector>(adapter->create_connector());
    ASSERT_TRUE(qp && connector);
    set_knob(*adapter, "hold", "NdkConnect");
    std::thread connecting([&] {
        auto unreachable = ndk::SocketAddress::from("192.0.2.250", 9);
        connector->connect(qp, ndk::SocketAddress::from("0.0.0.0", 0), unreachable, 0, 0);
    });
    await_held(*adapter);
    ndk::Call close = qp->close();
    connecting.join();
    EXPECT_EQ("0", knob(*adapter, "held"));
    connector->close().wait(Seconds(5)); // the QP's close waits for its connector (3.1)
    ASSERT_TRUE(close.wait(Seconds(10)));
}

TEST(ConsumerContract, AnAdapterCloseMeetingACallInFlightIsFinishedByThatCall)
{
    auto adapter = ndk::Adapter::open("soft", "");
    auto cq = made<ndk::Cq>(adapter->create_cq(8));
    auto pd = made<ndk::Pd>(adapter->create_pd());
    ASSERT_TRUE(cq && pd);
    set_knob(*adapter, "hold", "NdkGetCqResultsEx");
    std::thread poller([&] { EXPECT_TRUE(cq->get_results_ex(4).empty()); });
    await_held(*adapter);
    // Returns at once: waiting here for the held call could wait forever.  The close ends
    // the hold (docs/knobs.md: "until release is set or its adapter closes"), and the poll,
    // returning, finishes the close.
    adapter->close();
    EXPECT_FALSE(adapter->is_open());
    EXPECT_FALSE(pd->is_open());
    EXPECT_THROW(adapter->create_pd(), ndk::ClosedError);
    poller.join();
    EXPECT_FALSE(adapter->accepts_closes()) << "the returning poll finished the close";
}

TEST(ConsumerContract, CallsRacingAnAdapterCloseFinishOrThrowClosedError)
{
    for (int round = 0; round < 20; ++round) {
        auto adapter = ndk::Adapter::open("soft", "");
        auto cq = made<ndk::Cq>(adapter->create_cq(8));
        auto pd = made<ndk::Pd>(adapter->create_pd());
        ASSERT_TRUE(cq && pd);
        std::atomic<int> closed_errors{0};
        auto loop = [&](auto body) {
            return std::thread([&, body] {
                try {
                    for (;;)
                        body();
                } catch (const ndk::ClosedError &) {
                    ++closed_errors;
                }
            });
        };
        std::thread polls = loop([&] {
            cq->get_results_ex(4);
            cq->arm(NDK_CQ_NOTIFY_ANY);
        });
        std::thread creates = loop([&] { pd->create_mr(false).wait(Seconds(5)); });
        std::this_thread::sleep_for(1ms);
        adapter->close();
        polls.join();
        creates.join();
        EXPECT_EQ(2, closed_errors.load());
    }
}

TEST(ConsumerContract, ACompletionAfterAnInlineReturnIsRecordedOnceAndHarmless)
{
    auto adapter =
        ndk::Adapter::open("soft", "create_mode=inline\nmisbehave=complete_after_inline");
    ndk::Call call = adapter->create_pd();
    EXPECT_STATUS(STATUS_SUCCESS, call.status());
    auto pd = std::dynamic_pointer_cast<ndk::Pd>(call.object());
    ASSERT_TRUE(pd) << "one handle, though the provider handed the PD twice";
    EXPECT_TRUE(pd->create_mr(false).wait(Seconds(5)));
    // A failing create completed after its inline return: nothing is left to touch.
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, adapter->create_cq(0xFFFFFFFF).result());
}

TEST(ConsumerContract, ASecondCompletionMatchesNothing)
{
    auto adapter = ndk::Adapter::open("soft", "create_mode=pending\nmisbehave=complete_twice");
    for (int i = 0; i < 20; ++i) {
        ndk::Call call = adapter->create_pd();
        ASSERT_TRUE(call.wait(Seconds(5)));
        EXPECT_STATUS(STATUS_SUCCESS, call.result());
    }
    ndk::release_parked();
    std::this_thread::sleep_for(20ms); // the second completions come from the engine
    EXPECT_TRUE(made<ndk::Cq>(adapter->create_cq(8)));
}

TEST(ConsumerContract, AnObjectWithoutADispatchTableIsAProviderFault)
{
    auto adapter = ndk::Adapter::open("soft", "misbehave=dispatch_null");
    ndk::Call call = adapter->create_pd();
    ASSERT_TRUE(call.wait(Seconds(5)));
    EXPECT_STATUS(STATUS_SUCCESS, call.result());
    try {
        call.object();
        FAIL() << "expected ProviderFault";
    } catch (const ndk::ProviderFault &fault) {
        EXPECT_NE(std::string(fault.what()).find("PD whose Dispatch is NULL"), std::string::npos)
            << fault.what();
    }
}

TEST(ConsumerContract, ACallbackAfterTheCloseFindsNothing)
{
    auto adapter = ndk::Adapter::open("soft", "misbehave=callback_after_close");
    for (int i = 0; i < 10; ++i) {
        auto cq = made<ndk::Cq>(adapter->create_cq(8));
        ASSERT_TRUE(cq);
        cq->arm(NDK_CQ_NOTIFY_ANY);
        ndk::Call close = cq->close();
        ASSERT_TRUE(close.wait(Seconds(5)));
        EXPECT_STATUS(STATUS_SUCCESS, close.result());
    } // each CQ's events go with its handle; the provider's late notifications find nothing
    std::this_thread::sleep_for(20ms);
    adapter->close();
}

} // namespace

namespace {

// Every registration path holds the memory it registers (issue: an MDL registration did not):
// from the call until the region is deregistered, or the MR's close completes.
TEST(ConsumerContract, RegisteredMemoryIsHeldUntilDeregisteredOrClosed)
{
    auto adapter = ndk::Adapter::open("soft", "");
    auto pd = made<ndk::Pd>(adapter->create_pd());
    ASSERT_TRUE(pd);
    for (bool by_close : {false, true}) {
        auto mr = made<ndk::Mr>(pd->create_mr(false));
        ASSERT_TRUE(mr);
        auto memory = std::make_shared<std::vector<char>>(4096);
        std::weak_ptr<std::vector<char>> watch = memory;
        MDL mdl{};
        NdkInitializeMdl(&mdl, memory->data(), 4096);
        ndk::Call registered = mr->register_mdl({mdl}, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, memory);
        memory.reset();
        ASSERT_TRUE(registered.wait(Seconds(5)));
        EXPECT_STATUS(STATUS_SUCCESS, registered.result());
        ndk::release_parked();
        EXPECT_FALSE(watch.expired()) << "the registration holds the memory";
        ndk::Call end = by_close ? mr->close() : mr->deregister();
        ASSERT_TRUE(end.wait(Seconds(5)));
        ndk::release_parked();
        EXPECT_TRUE(watch.expired()) << (by_close ? "closed" : "deregistered")
                                     << ": the memory is let go";
    }
}

} // namespace

namespace {

// A CQ whose close pends on its QP while the handles go (a random walk's sequence): the close
// completions release the CQ's event context and the adapter's last reference goes meanwhile.
TEST(ConsumerContract, PendingClosesAcrossManyRoundsStaySafe)
{
    for (int round = 0; round < 300; ++round) {
        auto adapter = ndk::Adapter::open("soft", "", {2, 0}, true);
        auto cq = made<ndk::Cq>(adapter->create_cq(8));
        auto pd = made<ndk::Pd>(adapter->create_pd());
        ASSERT_TRUE(cq && pd);
        auto qp = made<ndk::Qp>(pd->create_qp(cq, cq, nullptr, 4, 4, 1, 1, 0));
        ASSERT_TRUE(qp);
        cq->control_interrupt_moderation(1, 1);
        cq->arm(NDK_CQ_NOTIFY_ANY);
        qp->flush();
        ndk::Call cq_close = cq->close(); // pends: the QP still uses the CQ
        std::this_thread::sleep_for(std::chrono::microseconds(100 + round % 150));
        qp->close();
        cq.reset();
        qp.reset();
        pd.reset();
        adapter.reset(); // the last references may now be in completions
        EXPECT_TRUE(cq_close.wait(Seconds(5)));
    }
}

} // namespace
