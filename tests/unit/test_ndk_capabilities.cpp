// NDIS_NDK_CAPABILITIES through the provider entry's QueryNdkCapabilities (ndk/provider.h,
// revision 3; digest 3.7): what soft and loop report, the layers forwarding it, a revision 2
// entry that still loads and reports nothing, and soft's caps counted across the miniport.
#include "support.hpp"

#include "ndk/objects.hpp"
#include "ndk/registry.hpp"

#include <gtest/gtest.h>

namespace {

NDIS_NDK_CAPABILITIES capabilities_of(ndk::Adapter &adapter)
{
    NDIS_NDK_CAPABILITIES c{};
    EXPECT_STATUS(NDIS_STATUS_SUCCESS, adapter.query_ndk_capabilities(c));
    EXPECT_EQ(c.Header.Type, NDIS_OBJECT_TYPE_DEFAULT);
    EXPECT_EQ(c.Header.Revision, NDIS_NDK_CAPABILITIES_REVISION_1);
    EXPECT_EQ(c.Header.Size, sizeof(NDIS_NDK_CAPABILITIES));
    EXPECT_EQ(c.Flags, 0u);
    EXPECT_EQ(c.NdkInfo, nullptr);
    return c;
}

// Soft's counts are its knobs max_*_count, where 0 (no cap, the default) is MAXULONG; with
// max_srq_depth=0 it has no SRQ, which MaxSrqCount 0 says.
TEST(NdkCapabilities, SoftReportsItsKnobs)
{
    for (bool validate : {false, true}) {
        auto plain = ndk::Adapter::open("soft", "", {2, 0}, validate);
        NDIS_NDK_CAPABILITIES c = capabilities_of(*plain);
        for (ULONG count : {c.MaxQpCount, c.MaxCqCount, c.MaxMrCount, c.MaxPdCount, c.MaxMwCount,
                            c.MaxSrqCount})
            EXPECT_EQ(count, MAXULONG) << "validate=" << validate;
        EXPECT_EQ(c.MaxInboundReadLimit, 0u);
        EXPECT_EQ(c.MaxOutboundReadLimit, 0u);
        EXPECT_EQ(c.MissingCounterMask, 0u);
    }
    auto capped = ndk::Adapter::open("soft", "max_qp_count=3\nmax_cq_count=4\nmax_mr_count=5\n"
                                             "max_pd_count=6\nmax_mw_count=7\nmax_srq_count=8");
    NDIS_NDK_CAPABILITIES c = capabilities_of(*capped);
    EXPECT_EQ(c.MaxQpCount, 3u);
    EXPECT_EQ(c.MaxCqCount, 4u);
    EXPECT_EQ(c.MaxMrCount, 5u);
    EXPECT_EQ(c.MaxPdCount, 6u);
    EXPECT_EQ(c.MaxMwCount, 7u);
    EXPECT_EQ(c.MaxSrqCount, 8u);
    auto no_srq = ndk::Adapter::open("soft", "max_srq_depth=0\nmax_srq_count=8");
    EXPECT_EQ(capabilities_of(*no_srq).MaxSrqCount, 0u);
}

// A count changed by a knob at run time is what the next query says.
TEST(NdkCapabilities, SoftFollowsAKnobSetLater)
{
    ndktest::RawAdapter adapter;
    ASSERT_STATUS(STATUS_SUCCESS, adapter.set("max_pd_count", "2"));
    NDIS_NDK_CAPABILITIES c{};
    ASSERT_STATUS(NDIS_STATUS_SUCCESS,
                  adapter.entry().QueryNdkCapabilities(adapter.miniport(), &c));
    EXPECT_EQ(c.MaxPdCount, 2u);
}

// Loop keeps no count of its own (MAXULONG) and has neither windows nor SRQs (0).
TEST(NdkCapabilities, LoopReportsItsOwnLimits)
{
    auto adapter = ndk::Adapter::open("loop", "");
    NDIS_NDK_CAPABILITIES c = capabilities_of(*adapter);
    EXPECT_EQ(c.MaxQpCount, MAXULONG);
    EXPECT_EQ(c.MaxPdCount, MAXULONG);
    EXPECT_EQ(c.MaxMwCount, 0u);
    EXPECT_EQ(c.MaxSrqCount, 0u);
}

// An entry of revision 2 loads, works, and reports no capabilities: the layers over it answer
// NOT_SUPPORTED without reading past its Size (tests/fixtures/revision2_provider.cpp fills what
// lies past it with a pattern that would crash a call through it).
TEST(NdkCapabilities, Revision2EntryLoadsAndReportsNone)
{
    auto provider = ndk::Provider::load(NDK_REVISION2_PROVIDER_LIBRARY);
    EXPECT_EQ(provider->entry().Version, ULONG{NDK_HARNESS_PROVIDER_VERSION_2});
    EXPECT_FALSE(NdkHarnessReportsCapabilities(&provider->entry()));
    for (bool validate : {false, true}) {
        auto adapter = ndk::Adapter::open(NDK_REVISION2_PROVIDER_LIBRARY, "", {2, 0}, validate);
        NDIS_NDK_CAPABILITIES c{};
        EXPECT_STATUS(NDIS_STATUS_NOT_SUPPORTED, adapter->query_ndk_capabilities(c));
        EXPECT_EQ(c.NdkInfo, nullptr);
        ndk::Call pd = adapter->create_pd();
        EXPECT_STATUS(STATUS_SUCCESS, pd.result());
    }
}

// NDIS_NDK_CAPABILITIES are the miniport's (digest 3.7), so soft's caps count the objects of
// every adapter opened on it: two adapters share max_pd_count=2.
TEST(NdkCapabilities, SoftCountsAcrossTheMiniportsAdapters)
{
    ndktest::RawAdapter first("max_pd_count=2");
    NDIS_OPEN_NDK_ADAPTER_PARAMETERS parameters{};
    parameters.Version = {2, 0};
    NDK_ADAPTER *second = nullptr;
    ASSERT_STATUS(NDIS_STATUS_SUCCESS, first.entry().Characteristics.OpenNDKAdapterHandler(
                                           first.miniport(), &parameters, &second));
    ndktest::Record done; // soft creates inline: the completion is never called
    auto create_pd = [&](NDK_ADAPTER *adapter, NDK_PD **pd) {
        return adapter->Dispatch->NdkCreatePd(adapter, ndktest::Record::create, &done, pd);
    };
    NDK_PD *a = nullptr, *b = nullptr, *c = nullptr;
    EXPECT_STATUS(STATUS_SUCCESS, create_pd(first.get(), &a));
    EXPECT_STATUS(STATUS_SUCCESS, create_pd(second, &b));
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, create_pd(second, &c));
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, create_pd(first.get(), &c));
    EXPECT_EQ(c, nullptr);
    // Closing the second adapter releases its PD: the first can create one again.
    first.entry().Characteristics.CloseNDKAdapterHandler(first.miniport(), second);
    EXPECT_STATUS(STATUS_SUCCESS, create_pd(first.get(), &c));
    EXPECT_EQ(done.count(), 0) << "an inline create called its completion";
}

} // namespace
