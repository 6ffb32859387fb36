// The consumer API's RAII handles (core/include/ndk/objects.hpp): a handle closes its object
// when the last reference goes, keeps what it depends on open, throws ClosedError once closed,
// and Adapter::close closes every child first.  Object caps (knobs) make "is it still open in
// the provider?" observable without reaching into the provider.
#include "support.hpp"

#include "ndk/objects.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using Seconds = ndk::Call::Seconds;

template <class T>
std::shared_ptr<T> made(const ndk::Call &call)
{
    EXPECT_TRUE(call.wait(Seconds(5)));
    EXPECT_STATUS(STATUS_SUCCESS, call.result());
    return std::dynamic_pointer_cast<T>(call.object());
}

TEST(Handles, DroppingTheLastReferenceClosesTheObject)
{
    auto adapter = ndk::Adapter::open("soft", "max_cq_count=1");
    {
        auto cq = made<ndk::Cq>(adapter->create_cq(16));
        ASSERT_TRUE(cq);
        EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, adapter->create_cq(16).result());
    } // the handle (and the Call that made it) are gone: the CQ is closed
    auto again = made<ndk::Cq>(adapter->create_cq(16));
    EXPECT_TRUE(again);
}

TEST(Handles, HandlesKeepWhatTheyDependOnOpen)
{
    auto adapter = ndk::Adapter::open("soft", "max_cq_count=1;max_pd_count=1");
    std::shared_ptr<ndk::Qp> qp;
    std::shared_ptr<ndk::Mr> mr;
    {
        auto cq = made<ndk::Cq>(adapter->create_cq(16));
        auto pd = made<ndk::Pd>(adapter->create_pd());
        ASSERT_TRUE(cq && pd);
        qp = made<ndk::Qp>(pd->create_qp(cq, cq, nullptr, 4, 4, 1, 1, 0));
        mr = made<ndk::Mr>(pd->create_mr(false));
        ASSERT_TRUE(qp && mr);
    }
    // The QP holds its CQ and PD, the MR its PD: both are still open in the provider.
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, adapter->create_cq(16).result());
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, adapter->create_pd().result());
    qp.reset();
    EXPECT_TRUE(made<ndk::Cq>(adapter->create_cq(16))) << "the QP's CQ closed with the QP";
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, adapter->create_pd().result())
        << "the MR still holds the PD";
    mr.reset();
    EXPECT_TRUE(made<ndk::Pd>(adapter->create_pd()));
}

TEST(Handles, AClosedHandleThrowsClosedError)
{
    auto adapter = ndk::Adapter::open("soft", "");
    auto cq = made<ndk::Cq>(adapter->create_cq(16));
    auto pd = made<ndk::Pd>(adapter->create_pd());
    ASSERT_TRUE(cq && pd);
    ndk::Call first = cq->close();
    EXPECT_STATUS(STATUS_SUCCESS, first.result());
    EXPECT_FALSE(cq->is_open());
    EXPECT_TRUE(pd->is_open());
    EXPECT_EQ(cq->type(), NdkObjectTypeCq) << "the type outlives the provider's object";
    EXPECT_THROW(cq->arm(NDK_CQ_NOTIFY_ANY), ndk::ClosedError);
    EXPECT_THROW(cq->get_results(4), ndk::ClosedError);
    EXPECT_THROW(cq->get_results_ex(4), ndk::ClosedError);
    EXPECT_THROW(cq->resize(32), ndk::ClosedError);
    EXPECT_THROW(cq->control_interrupt_moderation(0, 0), ndk::ClosedError);
    EXPECT_THROW(cq->check_open(), ndk::ClosedError);
    try {
        cq->arm(NDK_CQ_NOTIFY_ANY);
    } catch (const ndk::ClosedError &e) {
        EXPECT_STREQ(e.what(), "CQ is closed");
    }
    // A second close returns the first close's record; nothing reaches the provider again.
    ndk::Call second = cq->close();
    EXPECT_STATUS(STATUS_SUCCESS, second.status());
    EXPECT_EQ(second.completions(), first.completions());
}

