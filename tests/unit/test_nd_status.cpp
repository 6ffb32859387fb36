// The ND equivalent of an NDK completion status (core/include/ndk/nd_status.hpp): the ND_RESULT
// table's rows, the twin rule of digest 4.1 and the ND-NO-TWIN choice of docs/semantics.md.
#include "ndk/nd_result.hpp"
#include "ndk/nd_status.hpp"
#include "ndk/status.hpp"

#include <gtest/gtest.h>

#include <iterator>
#include <set>
#include <string>

namespace {

// The mapping is usable at compile time (it is one constexpr function over constexpr tables).
static_assert(ndk::nd_status_of(STATUS_REMOTE_RESOURCES).name == "ND_REMOTE_ERROR");
static_assert(ndk::nd_status_of(STATUS_DATA_OVERRUN).v1_alias == "ND_LOCAL_LENGTH");
static_assert(!ndk::nd_status_of(STATUS_CONNECTION_RESET).twin);

struct Row {
    NTSTATUS ndk_status;
    NTSTATUS nd_value;
    const char *name;
    const char *v1_alias;
};

// The ND_RESULT status table, each row from the NDK completion status that produces it.
TEST(NdStatus, ResultTableRows)
{
    const Row rows[] = {
        {STATUS_SUCCESS, 0x00000000, "ND_SUCCESS", ""},
        {STATUS_DATA_OVERRUN, static_cast<NTSTATUS>(0xC000003C), "ND_DATA_OVERRUN",
         "ND_LOCAL_LENGTH"},
        {STATUS_BUFFER_OVERFLOW, static_cast<NTSTATUS>(0x80000005), "ND_BUFFER_OVERFLOW", ""},
        {STATUS_ACCESS_VIOLATION, static_cast<NTSTATUS>(0xC0000005), "ND_ACCESS_VIOLATION", ""},
        {STATUS_CANCELLED, static_cast<NTSTATUS>(0xC0000120), "ND_CANCELED", ""},
        {STATUS_TIMEOUT, 0x00000102, "ND_TIMEOUT", ""},
        {STATUS_REMOTE_RESOURCES, static_cast<NTSTATUS>(0xC000013D), "ND_REMOTE_ERROR", ""},
        {STATUS_INVALID_DEVICE_REQUEST, static_cast<NTSTATUS>(0xC0000010),
         "ND_INVALID_DEVICE_REQUEST", "ND_INVALIDATION_ERROR"},
    };
    for (const Row &row : rows) {
        const ndk::NdStatus nd = ndk::nd_status_of(row.ndk_status);
        EXPECT_EQ(nd.value, row.nd_value) << row.name;
        EXPECT_EQ(nd.name, row.name);
        EXPECT_EQ(nd.v1_alias, row.v1_alias) << row.name;
        EXPECT_TRUE(nd.twin) << row.name;
    }
}

// docs/semantics.md ND-TIMEOUT: a timed-out request's STATUS_IO_TIMEOUT is ND_IO_TIMEOUT, an
// error; ND_TIMEOUT is the success code STATUS_TIMEOUT.
TEST(NdStatus, IoTimeoutIsNotTimeout)
{
    const ndk::NdStatus nd = ndk::nd_status_of(STATUS_IO_TIMEOUT);
    EXPECT_EQ(nd.value, static_cast<NTSTATUS>(0xC00000B5));
    EXPECT_EQ(nd.name, "ND_IO_TIMEOUT");
    EXPECT_NE(nd.value, ND_TIMEOUT);
}

// digest 4.1: every ND code is the NTSTATUS of the same name (ND_CANCELED spells CANCELLED
// with one L; ND_REMOTE_ERROR has STATUS_REMOTE_RESOURCES's number), and maps to itself.
TEST(NdStatus, EveryCodeIsItsTwinsNumberAndMapsToItself)
{
    std::set<NTSTATUS> values;
    std::set<std::string> names;
    for (const ndk::NdCode &code : ndk::kNdCodes) {
        EXPECT_TRUE(values.insert(code.value).second) << code.name << " value repeated";
        EXPECT_TRUE(names.insert(std::string(code.name)).second) << code.name;
        ASSERT_TRUE(code.name.starts_with("ND_")) << code.name;
        std::string twin = "STATUS_" + std::string(code.name.substr(3));
        if (code.value == ND_CANCELED)
            twin = "STATUS_CANCELLED";
        if (code.value == ND_REMOTE_ERROR)
            twin = "STATUS_REMOTE_RESOURCES";
        EXPECT_EQ(ndk::status_name(code.value), twin);
        const ndk::NdStatus nd = ndk::nd_status_of(code.value);
        EXPECT_EQ(nd.value, code.value) << code.name;
        EXPECT_EQ(nd.name, code.name);
        EXPECT_TRUE(nd.twin) << code.name;
    }
    EXPECT_EQ(values.size(), 44u); // digest 4.1: 34 codes and ND_INVALID_PARAMETER_1 ... _10
}

// The v1 aliases are second names of two codes, never codes of their own.
TEST(NdStatus, V1AliasesNameExistingCodes)
{
    ASSERT_EQ(std::size(ndk::kNdV1Aliases), 2u);
    for (const ndk::NdCode &alias : ndk::kNdV1Aliases) {
        const ndk::NdStatus nd = ndk::nd_status_of(alias.value);
        EXPECT_TRUE(nd.twin) << alias.name;
        EXPECT_EQ(nd.v1_alias, alias.name);
        EXPECT_NE(nd.name, alias.name);
    }
}

// docs/semantics.md ND-NO-TWIN: an NDK status no ND code has becomes ND_INTERNAL_ERROR.
TEST(NdStatus, StatusWithoutTwinIsInternalError)
{
    std::set<NTSTATUS> nd_values;
    for (const ndk::NdCode &code : ndk::kNdCodes)
        nd_values.insert(code.value);
    int without_twin = 0;
    for (const ndk::StatusName &entry : ndk::status_table()) {
        if (nd_values.contains(entry.value))
            continue;
        ++without_twin;
        const ndk::NdStatus nd = ndk::nd_status_of(entry.value);
        EXPECT_EQ(nd.value, ND_INTERNAL_ERROR) << entry.name;
        EXPECT_EQ(nd.name, "ND_INTERNAL_ERROR") << entry.name;
        EXPECT_TRUE(nd.v1_alias.empty()) << entry.name;
        EXPECT_FALSE(nd.twin) << entry.name;
    }
    // STATUS_BUFFER_TOO_SMALL, STATUS_CONNECTION_RESET, NDIS_STATUS_BAD_VERSION, ... are there.
    EXPECT_GE(without_twin, 10);
    const ndk::NdStatus unknown = ndk::nd_status_of(static_cast<NTSTATUS>(0xC0DE0001));
    EXPECT_EQ(unknown.value, ND_INTERNAL_ERROR);
    EXPECT_FALSE(unknown.twin);
    // ND_INTERNAL_ERROR itself is a twin: the flag tells the two apart.
    EXPECT_TRUE(ndk::nd_status_of(STATUS_INTERNAL_ERROR).twin);
}

// docs/semantics.md ND-RESULT-V1-ROWS: the ND_FAILURE row is every completion status outside
// the other nine, with no bytes.  Scenario ND-RESULT-FAILURE produces the row on soft:tcp
// alone (knob link_end=held, LINK-END); this checks the mapping for every such status: the
// ones soft:shm and soft:tcp complete with when a link ends mid-request (CONNECTION_ABORTED),
// the verbs provider's device failures (INTERNAL_ERROR), a resource, the generic failure and
// a code of a provider's own.
TEST(NdResult, StatusOutsideTheNineRowsIsNdFailure)
{
    const NTSTATUS outside[] = {STATUS_CONNECTION_ABORTED, STATUS_INTERNAL_ERROR,
                                STATUS_INSUFFICIENT_RESOURCES, STATUS_UNSUCCESSFUL,
                                STATUS_CONNECTION_RESET, static_cast<NTSTATUS>(0xC0DE0001)};
    const NDK_OPERATION_TYPE types[] = {NdkOperationTypeSend, NdkOperationTypeReceive,
                                        NdkOperationTypeRead, NdkOperationTypeWrite,
                                        NdkOperationTypeBind};
    for (NTSTATUS status : outside) {
        EXPECT_EQ(ndk::nd_result_status_of(status), ND_FAILURE) << std::hex << status;
        EXPECT_EQ(ndk::nd_result_name(ndk::nd_result_status_of(status)), "ND_FAILURE");
        for (NDK_OPERATION_TYPE type : types) {
            // A failed request moved nothing an ND consumer may count (ND-RESULT-BYTES); a
            // receive reports what NDK's BytesTransferred says, 0 for a failed one.
            const ND_RESULT r = ndk::nd_result_of(status, type, 0, 4096);
            EXPECT_EQ(r.Status, ND_FAILURE);
            EXPECT_EQ(r.BytesTransferred, 0u) << type;
        }
    }
    for (const ndk::NdResultRow &row : ndk::kNdResultRows) {
        if (row.value != ND_FAILURE) {
            EXPECT_NE(ndk::nd_result_status_of(row.value), ND_FAILURE) << row.name;
        }
    }
}

} // namespace
