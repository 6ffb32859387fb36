// The fault layer (core/src/layers/fault/): its C entry, and the knobs it acts at the ABI edge
// (`fail`, `hold`, the completion modes, the edge's `misbehave` names) in front of the soft
// provider, as ndk::Adapter::open stacks it over every provider.
#include "support.hpp"

#include "ndk/fault.hpp"
#include "ndk/objects.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <set>
#include <vector>
#include <thread>

namespace {

using namespace std::chrono_literals;

// The layer stacks itself over the Provider object it is handed, and carries its name; its
// entry alone has no provider beneath it, and its CreateMiniport says so.
TEST(FaultLayerEntry, StacksOverTheProviderItIsHanded)
{
    auto wrapped = ndk::fault::wrap(ndk::Provider::load("soft:tcp"));
    EXPECT_EQ(wrapped->name(), "soft:tcp");
    const NDK_HARNESS_PROVIDER &layer = wrapped->entry();
    EXPECT_STREQ(layer.Name, "fault");
    char error[256] = {};
    NDIS_HANDLE miniport = nullptr;
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, layer.CreateMiniport(nullptr, error, sizeof error, &miniport));
    EXPECT_NE(std::string(error).find("ndk::fault::wrap"), std::string::npos) << error;
    EXPECT_EQ(miniport, nullptr);

    // transport=tcp needs an address of this host
    ASSERT_STATUS(NDIS_STATUS_SUCCESS, wrapped->create_miniport("seed=7\naddress=127.0.0.1\n", error,
                                                                sizeof error, &miniport))
        << error;
    char reply[64] = {};
    ASSERT_STATUS(STATUS_SUCCESS, layer.ControlMiniport(miniport, "seed", nullptr, reply, sizeof reply));
    EXPECT_STREQ(reply, "7"); // the layer's knob
    ASSERT_STATUS(STATUS_SUCCESS,
                  layer.ControlMiniport(miniport, "transport", nullptr, reply, sizeof reply));
    EXPECT_STREQ(reply, "tcp"); // the provider's, with soft:tcp's option beneath the layer
    layer.DestroyMiniport(miniport);
}

// Objects opened here go through the layer acting its own knobs.
class FaultLayer : public ::testing::Test {
protected:

    static void set(ndk::Adapter &adapter, const std::string &key, const std::string &value)
    {
        std::string reply;
        ASSERT_STATUS(STATUS_SUCCESS, adapter.set_knob(key, value, reply)) << key << ": " << reply;
    }
    static std::string get(ndk::Adapter &adapter, const std::string &key)
    {
        std::string value;
        EXPECT_STATUS(STATUS_SUCCESS, adapter.get_knob(key, value)) << key;
        return value;
    }
};

TEST_F(FaultLayer, FailsInlineThenAsyncThenLetsCallsThrough)
{
    auto adapter = ndk::Adapter::open("soft", "");
    set(*adapter, "fail", "NdkCreatePd STATUS_INSUFFICIENT_RESOURCES inline 2");
    for (int i = 0; i < 2; ++i) {
        ndk::Call pd = adapter->create_pd();
        EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, pd.status());
        EXPECT_EQ(pd.completions(), 0);
    }
    EXPECT_EQ(get(*adapter, "fail"), "");
    set(*adapter, "fail", "NdkCreatePd STATUS_INSUFFICIENT_RESOURCES async");
    ndk::Call failed = adapter->create_pd();
    EXPECT_STATUS(STATUS_PENDING, failed.status());
    ASSERT_TRUE(failed.wait(5s));
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, failed.result());
    EXPECT_EQ(failed.completions(), 1);
    ndk::Call pd = adapter->create_pd();
    ASSERT_STATUS(STATUS_SUCCESS, pd.status());
    EXPECT_TRUE(pd.object());
    // A post cannot fail asynchronously: it has no completion of its own.
    std::string reply;
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  adapter->set_knob("fail", "NdkSend STATUS_CONNECTION_INVALID async", reply));
}

