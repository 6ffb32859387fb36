// The knobs: the soft provider's (core/src/providers/soft/soft_knobs.{hpp,cpp}: adapter info
// overrides, caps, version limits) and the fault layer's (core/src/layers/fault/: the
// injected-failure table, completion-mode decisions, seeded), and the one knob table that
// documents both.  Unit tests of the classes themselves; the adapter-level effects are in the
// create/registry/fault-layer suites.
#include "support.hpp"

#include "layers/fault/fault_layer.hpp"
#include "providers/kit/kit_functions.hpp"
#include "providers/kit/kit_knob_docs.hpp"
#include "providers/soft/soft_knobs.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using ndk::fault::Injection;
using ndk::soft::Knobs;
using Kind = Injection::Kind;

template <class K>
NTSTATUS set(K &k, const std::string &key, const std::string &value)
{
    std::string error;
    return k.set(key, value, error);
}

template <class K>
std::string get(const K &k, const std::string &key)
{
    std::string value;
    EXPECT_STATUS(STATUS_SUCCESS, k.get(key, value)) << key;
    return value;
}

std::vector<bool> decisions(Injection &k, Kind kind, int n)
{
    std::vector<bool> out;
    for (int i = 0; i < n; ++i)
        out.push_back(k.should_pend(kind));
    return out;
}

TEST(Knobs, DefaultsInlineNothingArmedPlausibleInfo)
{
    Injection layer;
    EXPECT_EQ(get(layer, "create_mode"), "inline");
    EXPECT_EQ(get(layer, "request_mode"), "inline");
    EXPECT_EQ(get(layer, "close_mode"), "inline");
    EXPECT_EQ(get(layer, "fail"), "");
    for (auto kind : {Kind::Create, Kind::Request, Kind::Close})
        EXPECT_FALSE(layer.should_pend(kind));
    EXPECT_FALSE(layer.take_failure("NdkCreateCq"));
    Knobs k;
    EXPECT_EQ(get(k, "adapter_not_ready"), "0");
    EXPECT_EQ(get(k, "ephemeral_ports"), "49152-65535"); // digest 1.1
    EXPECT_FALSE(k.adapter_not_ready());
    auto caps = k.caps();
    EXPECT_EQ(caps.max_cq, 0u);
    EXPECT_EQ(caps.max_qp, 0u);
    {
        Knobs k;
        NDK_ADAPTER_INFO info = k.adapter_info({2, 1});
        EXPECT_EQ(info.Version.Major, 2);
        EXPECT_EQ(info.Version.Minor, 1);
        EXPECT_GE(info.FRMRPageCount, 16u); // "Must be >= 16" (digest 2.1)
        EXPECT_GT(info.MaxSrqDepth, 0u);
        EXPECT_GT(info.MaxCqDepth, 0u);
        EXPECT_GT(info.MaxInlineDataSize, 0u);
        EXPECT_TRUE(info.AdapterFlags & NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED);
        EXPECT_TRUE(info.AdapterFlags & NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED);
        EXPECT_GT(info.RdmaTechnology, NdkUndefined);
        EXPECT_LT(info.RdmaTechnology, NdkMaxTechnology);
    }
}

TEST(Knobs, CompletionModesAndUnknownKeys)
{
    Injection k;
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "create_mode", "pending"));
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "request_mode", "random"));
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "close_mode", "pending"));
    EXPECT_EQ(get(k, "create_mode"), "pending");
    EXPECT_EQ(get(k, "request_mode"), "random");
    EXPECT_EQ(get(k, "close_mode"), "pending");
    EXPECT_TRUE(k.should_pend(Kind::Create));
    EXPECT_TRUE(k.should_pend(Kind::Close));

    std::string error;
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, k.set("create_mode", "sometimes", error));
    EXPECT_NE(error.find("inline, pending or random"), std::string::npos) << error;
    EXPECT_EQ(get(k, "create_mode"), "pending"); // unchanged by the rejected value
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, set(k, "close_mode", "Pending"));
    {
        Knobs k;
        std::string value;
        EXPECT_STATUS(STATUS_NOT_SUPPORTED, set(k, "no_such_knob", "1"));
        EXPECT_STATUS(STATUS_NOT_SUPPORTED, k.get("no_such_knob", value));
        EXPECT_STATUS(STATUS_NOT_SUPPORTED, set(k, "", "1"));
        // The completion modes are the fault layer's: the soft provider does not know them.
        EXPECT_STATUS(STATUS_NOT_SUPPORTED, set(k, "create_mode", "pending"));
        EXPECT_STATUS(STATUS_NOT_SUPPORTED, set(k, "fail", "NdkCreatePd INSUFFICIENT_RESOURCES"));
    }
}

