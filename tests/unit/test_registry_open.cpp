// Opening adapters: the provider registry (built-in and loaded from a .so), version
// negotiation of OPEN_NDK_ADAPTER_HANDLER (digest 1.1), open-time errors, and the object
// header every provider-created object carries (digest 1.0).
#include "support.hpp"

#include "ndk/objects.hpp"
#include "ndk/validation.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>

namespace {

using ndktest::RawAdapter;

NTSTATUS open_status(const std::string &provider, const std::string &options, NDK_VERSION version)
{
    try {
        ndk::Adapter::open(provider, options, version);
        return STATUS_SUCCESS;
    } catch (const ndk::Error &e) {
        return e.status();
    }
}

// A supported major with a minor at or below the provider's highest: the provider uses and
// reports its highest minor (digest 1.1), in NDK_ADAPTER_INFO and in the adapter's header.
TEST(Open, VersionNegotiationReportsTheProvidersHighestMinor)
{
    const std::pair<NDK_VERSION, NDK_VERSION> cases[] = {
        {{1, 0}, {1, 2}}, {{1, 1}, {1, 2}}, {{1, 2}, {1, 2}}, {{2, 0}, {2, 1}}, {{2, 1}, {2, 1}}};
    for (const auto &[requested, reported] : cases) {
        SCOPED_TRACE(std::to_string(requested.Major) + "." + std::to_string(requested.Minor));
        auto adapter = ndk::Adapter::open("soft", "", requested);
        NDK_ADAPTER_INFO info = adapter->query_info();
        EXPECT_EQ(info.Version.Major, reported.Major);
        EXPECT_EQ(info.Version.Minor, reported.Minor);
        EXPECT_EQ(adapter->ndk()->Header.Version.Major, reported.Major);
        EXPECT_EQ(adapter->ndk()->Header.Version.Minor, reported.Minor);
    }
}

// An unknown major, or a minor above the provider's highest: NDIS_STATUS_BAD_VERSION.
TEST(Open, UnsupportedVersionsAreBadVersion)
{
    for (NDK_VERSION v : {NDK_VERSION{1, 3}, NDK_VERSION{2, 2}, NDK_VERSION{3, 0},
                          NDK_VERSION{0, 0}, NDK_VERSION{0xFFFF, 0}})
        EXPECT_STATUS(NDIS_STATUS_BAD_VERSION, open_status("soft", "", v))
            << v.Major << "." << v.Minor;
}

TEST(Open, ProviderVersionKnobLimitsWhatIsOffered)
{
    auto adapter = ndk::Adapter::open("soft", "provider_version=1.1", {1, 0});
    EXPECT_EQ(adapter->query_info().Version.Minor, 1);
    EXPECT_STATUS(NDIS_STATUS_BAD_VERSION, open_status("soft", "provider_version=1.1", {1, 2}));
    EXPECT_STATUS(NDIS_STATUS_BAD_VERSION, open_status("soft", "provider_version=1.1", {2, 0}));
}

TEST(Open, AdapterNotReady)
{
    EXPECT_STATUS(NDIS_STATUS_ADAPTER_NOT_READY,
                  open_status("soft", "adapter_not_ready=1", {2, 0}));
}

TEST(Open, UnknownKnobIsAKnobError)
{
    try {
        ndk::Adapter::open("soft", "create_mode=pending;no_such_knob=1");
        FAIL() << "opened with an unknown knob";
    } catch (const ndk::KnobError &e) {
        EXPECT_STATUS(STATUS_NOT_SUPPORTED, e.status());
        EXPECT_NE(std::string(e.what()).find("no_such_knob"), std::string::npos) << e.what();
    }
}

TEST(Open, BadKnobValuesAndMalformedOptions)
{
    try {
        ndk::Adapter::open("soft", "create_mode=sometimes");
        FAIL() << "opened with a bad knob value";
    } catch (const ndk::Error &e) {
        EXPECT_STATUS(STATUS_INVALID_PARAMETER, e.status());
        EXPECT_NE(std::string(e.what()).find("create_mode"), std::string::npos) << e.what();
    }
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, open_status("soft", "create_mode", {2, 0}));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  open_status("soft", "fail=NdkArmCq INSUFFICIENT_RESOURCES", {2, 0}));
    EXPECT_STATUS(STATUS_INVALID_ADDRESS, open_status("soft", "address=not-an-ip", {2, 0}));
}

