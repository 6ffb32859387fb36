// Tables of names and values from the C header, from which the Python package builds ndk.Status
// and its enumerations: one source of truth for every value.
#include "py_support.hpp"

#include "ndk/nd_result.hpp"
#include "ndk/nd_status.hpp"
#include "ndk/registry.hpp"
#include "ndk/status.hpp"

#include <pybind11/stl.h>

#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ndk::py {
namespace {

using Table = std::vector<std::pair<std::string, long long>>;
#define NDK_ENTRY(prefix, name) {#name, static_cast<long long>(prefix##name)}

Table object_types()
{
    return {{"UNDEFINED", NdkObjectTypeUndefined}, {"ADAPTER", NdkObjectTypeAdapter},
            {"QP", NdkObjectTypeQp},               {"CQ", NdkObjectTypeCq},
            {"MR", NdkObjectTypeMr},               {"MW", NdkObjectTypeMw},
            {"PD", NdkObjectTypePd},               {"SHARED_ENDPOINT", NdkObjectTypeSharedEndpoint},
            {"CONNECTOR", NdkObjectTypeConnector}, {"LISTENER", NdkObjectTypeListener},
            {"SRQ", NdkObjectTypeSrq}};
}

Table op_types()
{
    return {{"RECEIVE", NdkOperationTypeReceive},
            {"SEND", NdkOperationTypeSend},
            {"FAST_REGISTER", NdkOperationTypeFastRegister},
            {"BIND", NdkOperationTypeBind},
            {"INVALIDATE", NdkOperationTypeInvalidate},
            {"READ", NdkOperationTypeRead},
            {"WRITE", NdkOperationTypeWrite},
            {"RECEIVE_AND_INVALIDATE", NdkOperationTypeReceiveAndInvalidate}};
}

Table rdma_technologies()
{
    return {{"UNDEFINED", NdkUndefined}, {"IWARP", NdkiWarp},   {"INFINIBAND", NdkInfiniBand},
            {"ROCE", NdkRoCE},           {"ROCEV2", NdkRoCEv2}};
}

Table cq_notify()
{
    return {NDK_ENTRY(NDK_CQ_NOTIFY_, ERRORS), NDK_ENTRY(NDK_CQ_NOTIFY_, ANY),
            NDK_ENTRY(NDK_CQ_NOTIFY_, SOLICITED)};
}

Table mr_flags()
{
    return {NDK_ENTRY(NDK_MR_FLAG_, ALLOW_LOCAL_READ), NDK_ENTRY(NDK_MR_FLAG_, ALLOW_LOCAL_WRITE),
            NDK_ENTRY(NDK_MR_FLAG_, ALLOW_REMOTE_READ), NDK_ENTRY(NDK_MR_FLAG_, ALLOW_REMOTE_WRITE),
            NDK_ENTRY(NDK_MR_FLAG_, RDMA_READ_SINK)};
}

Table op_flags()
{
    return {NDK_ENTRY(NDK_OP_FLAG_, SILENT_SUCCESS),      NDK_ENTRY(NDK_OP_FLAG_, READ_FENCE),
            NDK_ENTRY(NDK_OP_FLAG_, SEND_AND_SOLICIT_EVENT), NDK_ENTRY(NDK_OP_FLAG_, ALLOW_REMOTE_READ),
            NDK_ENTRY(NDK_OP_FLAG_, ALLOW_LOCAL_WRITE),   NDK_ENTRY(NDK_OP_FLAG_, ALLOW_REMOTE_WRITE),
            NDK_ENTRY(NDK_OP_FLAG_, INLINE),              NDK_ENTRY(NDK_OP_FLAG_, RDMA_READ_SINK),
            NDK_ENTRY(NDK_OP_FLAG_, RDMA_READ_LOCAL_INVALIDATE), NDK_ENTRY(NDK_OP_FLAG_, DEFER)};
}

Table adapter_flags()
{
    return {NDK_ENTRY(NDK_ADAPTER_FLAG_, IN_ORDER_DMA_SUPPORTED),
            NDK_ENTRY(NDK_ADAPTER_FLAG_, RDMA_READ_SINK_NOT_REQUIRED),
            NDK_ENTRY(NDK_ADAPTER_FLAG_, CQ_INTERRUPT_MODERATION_SUPPORTED),
            NDK_ENTRY(NDK_ADAPTER_FLAG_, MULTI_ENGINE_SUPPORTED),
            NDK_ENTRY(NDK_ADAPTER_FLAG_, RDMA_READ_LOCAL_INVALIDATE_SUPPORTED),
            NDK_ENTRY(NDK_ADAPTER_FLAG_, CQ_RESIZE_SUPPORTED),
            NDK_ENTRY(NDK_ADAPTER_FLAG_, LOOPBACK_CONNECTIONS_SUPPORTED)};
}

Table oids()
{
    return {NDK_ENTRY(OID_, NDK_SET_STATE), NDK_ENTRY(OID_, NDK_STATISTICS),
            NDK_ENTRY(OID_, NDK_CONNECTIONS), NDK_ENTRY(OID_, NDK_LOCAL_ENDPOINTS)};
}
#undef NDK_ENTRY

// The ND_* codes without their ND_ prefix, the two v1 aliases last (second names of a value,
// as ndk.NdStatus's aliases), values unsigned like ndk.Status's.
Table nd_statuses()
{
    Table table;
    auto add = [&table](std::span<const NdCode> codes) {
        for (const NdCode &code : codes)
            table.emplace_back(std::string(code.name.substr(3)), static_cast<uint32_t>(code.value));
    };
    add(kNdCodes);
    add(kNdV1Aliases);
    return table;
}

// The ND_RESULT status table's ten rows (core/include/ndk/nd_result.hpp), without ND_.
Table nd_result_statuses()
{
    Table table;
    for (const NdResultRow &row : kNdResultRows)
        table.emplace_back(std::string(row.name.substr(3)), static_cast<uint32_t>(row.value));
    return table;
}

} // namespace

void bind_constants(pyb::module_ &m)
{
    m.def(
        "status_table",
        [] {
            std::vector<std::pair<uint32_t, std::string>> table;
            for (const auto &entry : ndk::status_table())
                table.emplace_back(static_cast<uint32_t>(entry.value), entry.name);
            return table;
        },
        "(value, NDK name) of every status the interface names.");
    m.def(
        "constant_tables",
        [] {
            pyb::dict tables;
            tables["ObjectType"] = object_types();
            tables["OpType"] = op_types();
            tables["RdmaTechnology"] = rdma_technologies();
            tables["CqNotify"] = cq_notify();
            tables["MrFlag"] = mr_flags();
            tables["OpFlag"] = op_flags();
            tables["AdapterFlag"] = adapter_flags();
            tables["Oid"] = oids();
            tables["NdStatus"] = nd_statuses();
            tables["NdResultStatus"] = nd_result_statuses();
            return tables;
        },
        "Name/value tables of the NDK enumerations and flags.");
    m.def("providers", &ndk::Provider::available, "Providers that can be opened by name here.");
    m.def(
        "run_scoped_knobs",
        [](const std::string &provider, const std::string &options) {
            return ndk::Provider::load(provider)->run_scoped_knobs(options);
        },
        pybind11::arg("provider"), pybind11::arg("options"),
        "The knobs a run sets to a name of its own for an adapter of `provider` with `options` "
        "(\"key=value\" lines), as the provider declares them: shm_fabric for soft with "
        "transport=shm when the options name none.");
}

} // namespace ndk::py