TEST(Knobs, ApplyParsesLinesAndSemicolons)
{
    Knobs k;
    std::string error;
    EXPECT_STATUS(
        STATUS_SUCCESS,
        k.apply("max_qp_count=3;rnr_timeout_ms=7\n\n  \nmax_cq_depth=0x40", error))
        << error;
    EXPECT_EQ(get(k, "max_qp_count"), "3");
    EXPECT_EQ(get(k, "rnr_timeout_ms"), "7");
    EXPECT_EQ(k.adapter_info({2, 1}).MaxCqDepth, 64u);
    EXPECT_STATUS(STATUS_SUCCESS, k.apply("", error));
}

TEST(Knobs, ApplyReportsTheFirstBadLine)
{
    Knobs k;
    std::string error;
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, k.apply("max_qp_count", error));
    EXPECT_NE(error.find("no '='"), std::string::npos) << error;

    error.clear();
    EXPECT_STATUS(STATUS_NOT_SUPPORTED, k.apply("max_qp_count=2;bogus=1", error));
    EXPECT_EQ(error, "unknown knob 'bogus'");

    error.clear();
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, k.apply("max_cq_depth=lots", error));
    EXPECT_NE(error.find("max_cq_depth"), std::string::npos) << error;
}

TEST(Knobs, AdapterInfoOverrides)
{
    Knobs k;
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "max_cq_depth", "128"));
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "frmr_page_count", "0x20"));
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "max_registration_size", "0x100000000")); // SIZE_T
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "adapter_flags", "0"));
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "rdma_technology", "4"));
    NDK_ADAPTER_INFO info = k.adapter_info({1, 2});
    EXPECT_EQ(info.MaxCqDepth, 128u);
    EXPECT_EQ(info.FRMRPageCount, 32u);
    EXPECT_EQ(info.MaxRegistrationSize, SIZE_T{1} << 32);
    EXPECT_EQ(info.AdapterFlags, 0u);
    EXPECT_EQ(info.RdmaTechnology, NdkRoCEv2);
    EXPECT_EQ(get(k, "max_cq_depth"), "128");
    EXPECT_EQ(get(k, "max_registration_size"), "4294967296");

    // A 32-bit field rejects what does not fit; numbers are strict.
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, set(k, "max_cq_depth", "4294967296"));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, set(k, "max_cq_depth", "-1"));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, set(k, "max_cq_depth", "12x"));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, set(k, "max_cq_depth", ""));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, set(k, "max_cq_depth", "0x"));
    EXPECT_EQ(k.adapter_info({1, 2}).MaxCqDepth, 128u);
}

TEST(Knobs, ObjectCapsParse)
{
    Knobs k;
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "max_qp_count", "1"));
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "max_cq_count", "2"));
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "max_mr_count", "3"));
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "max_pd_count", "4"));
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "max_mw_count", "5"));
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "max_srq_count", "6"));
    auto caps = k.caps();
    EXPECT_EQ(caps.max_qp, 1u);
    EXPECT_EQ(caps.max_cq, 2u);
    EXPECT_EQ(caps.max_mr, 3u);
    EXPECT_EQ(caps.max_pd, 4u);
    EXPECT_EQ(caps.max_mw, 5u);
    EXPECT_EQ(caps.max_srq, 6u);
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, set(k, "max_qp_count", "many"));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, set(k, "max_qp_count", "4294967296"));
}