TEST_F(FaultLayer, PendingCreatesDeliverObjectsThatWork)
{
    auto adapter = ndk::Adapter::open("soft", "create_mode=pending");
    ndk::Call cq_call = adapter->create_cq(16);
    EXPECT_STATUS(STATUS_PENDING, cq_call.status());
    ASSERT_TRUE(cq_call.wait(5s));
    ASSERT_STATUS(STATUS_SUCCESS, cq_call.result());
    auto cq = std::dynamic_pointer_cast<ndk::Cq>(cq_call.object());
    ASSERT_TRUE(cq);
    EXPECT_EQ(cq->header()->ObjectType, NdkObjectTypeCq);
    ndk::Call pd_call = adapter->create_pd();
    ASSERT_TRUE(pd_call.wait(5s));
    auto pd = std::dynamic_pointer_cast<ndk::Pd>(pd_call.object());
    ASSERT_TRUE(pd);
    ndk::Call qp = pd->create_qp(cq, cq, nullptr, 4, 4, 1, 1, 0);
    EXPECT_STATUS(STATUS_PENDING, qp.status());
    ASSERT_TRUE(qp.wait(5s));
    EXPECT_STATUS(STATUS_SUCCESS, qp.result());
}

// digest 3.1: with closes pended by the layer, a QP's close completion (deferred by the layer)
// still comes before the close completion of the CQ it uses (pended by the provider).
TEST_F(FaultLayer, PendedClosesKeepSuccessorsFirst)
{
    auto adapter = ndk::Adapter::open("soft", "close_mode=pending");
    auto cq = std::dynamic_pointer_cast<ndk::Cq>(adapter->create_cq(8).object());
    auto pd = std::dynamic_pointer_cast<ndk::Pd>(adapter->create_pd().object());
    ASSERT_TRUE(cq && pd);
    auto qp = pd->create_qp(cq, cq, nullptr, 4, 4, 1, 1, 0).object();
    ASSERT_TRUE(qp);
    ndk::Call cq_close = cq->close();
    EXPECT_STATUS(STATUS_PENDING, cq_close.status()); // the QP still uses it (3.1)
    ndk::Call qp_close = qp->close();
    EXPECT_STATUS(STATUS_PENDING, qp_close.status()); // the layer's close_mode
    ASSERT_TRUE(cq_close.wait(5s));
    // By the time the CQ's close completion ran, the QP's had (it was queued ahead of it).
    EXPECT_EQ(qp_close.completions(), 1);
    EXPECT_STATUS(STATUS_SUCCESS, qp_close.result());
}

TEST_F(FaultLayer, HoldBlocksTheNextCallUntilRelease)
{
    auto adapter = ndk::Adapter::open("soft", "");
    set(*adapter, "hold", "NdkCreatePd");
    EXPECT_EQ(get(*adapter, "hold"), "NdkCreatePd");
    NTSTATUS status = STATUS_PENDING;
    std::thread caller([&] { status = adapter->create_pd().status(); });
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (get(*adapter, "held") != "1" && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
    EXPECT_EQ(get(*adapter, "held"), "1");
    EXPECT_EQ(get(*adapter, "hold"), ""); // consumed by the call it caught
    set(*adapter, "release", "1");
    caller.join();
    EXPECT_STATUS(STATUS_SUCCESS, status);
    EXPECT_EQ(get(*adapter, "held"), "0");
}

TEST_F(FaultLayer, BadValuesAreRefusedWithAReason)
{
    auto adapter = ndk::Adapter::open("soft", "");
    std::string reply;
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, adapter->set_knob("create_mode", "sometimes", reply));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, adapter->set_knob("fail", "NdkNothing STATUS_UNSUCCESSFUL", reply));
    EXPECT_NE(reply.find("NdkNothing"), std::string::npos) << reply;
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, adapter->set_knob("hold", "NdkNothing", reply));
    EXPECT_THROW(ndk::Adapter::open("soft", "request_mode=never"), ndk::Error);
}