TEST(Registry, BuiltInSoftProvider)
{
    auto available = ndk::Provider::available();
    EXPECT_NE(std::find(available.begin(), available.end(), "soft"), available.end());
    auto provider = ndk::Provider::load("soft");
    const NDK_HARNESS_PROVIDER &entry = provider->entry();
    EXPECT_EQ(provider->name(), "soft");
    EXPECT_STREQ(entry.Name, "soft");
    EXPECT_EQ(entry.Size, sizeof(NDK_HARNESS_PROVIDER));
    EXPECT_EQ(entry.Version, static_cast<ULONG>(NDK_HARNESS_PROVIDER_VERSION));
    EXPECT_EQ(entry.Characteristics.Header.Type, NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS);
    EXPECT_EQ(entry.Characteristics.Header.Revision, NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1);
    EXPECT_EQ(entry.Characteristics.Header.Size, sizeof(NDIS_NDK_PROVIDER_CHARACTERISTICS));
    EXPECT_EQ(entry.Characteristics.Flags, 0u);
    EXPECT_NE(entry.Characteristics.OpenNDKAdapterHandler, nullptr);
    EXPECT_NE(entry.Characteristics.CloseNDKAdapterHandler, nullptr);
    EXPECT_NE(entry.CreateMiniport, nullptr);
    EXPECT_NE(entry.DestroyMiniport, nullptr);
    EXPECT_NE(entry.ControlMiniport, nullptr);
}

TEST(Registry, LoadsTheSoftProviderFromItsSharedObject)
{
    auto provider = ndk::Provider::load(NDK_SOFT_PROVIDER_LIBRARY);
    EXPECT_EQ(provider->name(), NDK_SOFT_PROVIDER_LIBRARY);
    EXPECT_STREQ(provider->entry().Name, "soft");
    EXPECT_EQ(provider->entry().Version, static_cast<ULONG>(NDK_HARNESS_PROVIDER_VERSION));
    // A different copy of the code than the built-in one.
    EXPECT_NE(&provider->entry(), &ndk::Provider::load("soft")->entry());
}

TEST(Registry, OpensAnAdapterThroughTheSharedObject)
{
    auto adapter = ndk::Adapter::open(NDK_SOFT_PROVIDER_LIBRARY, "max_cq_depth=100", {1, 0});
    EXPECT_EQ(adapter->provider_name(), NDK_SOFT_PROVIDER_LIBRARY);
    NDK_ADAPTER_INFO info = adapter->query_info();
    EXPECT_EQ(info.Version.Major, 1);
    EXPECT_EQ(info.Version.Minor, 2);
    EXPECT_EQ(info.MaxCqDepth, 100u);
    ndk::Call cq = adapter->create_cq(100);
    ASSERT_STATUS(STATUS_SUCCESS, cq.result());
    ASSERT_TRUE(cq.object());
    EXPECT_EQ(cq.object()->header()->Version.Minor, 2);
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, adapter->create_cq(101).result());
    ndk::Call pd = adapter->create_pd();
    EXPECT_STATUS(STATUS_SUCCESS, pd.result());
    EXPECT_THROW(ndk::Adapter::open(NDK_SOFT_PROVIDER_LIBRARY, "no_such_knob=1"), ndk::KnobError);
}

TEST(Registry, UnloadableProvidersAreNotSupported)
{
    auto status_of = [](const std::string &name) {
        try {
            ndk::Provider::load(name);
            return STATUS_SUCCESS;
        } catch (const ndk::Error &e) {
            return e.status();
        }
    };
    EXPECT_STATUS(STATUS_NOT_SUPPORTED, status_of("no-such-provider"));
    EXPECT_STATUS(STATUS_NOT_SUPPORTED, status_of("/nonexistent/libndk_provider.so"));
    // A real shared object that does not export NdkHarnessGetProvider: the C library.
    Dl_info libc{};
    ASSERT_NE(dladdr(reinterpret_cast<void *>(&std::printf), &libc), 0);
    ASSERT_NE(libc.dli_fname, nullptr);
    ASSERT_NE(std::string(libc.dli_fname).find('/'), std::string::npos) << libc.dli_fname;
    EXPECT_STATUS(STATUS_NOT_SUPPORTED, status_of(libc.dli_fname));
    EXPECT_STATUS(STATUS_NOT_SUPPORTED, open_status("/nonexistent/libndk_provider.so", "", {2, 0}));
}