// provider.h: ControlMiniport "Set a knob (Value != NULL) or read it (Value == NULL)"; only
// an unknown key is STATUS_NOT_SUPPORTED.  A value knob that can be set must read back.
TEST(Knobs, EverySettableValueKnobReadsBack)
{
    Injection layer;
    const std::pair<const char *, const char *> layer_knobs[] = {
        {"create_mode", "pending"}, {"request_mode", "random"}, {"close_mode", "pending"},
        {"seed", "9"},              {"misbehave", "notify_twice"},
    };
    for (const auto &[key, value] : layer_knobs) {
        ASSERT_STATUS(STATUS_SUCCESS, set(layer, key, value)) << key;
        EXPECT_EQ(get(layer, key), value) << key;
    }
    Knobs k;
    const std::pair<const char *, const char *> knobs[] = {
        {"adapter_not_ready", "1"},  {"ephemeral_ports", "100-200"},
        {"provider_version", "1.1"}, {"max_cq_depth", "77"},
        {"max_qp_count", "3"},       {"max_cq_count", "4"},
        {"max_mr_count", "5"},       {"max_pd_count", "6"},
        {"max_mw_count", "7"},       {"max_srq_count", "8"},
    };
    for (const auto &[key, value] : knobs) {
        ASSERT_STATUS(STATUS_SUCCESS, set(k, key, value)) << key;
        std::string read;
        EXPECT_STATUS(STATUS_SUCCESS, k.get(key, read)) << key << " can be set but not read";
        EXPECT_EQ(read, value) << key;
    }
}

TEST(KnobsFail, ArmsOneInlineFailureByDefault)
{
    Injection k;
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "fail", "NdkCreateCq STATUS_INSUFFICIENT_RESOURCES"));
    EXPECT_EQ(get(k, "fail"), "NdkCreateCq STATUS_INSUFFICIENT_RESOURCES inline 1\n");
    auto failure = k.take_failure("NdkCreateCq");
    ASSERT_TRUE(failure);
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, failure->status);
    EXPECT_FALSE(failure->async);
    EXPECT_FALSE(k.take_failure("NdkCreateCq")); // count 1: used up
    EXPECT_FALSE(k.take_failure("NdkCreatePd")); // other functions unaffected
    EXPECT_EQ(get(k, "fail"), "");
}

TEST(KnobsFail, CountsAsyncAndEveryCall)
{
    Injection k;
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "fail", "NdkRegisterMr INSUFFICIENT_RESOURCES async 2"));
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "fail", "NdkCreatePd 0xC000009A inline -1"));
    for (int i = 0; i < 2; ++i) {
        auto failure = k.take_failure("NdkRegisterMr");
        ASSERT_TRUE(failure) << i;
        EXPECT_TRUE(failure->async);
        EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, failure->status);
    }
    EXPECT_FALSE(k.take_failure("NdkRegisterMr"));
    for (int i = 0; i < 10; ++i)
        EXPECT_TRUE(k.take_failure("NdkCreatePd")) << i;
    EXPECT_EQ(get(k, "fail"), "NdkCreatePd STATUS_INSUFFICIENT_RESOURCES inline -1\n");
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "clear_failures", ""));
    EXPECT_FALSE(k.take_failure("NdkCreatePd"));
}

TEST(KnobsFail, RearmingAFunctionReplacesItsFailure)
{
    Injection k;
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "fail", "NdkCreateMr INSUFFICIENT_RESOURCES inline 5"));
    EXPECT_STATUS(STATUS_SUCCESS, set(k, "fail", "NdkCreateMr NOT_SUPPORTED async 1"));
    auto failure = k.take_failure("NdkCreateMr");
    ASSERT_TRUE(failure);
    EXPECT_STATUS(STATUS_NOT_SUPPORTED, failure->status);
    EXPECT_TRUE(failure->async);
    EXPECT_FALSE(k.take_failure("NdkCreateMr"));
}