// A closed object's face is retired (FaultAdapter::retire): a call on its handle, or the handle
// given as an argument, is refused without reaching the provider's freed object
// (INVALID_HANDLE for the object called, INVALID_PARAMETER for an argument, docs/semantics.md
// OBJECT-OWN), whether the close completed inline or pended.
TEST(FaultLayerFaces, AClosedObjectsHandleIsRefusedNotForwarded)
{
    for (const char *options : {"", "close_mode=pending"}) {
        SCOPED_TRACE(options);
        ndktest::RawAdapter a(options);
        NDK_CQ *cq = a.cq(8);
        NDK_PD *pd = a.pd();
        ASSERT_TRUE(cq && pd);
        ndktest::Record &closed = a.record();
        NTSTATUS status = ndktest::close_with(cq, closed);
        if (status == STATUS_PENDING)
            ASSERT_TRUE(closed.wait());
        else
            ASSERT_STATUS(STATUS_SUCCESS, status);
        ndktest::Record &resized = a.record();
        EXPECT_STATUS(STATUS_INVALID_HANDLE,
                      cq->Dispatch->NdkResizeCq(cq, 16, ndktest::Record::request, &resized));
        NDK_QP *qp = nullptr;
        ndktest::Record &created = a.record();
        EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                      pd->Dispatch->NdkCreateQp(pd, cq, cq, nullptr, 4, 4, 1, 1, 0,
                                                ndktest::Record::create, &created, &qp));
        EXPECT_EQ(resized.count() + created.count(), 0);
    }
}

// An adapter whose objects come and go keeps as many faces as it has objects open plus the
// retired ones waiting (64), not one per object it ever made; a face is not made again for the
// next 64 objects after its close.
TEST(FaultLayerFaces, FacesOfClosedObjectsAreMadeAgainLater)
{
    ndktest::RawAdapter a;
    std::set<void *> faces;
    std::vector<void *> order;
    for (int i = 0; i < 1000; ++i) {
        NDK_CQ *cq = a.cq(8);
        ASSERT_NE(cq, nullptr);
        faces.insert(cq);
        order.push_back(cq);
        ndktest::Record &closed = a.record();
        ASSERT_STATUS(STATUS_SUCCESS, ndktest::close_with(cq, closed));
    }
    EXPECT_LE(faces.size(), 66u);
    for (size_t i = 0; i < order.size(); ++i)
        for (size_t j = i + 1; j < order.size() && j <= i + 64; ++j)
            ASSERT_NE(order[i], order[j]) << "a face made again " << j - i << " closes later";
}

// The records of a closed object's callbacks are made again for later calls: with creates and
// closes pending (each completion relayed through a record), every one of 300 create + close
// rounds still gets its own completions, once each, with its own context and object.
TEST(FaultLayerFaces, CompletionsStayTheirCallersWhileRecordsAreMadeAgain)
{
    ndktest::RawAdapter a("create_mode=pending;close_mode=pending");
    std::set<void *> faces;
    for (int i = 0; i < 300; ++i) {
        ndktest::Record &created = a.record();
        NDK_PD *pd = nullptr;
        ASSERT_STATUS(STATUS_PENDING,
                      a.d().NdkCreatePd(a.get(), ndktest::Record::create, &created, &pd));
        ASSERT_TRUE(created.wait());
        ASSERT_STATUS(STATUS_SUCCESS, created.status());
        auto *made = reinterpret_cast<NDK_PD *>(created.object());
        ASSERT_NE(made, nullptr);
        faces.insert(made);
        ndktest::Record &closed = a.record();
        ASSERT_STATUS(STATUS_PENDING, ndktest::close_with(made, closed));
        ASSERT_TRUE(closed.wait());
        EXPECT_EQ(created.count(), 1);
        EXPECT_EQ(closed.count(), 1);
    }
    EXPECT_LE(faces.size(), 66u);
}

} // namespace