TEST(OpenRaw, SeveralAdaptersOnOneMiniportEachNegotiate)
{
    RawAdapter first("", {2, 0});
    NDIS_OPEN_NDK_ADAPTER_PARAMETERS parameters{};
    parameters.Version = {1, 0};
    NDK_ADAPTER *second = nullptr;
    ASSERT_STATUS(NDIS_STATUS_SUCCESS, first.entry().Characteristics.OpenNDKAdapterHandler(
                                           first.miniport(), &parameters, &second));
    ASSERT_NE(second, nullptr);
    EXPECT_NE(second, first.get());
    EXPECT_EQ(first.get()->Header.Version.Major, 2);
    EXPECT_EQ(second->Header.Version.Major, 1);
    EXPECT_EQ(second->Header.Version.Minor, 2);
    NDK_ADAPTER *third = reinterpret_cast<NDK_ADAPTER *>(uintptr_t{0x1234});
    parameters.Version = {1, 3};
    EXPECT_STATUS(NDIS_STATUS_BAD_VERSION, first.entry().Characteristics.OpenNDKAdapterHandler(
                                               first.miniport(), &parameters, &third));
    EXPECT_EQ(third, reinterpret_cast<NDK_ADAPTER *>(uintptr_t{0x1234})) << "failed open wrote out";
    first.entry().Characteristics.CloseNDKAdapterHandler(first.miniport(), second);
}

template <class T>
void expect_header(T *object, NDK_OBJECT_TYPE type, NDK_VERSION version, const char *what)
{
    ASSERT_NE(object, nullptr) << what;
    const NDK_OBJECT_HEADER &h = object->Header;
    EXPECT_EQ(h.ObjectType, type) << what;
    EXPECT_EQ(h.Version.Major, version.Major) << what;
    EXPECT_EQ(h.Version.Minor, version.Minor) << what;
    for (PVOID reserved : h.NdkReserved.rf)
        EXPECT_EQ(reserved, nullptr) << what << ": NdkReserved must be zeroed";
    EXPECT_NE(object->Dispatch, nullptr) << what;
    // No standard extension interfaces exist (digest 1.1).
    GUID id{};
    NDK_EXTENSION_INTERFACE ext{};
    EXPECT_STATUS(STATUS_NOT_SUPPORTED,
                  object->Dispatch->NdkQueryExtension(const_cast<NDK_OBJECT_HEADER *>(&h), &id,
                                                      NDK_VERSION{1, 0}, &ext))
        << what;
}

// Every object is created with the adapter's reported version, its type, NdkReserved zeroed
// and Dispatch set (digest 1.0), inline or pending, for 1.x and 2.x adapters.
TEST(ObjectHeaders, EveryObjectCarriesTheReportedVersionAndItsType)
{
    const std::pair<std::string, NDK_VERSION> cases[] = {
        {"inline", {1, 0}}, {"inline", {2, 0}}, {"pending", {1, 1}}, {"pending", {2, 1}}};
    for (const auto &[create_mode, requested] : cases) {
        SCOPED_TRACE(create_mode + " " + std::to_string(requested.Major));
        RawAdapter a("create_mode=" + create_mode, requested);
        const NDK_VERSION v = a.info().Version;
        EXPECT_EQ(v.Major, requested.Major);
        expect_header(a.get(), NdkObjectTypeAdapter, v, "adapter");
        NDK_CQ *cq = a.cq();
        expect_header(cq, NdkObjectTypeCq, v, "CQ");
        NDK_PD *pd = a.pd();
        expect_header(pd, NdkObjectTypePd, v, "PD");
        ASSERT_TRUE(cq && pd);
        expect_header(a.mr(pd, false), NdkObjectTypeMr, v, "MR");
        expect_header(a.mr(pd, true), NdkObjectTypeMr, v, "fast-register MR");
        expect_header(a.mw(pd), NdkObjectTypeMw, v, "MW");
        NDK_SRQ *srq = a.srq(pd);
        expect_header(srq, NdkObjectTypeSrq, v, "SRQ");
        expect_header(a.qp(pd, cq, cq), NdkObjectTypeQp, v, "QP");
        expect_header(a.qp_srq(pd, cq, cq, srq), NdkObjectTypeQp, v, "QP with SRQ");
        expect_header(a.connector(), NdkObjectTypeConnector, v, "connector");
        expect_header(a.listener(), NdkObjectTypeListener, v, "listener");
        sockaddr_in any{};
        any.sin_family = AF_INET;
        ndktest::Record &r = a.record();
        NDK_SHARED_ENDPOINT *se = nullptr;
        NTSTATUS s = a.d().NdkCreateSharedEndpoint(a.get(), reinterpret_cast<SOCKADDR *>(&any),
                                                   sizeof any, ndktest::Record::create, &r, &se);
        expect_header(a.finish(s, r, se, "NdkCreateSharedEndpoint"), NdkObjectTypeSharedEndpoint, v,
                      "shared endpoint");
    }
}