TEST(KnobsFail, RejectsMalformedSpecifications)
{
    Injection k;
    const char *bad[] = {
        "",                                                  // nothing
        "NdkCreateCq",                                       // no status
        "NdkCreateCq INSUFFICIENT_RESOURCES inline 1 extra", // too many words
        "NdkArmCq INSUFFICIENT_RESOURCES",                   // returns VOID
        "NdkGetCqResults INSUFFICIENT_RESOURCES",            // returns a count
        "CreateCq INSUFFICIENT_RESOURCES",                   // not an NDK name
        "NdkCreateCq NO_SUCH_STATUS",                        // unknown status
        "NdkCreateCq STATUS_SUCCESS",                        // not a failure
        "NdkCreateCq STATUS_PENDING",                        // not a failure
        "NdkCreateCq INSUFFICIENT_RESOURCES later",          // mode
        "NdkCreateCq INSUFFICIENT_RESOURCES inline 0",       // count
        "NdkCreateCq INSUFFICIENT_RESOURCES inline -2",
        "NdkCreateCq INSUFFICIENT_RESOURCES inline two",
        // Inline-only functions have no completion to fail through.
        "NdkQueryAdapterInfo INSUFFICIENT_RESOURCES async",
        "NdkControlCqInterruptModeration INSUFFICIENT_RESOURCES async",
        "NdkReject CONNECTION_ABORTED async",
        "NdkGetConnectionData INSUFFICIENT_RESOURCES async",
        "NdkQueryExtension NOT_SUPPORTED async",
    };
    for (const char *spec : bad) {
        std::string error;
        EXPECT_STATUS(STATUS_INVALID_PARAMETER, k.set("fail", spec, error)) << spec;
        EXPECT_FALSE(error.empty()) << spec;
    }
    EXPECT_EQ(get(k, "fail"), "");
    // The inline form of an inline-only function is fine.
    EXPECT_STATUS(STATUS_SUCCESS,
                  set(k, "fail", "NdkControlCqInterruptModeration INSUFFICIENT_RESOURCES inline"));
}

TEST(KnobsFail, FallibleFunctionList)
{
    auto fallible = [](const char *name) {
        const ndk::kit::NdkFunction *function = ndk::kit::find_function(name);
        return function != nullptr && function->injectable;
    };
    for (const char *name : {"NdkCreateCq", "NdkCreatePd", "NdkCreateQp", "NdkCreateQpWithSrq",
                             "NdkRegisterMr", "NdkBuildLAM", "NdkResizeCq", "NdkModifySrq",
                             "NdkListen", "NdkAcceptEx", "NdkCompleteConnectEx"})
        EXPECT_TRUE(fallible(name)) << name;
    for (const char *name : {"NdkArmCq", "NdkFlush", "NdkReleaseLAM", "NdkGetCqResultsEx",
                             "NdkControlConnectEvents", "NdkGetPrivilegedMemoryRegionToken", ""})
        EXPECT_FALSE(fallible(name)) << name;
}

TEST(KnobsModes, RandomIsReproducibleAndKindsAreIndependent)
{
    Injection a, b, c;
    for (Injection *k : {&a, &b, &c})
        ASSERT_STATUS(STATUS_SUCCESS, set(*k, "create_mode", "random"));
    ASSERT_STATUS(STATUS_SUCCESS, set(a, "seed", "42"));
    ASSERT_STATUS(STATUS_SUCCESS, set(b, "seed", "42"));
    ASSERT_STATUS(STATUS_SUCCESS, set(c, "seed", "43"));
    auto first = decisions(a, Kind::Create, 128);
    EXPECT_EQ(first, decisions(b, Kind::Create, 128));
    EXPECT_NE(first, decisions(c, Kind::Create, 128));
    // Both outcomes occur.
    EXPECT_NE(std::count(first.begin(), first.end(), true), 0);
    EXPECT_NE(std::count(first.begin(), first.end(), false), 0);
    // Setting the seed again restarts the sequence.
    ASSERT_STATUS(STATUS_SUCCESS, set(a, "seed", "42"));
    EXPECT_EQ(decisions(a, Kind::Create, 128), first);
    EXPECT_EQ(get(a, "seed"), "42");
    Injection k;
    ASSERT_STATUS(STATUS_SUCCESS, set(k, "request_mode", "pending"));
    EXPECT_EQ(decisions(k, Kind::Request, 5), std::vector<bool>(5, true));
    EXPECT_EQ(decisions(k, Kind::Create, 5), std::vector<bool>(5, false));
    EXPECT_EQ(decisions(k, Kind::Close, 5), std::vector<bool>(5, false));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, set(k, "seed", "forty-two"));
}