TEST(Handles, AdapterCloseClosesEveryChildThroughTheProvider)
{
    auto adapter = ndk::Adapter::open("soft", "close_mode=pending");
    auto cq = made<ndk::Cq>(adapter->create_cq(16));
    auto pd = made<ndk::Pd>(adapter->create_pd());
    ASSERT_TRUE(cq && pd);
    auto srq = made<ndk::Srq>(pd->create_srq(16, 1, 0));
    ASSERT_TRUE(srq);
    auto qp = made<ndk::Qp>(pd->create_qp_with_srq(cq, cq, srq, nullptr, 4, 1, 0));
    auto mr = made<ndk::Mr>(pd->create_mr(true));
    auto mw = made<ndk::Mw>(pd->create_mw());
    auto listener = made<ndk::Listener>(adapter->create_listener());
    ASSERT_TRUE(qp && mr && mw && listener);
    adapter->close();
    EXPECT_FALSE(adapter->is_open());
    std::vector<std::shared_ptr<ndk::Object>> children{cq, pd, srq, qp, mr, mw, listener};
    for (const auto &child : children) {
        SCOPED_TRACE(child->type());
        EXPECT_FALSE(child->is_open());
        // Closed through NdkCloseXxx (PENDING in this close mode), completed before the
        // adapter's close: not the "closed with its adapter" stand-in record.
        ndk::Call close = child->close();
        EXPECT_STATUS(STATUS_PENDING, close.status());
        EXPECT_EQ(close.completions(), 1);
        EXPECT_THROW(child->check_open(), ndk::ClosedError);
    }
    EXPECT_THROW(adapter->create_pd(), ndk::ClosedError);
    EXPECT_THROW(adapter->query_info(), ndk::ClosedError);
    EXPECT_THROW(adapter->check_open(), ndk::ClosedError);
    std::string value;
    EXPECT_THROW(adapter->get_knob("create_mode", value), ndk::ClosedError);
    adapter->close(); // idempotent
}

TEST(Handles, HandlesOutlivingTheirAdapterCloseAreHarmless)
{
    std::shared_ptr<ndk::Cq> cq;
    {
        auto adapter = ndk::Adapter::open("soft", "");
        cq = made<ndk::Cq>(adapter->create_cq(16));
        ASSERT_TRUE(cq);
        adapter->close();
    }
    // The handle keeps the (closed) adapter object alive; its close is the one Adapter::close
    // made.
    ASSERT_TRUE(cq->adapter());
    EXPECT_FALSE(cq->adapter()->is_open());
    EXPECT_STATUS(STATUS_SUCCESS, cq->close().result());
    EXPECT_THROW(cq->arm(NDK_CQ_NOTIFY_ANY), ndk::ClosedError);
    cq.reset(); // ASan: no use of the provider's freed memory
}

TEST(Handles, RegisterBufferRecordsTheRangeBeforeWaitersWake)
{
    auto adapter = ndk::Adapter::open("soft", "request_mode=pending");
    auto pd = made<ndk::Pd>(adapter->create_pd());
    ASSERT_TRUE(pd);
    auto mr = made<ndk::Mr>(pd->create_mr(false));
    ASSERT_TRUE(mr);
    auto memory = std::make_shared<std::vector<char>>(3 * NDK_PAGE_SIZE + 123);
    ndk::Call reg = mr->register_buffer(memory->data() + 5, 3 * NDK_PAGE_SIZE, 0, memory);
    EXPECT_STATUS(STATUS_PENDING, reg.status());
    ASSERT_TRUE(reg.wait(Seconds(5)));
    ASSERT_STATUS(STATUS_SUCCESS, reg.result());
    EXPECT_EQ(mr->registered_address(), reinterpret_cast<uintptr_t>(memory->data() + 5));
    EXPECT_EQ(mr->registered_length(), 3 * NDK_PAGE_SIZE);
    EXPECT_NE(mr->get_local_token(), 0u);
    EXPECT_NE(mr->get_remote_token(), mr->get_local_token());
    ndk::Call dereg = mr->deregister();
    ASSERT_TRUE(dereg.wait(Seconds(5)));
    ASSERT_STATUS(STATUS_SUCCESS, dereg.result());
    EXPECT_EQ(mr->registered_address(), 0u);
    EXPECT_EQ(mr->registered_length(), 0u);
    EXPECT_EQ(mr->get_local_token(), 0u);
}

TEST(Handles, KnobsThroughTheAdapter)
{
    auto adapter = ndk::Adapter::open("soft", "max_cq_depth=64");
    EXPECT_TRUE(adapter->has_knobs());
    std::string value, reply;
    ASSERT_STATUS(STATUS_SUCCESS, adapter->get_knob("max_cq_depth", value));
    EXPECT_EQ(value, "64");
    EXPECT_STATUS(STATUS_NOT_SUPPORTED, adapter->get_knob("no_such_knob", value));
    EXPECT_STATUS(STATUS_NOT_SUPPORTED, adapter->set_knob("no_such_knob", "1", reply));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, adapter->set_knob("max_cq_depth", "deep", reply));
    EXPECT_NE(reply.find("max_cq_depth"), std::string::npos) << reply;
    ASSERT_STATUS(STATUS_SUCCESS, adapter->set_knob("max_cq_depth", "32", reply));
    EXPECT_EQ(adapter->query_info().MaxCqDepth, 32u);
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, adapter->create_cq(33).result());
    NDK_ADAPTER_INFO info{};
    ULONG size = 0;
    EXPECT_STATUS(STATUS_BUFFER_TOO_SMALL, adapter->query_adapter_info(&info, &size));
    EXPECT_EQ(size, sizeof(NDK_ADAPTER_INFO));
}

} // namespace