// The validation layer stacks itself over the Provider object it is handed, here the soft
// provider loaded from its .so, with nothing in the registry knowing of the layer.  The
// layer's entry alone has no provider beneath it: its CreateMiniport says so.
TEST(ValidationLayer, WrapsTheProviderItIsHanded)
{
    auto wrapped = ndk::validate::wrap(ndk::Provider::load(NDK_SOFT_PROVIDER_LIBRARY));
    EXPECT_EQ(wrapped->name(), NDK_SOFT_PROVIDER_LIBRARY);
    const NDK_HARNESS_PROVIDER &layer = wrapped->entry();
    EXPECT_STREQ(layer.Name, "validate");
    char error[256] = {};
    NDIS_HANDLE miniport = nullptr;
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  layer.CreateMiniport("max_cq_depth=100\n", error, sizeof error, &miniport));
    EXPECT_NE(std::string(error).find("ndk::validate::wrap"), std::string::npos) << error;
    EXPECT_EQ(miniport, nullptr);

    ASSERT_STATUS(NDIS_STATUS_SUCCESS,
                  wrapped->create_miniport("max_cq_depth=100\n", error, sizeof error, &miniport));
    ASSERT_NE(miniport, nullptr);
    ASSERT_NE(ndk::validate::session_of(*wrapped, miniport), nullptr);
    // The soft provider's own knob reached it through the layer, and reads back through it.
    char reply[64] = {};
    ASSERT_STATUS(STATUS_SUCCESS,
                  layer.ControlMiniport(miniport, "max_cq_depth", nullptr, reply, sizeof reply));
    EXPECT_STREQ(reply, "100");
    layer.DestroyMiniport(miniport);
}

// "NAME:QUALIFIER" is what the provider declares it to mean (its BuiltinProvider): soft:tcp is
// soft with transport=tcp; loop takes no qualifier.  A run's own shm fabric is the soft
// provider's need with transport=shm, however the run spells the transport.
TEST(Registry, QualifiersAndRunScopedKnobsAreTheProvidersOwn)
{
    auto tcp = ndk::Provider::load("soft:tcp");
    EXPECT_EQ(tcp->name(), "soft:tcp");
    EXPECT_EQ(tcp->options(), "transport=tcp\n");
    EXPECT_EQ(&tcp->entry(), &ndk::Provider::load("soft")->entry());
    EXPECT_THROW(ndk::Provider::load("loop:x"), ndk::Error);
    EXPECT_THROW(ndk::Provider::load("soft:"), ndk::Error);

    const std::vector<std::string> fabric{"shm_fabric"};
    EXPECT_EQ(ndk::Provider::load("soft:shm")->run_scoped_knobs(""), fabric);
    EXPECT_EQ(ndk::Provider::load("soft")->run_scoped_knobs("transport=shm"), fabric);
    EXPECT_EQ(ndk::Provider::load("soft")->run_scoped_knobs("transport=shm;shm_fabric=mine"),
              std::vector<std::string>{});
    EXPECT_EQ(ndk::Provider::load("soft")->run_scoped_knobs("transport=tcp"),
              std::vector<std::string>{});
    EXPECT_EQ(ndk::Provider::load("loop")->run_scoped_knobs("transport=shm"),
              std::vector<std::string>{});
    EXPECT_EQ(ndk::Provider::load(NDK_SOFT_PROVIDER_LIBRARY)->run_scoped_knobs("transport=shm"),
              std::vector<std::string>{}); // by path: a provider the harness knows nothing of
}

} // namespace