TEST(KnobsVersions, HighestMinorsAndProviderVersion)
{
    Knobs k;
    EXPECT_EQ(k.highest_minor(1), std::optional<USHORT>(2)); // NDKPI 1.2
    EXPECT_EQ(k.highest_minor(2), std::optional<USHORT>(1)); // NDKPI 2.1
    EXPECT_FALSE(k.highest_minor(0));
    EXPECT_FALSE(k.highest_minor(3));
    {
        Knobs k;
        ASSERT_STATUS(STATUS_SUCCESS, set(k, "provider_version", "1.1"));
        EXPECT_EQ(get(k, "provider_version"), "1.1");
        EXPECT_EQ(k.highest_minor(1), std::optional<USHORT>(1));
        EXPECT_FALSE(k.highest_minor(2));
        for (const char *bad : {"1", "x.y", "0.1", "1.70000", "1,1", ""})
            EXPECT_STATUS(STATUS_INVALID_PARAMETER, set(k, "provider_version", bad)) << bad;
        EXPECT_EQ(get(k, "provider_version"), "1.1");
    }
}

// "expected MAJOR.MINOR": trailing text is not part of that form, and numeric knobs elsewhere
// reject it ("12x" above).
TEST(KnobsVersions, ProviderVersionRejectsTrailingText)
{
    Knobs k;
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, set(k, "provider_version", "1.2junk"));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, set(k, "provider_version", "2.1.5"));
}

TEST(KnobsMisc, EphemeralPortsAdapterNotReadyAndAddress)
{
    Knobs k;
    ASSERT_STATUS(STATUS_SUCCESS, set(k, "ephemeral_ports", "50000-50010"));
    EXPECT_EQ(k.ephemeral_ports(), (std::pair<uint16_t, uint16_t>{50000, 50010}));
    EXPECT_EQ(get(k, "ephemeral_ports"), "50000-50010");
    ASSERT_STATUS(STATUS_SUCCESS, set(k, "ephemeral_ports", "7-7"));
    for (const char *bad : {"0-10", "10-5", "1-70000", "abc", "100", "100:200"})
        EXPECT_STATUS(STATUS_INVALID_PARAMETER, set(k, "ephemeral_ports", bad)) << bad;
    EXPECT_EQ(k.ephemeral_ports(), (std::pair<uint16_t, uint16_t>{7, 7}));
    {
        Knobs k;
        ASSERT_STATUS(STATUS_SUCCESS, set(k, "adapter_not_ready", "1"));
        EXPECT_TRUE(k.adapter_not_ready());
        ASSERT_STATUS(STATUS_SUCCESS, set(k, "adapter_not_ready", "0"));
        EXPECT_FALSE(k.adapter_not_ready());
        ASSERT_STATUS(STATUS_SUCCESS, set(k, "adapter_not_ready", "true"));
        EXPECT_TRUE(k.adapter_not_ready());
        ASSERT_STATUS(STATUS_SUCCESS, set(k, "address", "192.0.2.1,2001:db8::1"));
        EXPECT_EQ(k.addresses(), "192.0.2.1,2001:db8::1");
        EXPECT_EQ(get(k, "address"), "192.0.2.1,2001:db8::1");
    }
}

