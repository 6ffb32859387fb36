// The verbs provider on the host: registered when built with libibverbs + librdmacm; with an
// RDMA device it opens and reports the device's technology, without one it refuses with
// STATUS_DEVICE_NOT_READY and says why (the scenarios then skip with that reason).  The
// scenarios themselves run against real devices in the VM lane (tests/vm/verbs-lane.sh).
#include "ndk/registry.hpp"

#include "ndk/call.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

namespace {

std::shared_ptr<ndk::Provider> verbs_or_skip(const std::string &name = "verbs")
{
    auto available = ndk::Provider::available();
    if (std::find(available.begin(), available.end(), "verbs") == available.end())
        return nullptr;
    return ndk::Provider::load(name);
}

TEST(VerbsProvider, RegisteredByNameAndByDevice)
{
    auto provider = verbs_or_skip();
    if (!provider)
        GTEST_SKIP() << "built without libibverbs/librdmacm: no verbs provider";
    EXPECT_STREQ(provider->entry().Name, "verbs");
    EXPECT_EQ(provider->entry().Version, static_cast<ULONG>(NDK_HARNESS_PROVIDER_VERSION));
    auto on_device = ndk::Provider::load("verbs:siw0");
    EXPECT_EQ(on_device->name(), "verbs:siw0");
    EXPECT_STREQ(on_device->entry().Name, "verbs");
}

TEST(VerbsProvider, OpensADeviceOrSaysWhyNot)
{
    auto provider = verbs_or_skip();
    if (!provider)
        GTEST_SKIP() << "built without libibverbs/librdmacm: no verbs provider";
    char error[512] = {};
    NDIS_HANDLE miniport = nullptr;
    NDIS_STATUS status = provider->create_miniport(nullptr, error, sizeof error, &miniport);
    if (status != STATUS_SUCCESS) {
        EXPECT_EQ(status, STATUS_DEVICE_NOT_READY) << error;
        EXPECT_NE(std::strstr(error, "RDMA device"), nullptr) << error;
        return;
    }
    const NDK_HARNESS_PROVIDER &entry = provider->entry();
    NDIS_OPEN_NDK_ADAPTER_PARAMETERS parameters{};
    parameters.Version = {2, 0};
    NDK_ADAPTER *adapter = nullptr;
    ASSERT_EQ(entry.Characteristics.OpenNDKAdapterHandler(miniport, &parameters, &adapter),
              NDIS_STATUS_SUCCESS);
    NDK_ADAPTER_INFO info{};
    ULONG size = sizeof info;
    EXPECT_EQ(adapter->Dispatch->NdkQueryAdapterInfo(adapter, &info, &size), STATUS_SUCCESS);
    EXPECT_TRUE(info.RdmaTechnology == NdkiWarp || info.RdmaTechnology == NdkRoCEv2 ||
                info.RdmaTechnology == NdkInfiniBand);
    EXPECT_EQ(info.Version.Major, 2);
    EXPECT_EQ(info.Version.Minor, 1);
    // Its creates and closes complete inline (the fault layer's create_mode / close_mode
    // inline are then accepted), its requests not all: a refused Connect and a Disconnect wait
    // for rdma_cm.
    char reply[128] = {};
    EXPECT_EQ(entry.ControlMiniport(miniport, "completes_inline", nullptr, reply, sizeof reply),
              STATUS_SUCCESS);
    EXPECT_STREQ(reply, "create close");
    EXPECT_EQ(entry.ControlMiniport(miniport, "completes_inline", "create", reply, sizeof reply),
              STATUS_INVALID_PARAMETER);
    entry.Characteristics.CloseNDKAdapterHandler(miniport, adapter);
    entry.DestroyMiniport(miniport);
}

TEST(VerbsProvider, HasNoBehaviourKnobs)
{
    auto provider = verbs_or_skip();
    if (!provider)
        GTEST_SKIP() << "built without libibverbs/librdmacm: no verbs provider";
    char error[512] = {};
    NDIS_HANDLE miniport = nullptr;
    // Checked before any device is looked at, so the answer is the same with or without one.
    EXPECT_EQ(provider->create_miniport("create_mode=pending", error, sizeof error, &miniport),
              STATUS_NOT_SUPPORTED);
    EXPECT_NE(std::strstr(error, "create_mode"), nullptr) << error;
}

} // namespace
