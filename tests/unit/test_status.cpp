// NTSTATUS names and parsing (core/include/ndk/status.hpp) and the exception types that carry
// a status (core/include/ndk/call.hpp).
#include "ndk/call.hpp"
#include "ndk/status.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace {

TEST(StatusNames, KnownValuesHaveTheirFullName)
{
    EXPECT_EQ(ndk::status_name(STATUS_SUCCESS), "STATUS_SUCCESS");
    EXPECT_EQ(ndk::status_name(STATUS_PENDING), "STATUS_PENDING");
    EXPECT_EQ(ndk::status_name(STATUS_INVALID_PARAMETER_MIX), "STATUS_INVALID_PARAMETER_MIX");
    EXPECT_EQ(ndk::status_name(STATUS_IMPLEMENTATION_LIMIT), "STATUS_IMPLEMENTATION_LIMIT");
    EXPECT_EQ(ndk::status_name(STATUS_CANCELLED), "STATUS_CANCELLED");
    EXPECT_EQ(ndk::status_name(NDIS_STATUS_BAD_VERSION), "NDIS_STATUS_BAD_VERSION");
    EXPECT_EQ(ndk::status_name(NDIS_STATUS_ADAPTER_NOT_READY), "NDIS_STATUS_ADAPTER_NOT_READY");
    // NDIS_STATUS_RESOURCES is STATUS_INSUFFICIENT_RESOURCES: one value, one name.
    EXPECT_EQ(ndk::status_name(NDIS_STATUS_RESOURCES), "STATUS_INSUFFICIENT_RESOURCES");
}

TEST(StatusNames, UnknownValuesAndDescribe)
{
    EXPECT_EQ(ndk::status_name(static_cast<NTSTATUS>(0xC0DE0001)), "0xC0DE0001");
    EXPECT_EQ(ndk::status_name(static_cast<NTSTATUS>(0x00000042)), "0x00000042");
    EXPECT_EQ(ndk::describe_status(STATUS_PENDING), "STATUS_PENDING (0x00000103)");
    EXPECT_EQ(ndk::describe_status(STATUS_BUFFER_TOO_SMALL),
              "STATUS_BUFFER_TOO_SMALL (0xC0000023)");
    EXPECT_EQ(ndk::describe_status(static_cast<NTSTATUS>(0xC0DE0001)), "0xC0DE0001 (0xC0DE0001)");
}

TEST(StatusParse, FullAndShortNames)
{
    EXPECT_EQ(ndk::parse_status("STATUS_PENDING"), STATUS_PENDING);
    EXPECT_EQ(ndk::parse_status("PENDING"), STATUS_PENDING);
    EXPECT_EQ(ndk::parse_status("STATUS_SUCCESS"), STATUS_SUCCESS);
    EXPECT_EQ(ndk::parse_status("SUCCESS"), STATUS_SUCCESS);
    EXPECT_EQ(ndk::parse_status("INSUFFICIENT_RESOURCES"), STATUS_INSUFFICIENT_RESOURCES);
    EXPECT_EQ(ndk::parse_status("NDIS_STATUS_BAD_VERSION"), NDIS_STATUS_BAD_VERSION);
    EXPECT_EQ(ndk::parse_status("BAD_VERSION"), NDIS_STATUS_BAD_VERSION);
    EXPECT_EQ(ndk::parse_status("ADAPTER_NOT_READY"), NDIS_STATUS_ADAPTER_NOT_READY);
    // "IO_TIMEOUT" must not be confused with "TIMEOUT".
    EXPECT_EQ(ndk::parse_status("TIMEOUT"), STATUS_TIMEOUT);
    EXPECT_EQ(ndk::parse_status("IO_TIMEOUT"), STATUS_IO_TIMEOUT);
}

TEST(StatusParse, Numbers)
{
    EXPECT_EQ(ndk::parse_status("0x103"), STATUS_PENDING);
    EXPECT_EQ(ndk::parse_status("0X103"), STATUS_PENDING);
    EXPECT_EQ(ndk::parse_status("259"), STATUS_PENDING);
    EXPECT_EQ(ndk::parse_status("0xC000009A"), STATUS_INSUFFICIENT_RESOURCES);
    EXPECT_EQ(ndk::parse_status("0xc000009a"), STATUS_INSUFFICIENT_RESOURCES);
    EXPECT_EQ(ndk::parse_status("0"), STATUS_SUCCESS);
    // A value without a name still parses.
    EXPECT_EQ(ndk::parse_status("0xC0DE0001"), static_cast<NTSTATUS>(0xC0DE0001));
}

TEST(StatusParse, RejectsGarbage)
{
    EXPECT_FALSE(ndk::parse_status(""));
    EXPECT_FALSE(ndk::parse_status("0x"));
    EXPECT_FALSE(ndk::parse_status("STATUS_"));
    EXPECT_FALSE(ndk::parse_status("status_pending")); // names are case-sensitive
    EXPECT_FALSE(ndk::parse_status("PENDING "));
    EXPECT_FALSE(ndk::parse_status("12abc"));
    EXPECT_FALSE(ndk::parse_status("0x1G"));
    EXPECT_FALSE(ndk::parse_status("-1"));
    EXPECT_FALSE(ndk::parse_status("4294967296")); // does not fit 32 bits
    EXPECT_FALSE(ndk::parse_status("0x100000000"));
}

TEST(StatusTable, NamesAndValuesAreUniqueAndRoundTrip)
{
    std::set<NTSTATUS> values;
    std::set<std::string> names;
    std::set<std::string> short_names;
    ASSERT_GE(ndk::status_table().size(), 50u);
    for (const auto &entry : ndk::status_table()) {
        EXPECT_TRUE(values.insert(entry.value).second) << entry.name << " value repeated";
        EXPECT_TRUE(names.insert(entry.name).second) << entry.name << " name repeated";
        std::string full = entry.name;
        std::string brief = full.starts_with("NDIS_STATUS_") ? full.substr(12)
                            : full.starts_with("STATUS_")    ? full.substr(7)
                                                             : full;
        EXPECT_TRUE(short_names.insert(brief).second) << brief << " short name repeated";
        EXPECT_EQ(ndk::status_name(entry.value), full);
        EXPECT_EQ(ndk::parse_status(full), entry.value) << full;
        EXPECT_EQ(ndk::parse_status(brief), entry.value) << brief;
    }
}

TEST(StatusErrors, ErrorCarriesStatusAndName)
{
    ndk::Error plain(STATUS_INVALID_PARAMETER);
    EXPECT_EQ(plain.status(), STATUS_INVALID_PARAMETER);
    EXPECT_STREQ(plain.what(), "STATUS_INVALID_PARAMETER (0xC000000D)");

    ndk::Error with_context(NDIS_STATUS_BAD_VERSION, "OpenNDKAdapterHandler(version 3.0)");
    EXPECT_EQ(with_context.status(), NDIS_STATUS_BAD_VERSION);
    EXPECT_STREQ(with_context.what(),
                 "OpenNDKAdapterHandler(version 3.0): NDIS_STATUS_BAD_VERSION (0xC0010004)");

    ndk::KnobError knob(STATUS_NOT_SUPPORTED, "unknown knob");
    const ndk::Error &as_error = knob;
    EXPECT_EQ(as_error.status(), STATUS_NOT_SUPPORTED);
    EXPECT_NE(std::string(knob.what()).find("unknown knob"), std::string::npos);

    ndk::ClosedError closed("CQ is closed");
    const std::logic_error &as_logic = closed;
    EXPECT_STREQ(as_logic.what(), "CQ is closed");
}

} // namespace