// A boolean knob that silently reads an unrecognised word as "false" hides typos; every other
// knob rejects a value it cannot parse with STATUS_INVALID_PARAMETER (provider.h).
TEST(KnobsMisc, AdapterNotReadyRejectsUnrecognisedValues)
{
    Knobs k;
    ASSERT_STATUS(STATUS_SUCCESS, set(k, "adapter_not_ready", "1"));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, set(k, "adapter_not_ready", "yes please"));
    EXPECT_TRUE(k.adapter_not_ready()) << "a rejected value must leave the knob unchanged";
}

} // namespace

namespace {

// docs/knobs.md's knob table is the fault layer's table's rows, then the soft provider's,
// between the two markers.  Set NDK_REGENERATE_DOCS=1 to rewrite it from the tables (then
// commit the file).
TEST(KnobTable, DocsKnobsMdIsTheTablesMarkdown)
{
    const std::string path = std::string(NDK_SOURCE_DIR) + "/docs/knobs.md";
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::stringstream whole;
    whole << in.rdbuf();
    std::string text = whole.str();
    const std::string begin = "<!-- knob table: generated from core/src/layers/fault/"
                              "fault_knob_table.cpp and core/src/providers/soft/"
                              "soft_knob_table.cpp -->\n";
    const std::string end = "<!-- end of the knob table -->\n";
    size_t from = text.find(begin), to = text.find(end);
    ASSERT_NE(from, std::string::npos) << "marker missing in " << path;
    ASSERT_NE(to, std::string::npos) << "marker missing in " << path;
    from += begin.size();
    const std::string generated = ndk::kit::knob_markdown_header() +
                                  Injection::knob_table_markdown() +
                                  ndk::soft::knob_table_markdown();
    if (std::getenv("NDK_REGENERATE_DOCS") != nullptr) {
        text.replace(from, to - from, generated);
        std::ofstream(path) << text;
        return;
    }
    EXPECT_EQ(text.substr(from, to - from), generated)
        << "docs/knobs.md differs from the knob tables: regenerate it with\n"
           "    NDK_REGENERATE_DOCS=1 build/tests/ndk_unit_tests "
           "--gtest_filter=KnobTable.DocsKnobsMdIsTheTablesMarkdown";
}

// The two tables share no knob but `misbehave`, whose names they split (docs/knobs.md's
// misbehave table), and `knobs`, which each answers for its own: the soft provider answers
// none of the layer's knobs, and every knob of the layer's table is one the layer acts.
TEST(KnobTable, TheLayersKnobsAreInItsTableAlone)
{
    std::vector<std::string> soft = ndk::soft::knob_names();
    std::set<std::string> provider(soft.begin(), soft.end());
    Knobs knobs;
    Injection layer;
    for (const std::string &name : Injection::knob_names()) {
        EXPECT_TRUE(Injection::is_knob(name)) << name;
        std::string value;
        EXPECT_STATUS(STATUS_SUCCESS, layer.get(name, value)) << name;
        if (name == "misbehave")
            continue;
        EXPECT_EQ(provider.count(name), 0u) << name << " is in both tables";
        EXPECT_STATUS(STATUS_NOT_SUPPORTED, knobs.get(name, value)) << name;
    }
    EXPECT_FALSE(Injection::is_knob("knobs")); // the fault layer's entry lists both sides
}

// Every knob set() and get() know is in the table once, and the listing the `knobs` knob gives
// names each row's knobs.
TEST(KnobTable, EveryKnobIsOneRow)
{
    std::vector<std::string> names = ndk::soft::knob_names();
    std::set<std::string> unique(names.begin(), names.end());
    EXPECT_EQ(unique.size(), names.size());
    for (const std::string &name : names) {
        int rows = 0;
        for (const auto &spec : ndk::soft::knob_table())
            rows += ndk::soft::covers(spec, name) ? 1 : 0;
        EXPECT_EQ(rows, 1) << name;
    }
    Knobs k;
    std::string value;
    EXPECT_STATUS(STATUS_SUCCESS, k.get("max_cq_depth", value)); // an NDK_ADAPTER_INFO field
    EXPECT_STATUS(STATUS_NOT_SUPPORTED, k.get("no_such_knob", value));
}

} // namespace
