// The soft provider's knob table: every knob once, with its documentation and its parser.
// Knobs::set / Knobs::get (soft_knobs.cpp) look knobs up here; docs/knobs.md's table is this
// table's markdown (knob_table_markdown), kept equal by tests/unit/test_knobs.cpp.
#include "soft_knobs.hpp"

#include "ndk/status.hpp"
#include "providers/kit/kit_functions.hpp"
#include "providers/kit/kit_knob_docs.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstddef>
#include <cstring>
#include <sstream>
#include <vector>

namespace ndk::soft {
namespace {


// NDK_ADAPTER_INFO fields a knob may override, by their snake_case names.
struct InfoField {
    const char *name;
    size_t offset;
    size_t size;
};
#define NDK_INFO_FIELD(knob, member) \
    InfoField { knob, offsetof(NDK_ADAPTER_INFO, member), sizeof(NDK_ADAPTER_INFO::member) }
const InfoField kInfoFields[] = {
    NDK_INFO_FIELD("vendor_id", VendorId),
    NDK_INFO_FIELD("device_id", DeviceId),
    NDK_INFO_FIELD("max_registration_size", MaxRegistrationSize),
    NDK_INFO_FIELD("max_window_size", MaxWindowSize),
    NDK_INFO_FIELD("frmr_page_count", FRMRPageCount),
    NDK_INFO_FIELD("max_initiator_request_sge", MaxInitiatorRequestSge),
    NDK_INFO_FIELD("max_receive_request_sge", MaxReceiveRequestSge),
    NDK_INFO_FIELD("max_read_request_sge", MaxReadRequestSge),
    NDK_INFO_FIELD("max_transfer_length", MaxTransferLength),
    NDK_INFO_FIELD("max_inline_data_size", MaxInlineDataSize),
    NDK_INFO_FIELD("max_inbound_read_limit", MaxInboundReadLimit),
    NDK_INFO_FIELD("max_outbound_read_limit", MaxOutboundReadLimit),
    NDK_INFO_FIELD("max_receive_queue_depth", MaxReceiveQueueDepth),
    NDK_INFO_FIELD("max_initiator_queue_depth", MaxInitiatorQueueDepth),
    NDK_INFO_FIELD("max_srq_depth", MaxSrqDepth),
    NDK_INFO_FIELD("max_cq_depth", MaxCqDepth),
    NDK_INFO_FIELD("large_request_threshold", LargeRequestThreshold),
    NDK_INFO_FIELD("max_caller_data", MaxCallerData),
    NDK_INFO_FIELD("max_callee_data", MaxCalleeData),
    NDK_INFO_FIELD("adapter_flags", AdapterFlags),
    NDK_INFO_FIELD("rdma_technology", RdmaTechnology),
};
#undef NDK_INFO_FIELD


// Object caps (NDIS_NDK_CAPABILITIES counts) a knob may set, by name.
struct Cap {
    const char *name;
    ULONG ObjectCaps::*member;
};
const Cap kCaps[] = {
    {"max_qp_count", &ObjectCaps::max_qp}, {"max_cq_count", &ObjectCaps::max_cq},
    {"max_mr_count", &ObjectCaps::max_mr}, {"max_pd_count", &ObjectCaps::max_pd},
    {"max_mw_count", &ObjectCaps::max_mw}, {"max_srq_count", &ObjectCaps::max_srq},
};

std::optional<uint64_t> parse_number(std::string_view text)
{
    int base = 10;
    if (text.starts_with("0x") || text.starts_with("0X")) {
        text.remove_prefix(2);
        base = 16;
    }
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
        return std::nullopt;
    return value;
}

NDK_ADAPTER_INFO make_default_info()
{
    NDK_ADAPTER_INFO info{};
    info.VendorId = 0;
    info.DeviceId = 0x50F7; // "soft"
    info.MaxRegistrationSize = size_t{1} << 32;
    info.MaxWindowSize = size_t{1} << 32;
    info.FRMRPageCount = 256;
    info.MaxInitiatorRequestSge = 16;
    info.MaxReceiveRequestSge = 16;
    info.MaxReadRequestSge = 16;
    info.MaxTransferLength = 1u << 30;
    info.MaxInlineDataSize = 256;
    info.MaxInboundReadLimit = 16;
    info.MaxOutboundReadLimit = 16;
    info.MaxReceiveQueueDepth = 16384;
    info.MaxInitiatorQueueDepth = 16384;
    info.MaxSrqDepth = 16384;
    info.MaxCqDepth = 1u << 22;
    info.LargeRequestThreshold = 4096;
    info.MaxCallerData = 56;
    info.MaxCalleeData = 148;
    info.AdapterFlags = NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED |
                        NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED |
                        NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED |
                        NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED |
                        NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED |
                        NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED;
    info.RdmaTechnology = NdkiWarp;
    return info;
}

// ---- parsers and printers, one pair per kind of knob ------------------------------------------

const InfoField *info_field(std::string_view name)
{
    for (const auto &field : kInfoFields)
        if (name == field.name)
            return &field;
    return nullptr;
}

std::string set_info_field(KnobValues &v, std::string_view name, const std::string &value)
{
    const InfoField &field = *info_field(name);
    auto n = parse_number(value);
    if (!n || (field.size == 4 && *n > MAXULONG))
        return "expected an unsigned integer";
    auto *base = reinterpret_cast<unsigned char *>(&v.info) + field.offset;
    if (field.size == 8) {
        uint64_t wide = *n;
        std::memcpy(base, &wide, 8);
    } else {
        uint32_t narrow = static_cast<uint32_t>(*n);
        std::memcpy(base, &narrow, 4);
    }
    return "";
}

std::string get_info_field(const KnobValues &v, std::string_view name)
{
    const InfoField &field = *info_field(name);
    const auto *base = reinterpret_cast<const unsigned char *>(&v.info) + field.offset;
    uint64_t value = 0;
    if (field.size == 8) {
        std::memcpy(&value, base, 8);
    } else {
        uint32_t narrow = 0;
        std::memcpy(&narrow, base, 4);
        value = narrow;
    }
    return std::to_string(value);
}

ULONG ObjectCaps::*cap_member(std::string_view name)
{
    for (const auto &cap : kCaps)
        if (name == cap.name)
            return cap.member;
    return nullptr;
}

std::string set_cap(KnobValues &v, std::string_view name, const std::string &value)
{
    auto n = parse_number(value);
    if (!n || *n > MAXULONG)
        return "expected a count (0 = no cap)";
    v.caps.*cap_member(name) = static_cast<ULONG>(*n);
    return "";
}

std::string get_cap(const KnobValues &v, std::string_view name)
{
    return std::to_string(v.caps.*cap_member(name));
}

std::string set_provider_version(KnobValues &v, std::string_view, const std::string &value)
{
    unsigned major = 0, minor = 0;
    char dot = 0;
    std::istringstream in(value);
    if (!(in >> major >> dot >> minor) || dot != '.' || major == 0 || major > 0xFFFF ||
        minor > 0xFFFF || !(in >> std::ws).eof())
        return "expected MAJOR.MINOR";
    v.provider_version = NDK_VERSION{static_cast<USHORT>(major), static_cast<USHORT>(minor)};
    return "";
}

std::string get_provider_version(const KnobValues &v, std::string_view)
{
    if (!v.provider_version)
        return "";
    return std::to_string(v.provider_version->Major) + "." +
           std::to_string(v.provider_version->Minor);
}

std::string set_adapter_not_ready(KnobValues &v, std::string_view, const std::string &value)
{
    if (value == "1" || value == "true" || value == "True")
        v.adapter_not_ready = true;
    else if (value == "0" || value == "false" || value == "False")
        v.adapter_not_ready = false;
    else
        return "expected 1/true or 0/false";
    return "";
}

std::string get_adapter_not_ready(const KnobValues &v, std::string_view)
{
    return v.adapter_not_ready ? "1" : "0";
}

std::string set_address(KnobValues &v, std::string_view, const std::string &value)
{
    v.addresses = value;
    return "";
}

std::string get_address(const KnobValues &v, std::string_view) { return v.addresses; }

std::string set_transport(KnobValues &v, std::string_view, const std::string &value)
{
    if (value == "inproc")
        v.transport = TransportKind::inproc;
    else if (value == "shm")
        v.transport = TransportKind::shm;
    else if (value == "tcp")
        v.transport = TransportKind::tcp;
    else
        return "expected inproc, shm or tcp";
    return "";
}

std::string get_transport(const KnobValues &v, std::string_view)
{
    switch (v.transport) {
    case TransportKind::shm: return "shm";
    case TransportKind::tcp: return "tcp";
    default: return "inproc";
    }
}

std::string set_shm_fabric(KnobValues &v, std::string_view, const std::string &value)
{
    bool ok = !value.empty() && value.size() <= 64 && value != "." && value != "..";
    for (char c : value)
        ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.');
    if (!ok)
        return "expected a name of 1-64 letters, digits, '-', '_' or '.'";
    v.shm_fabric = value;
    return "";
}

std::string get_shm_fabric(const KnobValues &v, std::string_view) { return v.shm_fabric; }

std::string set_mpa_crc(KnobValues &v, std::string_view, const std::string &value)
{
    if (value == "on" || value == "1" || value == "true" || value == "True")
        v.mpa_crc = true;
    else if (value == "off" || value == "0" || value == "false" || value == "False")
        v.mpa_crc = false;
    else
        return "expected on or off";
    return "";
}

std::string get_mpa_crc(const KnobValues &v, std::string_view) { return v.mpa_crc ? "on" : "off"; }

std::string set_progress(KnobValues &v, std::string_view, const std::string &value)
{
    if (value != "auto" && value != "manual")
        return "expected auto or manual";

    v.manual_progress = value == "manual";
    return "";
}

std::string get_progress(const KnobValues &v, std::string_view)
{
    return v.manual_progress ? "manual" : "auto";
}

// The knobs sge_check and flag_check: where a post check is judged, inline or at completion.
std::atomic<bool> &at_completion(KnobValues &v, std::string_view name)
{
    return name == "flag_check" ? v.flag_check_at_completion : v.sge_check_at_completion;
}

std::string set_check(KnobValues &v, std::string_view name, const std::string &value)
{
    if (value != "inline" && value != "completion")
        return "expected inline or completion";
    at_completion(v, name).store(value == "completion", std::memory_order_relaxed);
    return "";
}

std::string get_check(const KnobValues &v, std::string_view name)
{
    return at_completion(const_cast<KnobValues &>(v), name).load(std::memory_order_relaxed)
               ? "completion"
               : "inline";
}

std::string set_link_end(KnobValues &v, std::string_view, const std::string &value)
{
    if (value != "at_once" && value != "held")
        return "expected at_once or held";
    if (value == "held" && v.transport != TransportKind::tcp)
        return "held needs transport=tcp: inproc has no link, and an shm ring takes a request "
               "whatever the peer did, whose end comes as a message behind it";
    v.link_end_held.store(value == "held", std::memory_order_relaxed);
    return "";
}

std::string get_link_end(const KnobValues &v, std::string_view)
{
    return v.link_end_held.load(std::memory_order_relaxed) ? "held" : "at_once";
}

uint32_t &timeout_of(KnobValues &v, std::string_view name)
{
    if (name == "rnr_timeout_ms")
        return v.rnr_timeout_ms;
    return name == "mpa_request_timeout_ms" ? v.mpa_request_timeout_ms : v.connect_timeout_ms;
}

std::string set_timeout(KnobValues &v, std::string_view name, const std::string &value)
{
    auto n = parse_number(value);
    if (!n || *n > 3600u * 1000u)
        return "expected milliseconds (at most one hour)";
    timeout_of(v, name) = static_cast<uint32_t>(*n);
    return "";
}

std::string get_timeout(const KnobValues &v, std::string_view name)
{
    return std::to_string(timeout_of(const_cast<KnobValues &>(v), name));
}

std::string set_ephemeral_ports(KnobValues &v, std::string_view, const std::string &value)
{
    unsigned lo = 0, hi = 0;
    char dash = 0;
    std::istringstream in(value);
    if (!(in >> lo >> dash >> hi) || dash != '-' || lo == 0 || hi > 65535 || lo > hi ||
        !(in >> std::ws).eof())
        return "expected LOW-HIGH within 1-65535";
    v.ephemeral = {static_cast<uint16_t>(lo), static_cast<uint16_t>(hi)};
    return "";
}

std::string get_ephemeral_ports(const KnobValues &v, std::string_view)
{
    return std::to_string(v.ephemeral.first) + "-" + std::to_string(v.ephemeral.second);
}

std::string set_misbehave(KnobValues &v, std::string_view, const std::string &value)
{
    auto mode = parse_misbehave(value);
    if (!mode)
        return "expected one of " + misbehave_names();
    v.misbehave.store(*mode, std::memory_order_relaxed);
    return "";
}

std::string get_misbehave(const KnobValues &v, std::string_view)
{
    return misbehave_name(v.misbehave.load(std::memory_order_relaxed));
}

// In docs/knobs.md's order, after the fault layer's rows (its own table,
// core/src/layers/fault/fault_knob_table.cpp).  Rows without a parser are the provider entry's
// own knobs (soft_provider.cpp: run-time actions and read-only listings).
const KnobSpec kKnobTable[] = {
    {.names = "",
     .by = KnobBy::Provider,
     .title = "NDK_ADAPTER_INFO fields",
     .values = "integer",
     .effect = "any field in snake_case overrides what NdkQueryAdapterInfo reports and what the "
               "checks use: `max_cq_depth`, `max_srq_depth` (0 = no SRQ), `adapter_flags`, "
               "`frmr_page_count`, `max_inline_data_size`, ...",
     .set = set_info_field,
     .get = get_info_field},
    {.names = "max_qp_count max_cq_count max_mr_count max_pd_count max_mw_count max_srq_count",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "integer, 0 = no cap",
     .effect = "object caps: the miniport's NDIS_NDK_CAPABILITIES counts (QueryNdkCapabilities "
               "reports them; MAXULONG for 0), across all its adapters; a create beyond the cap "
               "returns STATUS_INSUFFICIENT_RESOURCES",
     .set = set_cap,
     .get = get_cap},
    {.names = "provider_version",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "`\"M.m\"`",
     .effect =
         "the only major version the provider accepts and its highest minor (default: 1.2 and "
         "2.1)",
     .set = set_provider_version,
     .get = get_provider_version},
    {.names = "adapter_not_ready",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "`True`/`False`",
     .effect = "OpenNDKAdapterHandler returns NDIS_STATUS_ADAPTER_NOT_READY",
     .set = set_adapter_not_ready,
     .get = get_adapter_not_ready},
    {.names = "address",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "`\"192.0.2.1\"`, `\"192.0.2.1,2001:db8::1\"`",
     .effect = "the adapter's IP addresses on the soft fabric (at open only). Default: a unique "
               "198.18.x.y and fd00:6e64:6b::x pair",
     .set = set_address,
     .get = get_address},
    {.names = "transport",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "`inproc` (default), `shm`, `tcp`",
     .effect = "what carries connections (at open only): `inproc` reaches adapters of this "
               "process; `shm` any process of this host and user, through shared memory; "
               "`tcp` any host, each connection a kernel TCP connection speaking iWARP (MPA, "
               "DDP, RDMAP), from the adapter's addresses, which must be local to this host "
               "(docs/transport.md, docs/iwarp.md)",
     .set = set_transport,
     .get = get_transport},
    {.names = "shm_fabric",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "a name, e.g. `run-1234`",
     .effect = "with transport=shm, which of the user's host-wide fabrics the adapter joins (at "
               "open only): adapters reach each other, and claim addresses, only within one, so "
               "runs side by side keep apart. Default: the user's default fabric",
     .set = set_shm_fabric,
     .get = get_shm_fabric},
    {.names = "mpa_crc",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "`on` (default), `off`",
     .effect = "with transport=tcp, whether the adapter's MPA request or reply asks for CRC32c "
               "on each FPDU (at connect and accept): a connection has CRC when either side "
               "asks (RFC 5044 7.1), so `off` on both ends runs without it and an `off` adapter "
               "still gives CRC to a peer that asks (docs/semantics.md, TCP-CRC)",
     .set = set_mpa_crc,
     .get = get_mpa_crc},
    {.names = "progress",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "`auto` (default), `manual`",
     .effect = "manual: the adapters' engines run nothing on their own, and posts queue their "
               "transfer as an engine task instead of moving data at once (docs/semantics.md, "
               "PROGRESS). The C++/Python `Adapter.close()` sets it back to `auto` first, so the "
               "closes it waits for can complete",
     .set = set_progress,
     .get = get_progress},
    {.names = "step",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "count (set); read gives the tasks queued",
     .effect =
         "set: run up to that many engine tasks of this miniport's adapters (transfers, "
         "completions, callbacks, due timers), oldest adapter first; the reply is how many "
         "ran. Only with `progress=manual`. Python: `adapter.step(n)`, `adapter.pending_steps`",
     .set = nullptr,
     .get = nullptr},
    {.names = "quiescent",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "read only: `1` or `0`",
     .effect =
         "`1` when nothing can happen in this process until a consumer calls: every soft "
         "adapter's engine with nothing queued, nothing running and no timer set; over shm and "
         "tcp, each transport's progress thread idle, nothing queued for it, no establishment "
         "in flight, nothing waiting to be read, and the other end of every open connection an "
         "adapter of this process that has taken in all it was sent (a peer in another process "
         "may send at any time: `0`); and nothing the fault layer holds. The scenarios' waits "
         "for something that must not happen ask it every millisecond and end once it says `1` "
         "(ndk.scenario.quiet_period); any other provider waits the full period",
     .set = nullptr,
     .get = nullptr},
    {.names = "fatal_cq_error",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "any value (set); read gives the CQs in error",
     .effect =
         "set: every open CQ of this miniport's adapters enters the CQ error state with "
         "STATUS_INTERNAL_ERROR, the fatal CQ error of digest 1.3 (\"usually hardware\"): its "
         "completions are dropped, none follows, its QPs' posts return "
         "STATUS_INVALID_DEVICE_STATE, and the notification callback reports it once, to "
         "whichever arm (CQ-ERROR-ARM); the reply is how many CQs it failed. Run time only, "
         "like `step`. Python: `adapter.knobs.fatal_cq_error = True`",
     .set = nullptr,
     .get = nullptr},
    {.names = "sge_check",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "`inline` (default), `completion`",
     .effect = "where an initiator request with more SGEs than the QP allows fails: inline, "
               "STATUS_DATA_OVERRUN from the post (POST-CHECKS), or, with `completion`, posted and "
               "completed STATUS_DATA_OVERRUN (ND_LOCAL_LENGTH) when it executes, which ends the "
               "connection like any failed request (docs/semantics.md ND-LOCAL-LENGTH)",
     .set = set_check,
     .get = get_check},
    {.names = "flag_check",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "`inline` (default), `completion`",
     .effect = "where an initiator request carrying a flag bit its operation does not document "
               "fails: inline, STATUS_INVALID_PARAMETER from the post (POST-CHECKS), or, with "
               "`completion`, posted and completed STATUS_INVALID_PARAMETER (ND_INVALID_REQUEST) "
               "when it executes, which ends the connection like any failed request "
               "(docs/semantics.md ND-INVALID-REQUEST)",
     .set = set_check,
     .get = get_check},
    {.names = "link_end",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "`at_once` (default), `held` (transport=tcp only)",
     .effect = "what the tcp transport does when it finds a connection's TCP stream ended (the "
               "peer's FIN or reset): at once, the QP's requests complete CANCELLED and the "
               "disconnect event comes (TCP-CLOSE); `held`, nothing, so the next request on "
               "the connection meets the ended stream and completes "
               "STATUS_CONNECTION_ABORTED, which ends the connection like any failed request "
               "(docs/semantics.md LINK-END, scenario ND-RESULT-FAILURE).  An end taken while "
               "held is never acted on: the connection ends with that request or its "
               "connector's close. Read `link_ends_held` for how many ends were held",
     .set = set_link_end,
     .get = get_link_end},
    {.names = "link_ends_held",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "read only: a count",
     .effect = "how many TCP streams of this miniport's connections the tcp transport found "
               "ended while `link_end` was `held`, and left so: a scenario waits for it before "
               "it posts the request that meets one",
     .set = nullptr,
     .get = nullptr},
    {.names = "rnr_timeout_ms",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "milliseconds (default 100)",
     .effect = "how long a send waits for a receive at the peer before it completes "
               "STATUS_IO_TIMEOUT and ends the connection; 0 = no retry",
     .set = set_timeout,
     .get = get_timeout},
    {.names = "connect_timeout_ms",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "milliseconds (default 10000)",
     .effect = "how long a Connect waits for Accept/Reject, and an Accept for CompleteConnect, "
               "before STATUS_IO_TIMEOUT",
     .set = set_timeout,
     .get = get_timeout},
    {.names = "mpa_request_timeout_ms",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "milliseconds (default 10000)",
     .effect = "with transport=tcp, how long a TCP connection a listener of the adapter accepted "
               "has to send its whole MPA request before the listener drops it (closes the "
               "socket; no connect event), so that peers that connect and stay silent cannot "
               "hold the process's descriptors (docs/semantics.md, TCP-LISTENER)",
     .set = set_timeout,
     .get = get_timeout},
    {.names = "ephemeral_ports",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "`\"LOW-HIGH\"`",
     .effect = "the range port 0 picks from (default 49152-65535), small to test exhaustion",
     .set = set_ephemeral_ports,
     .get = get_ephemeral_ports},
    {.names = "misbehave",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "a name below that the provider acts",
     .effect = "the misbehaviours that need the provider's internals (the table below says "
               "which); the fault layer in front passes them on, and keeps one misbehaviour at a "
               "time between the two",
     .set = set_misbehave,
     .get = get_misbehave},
    {.names = "completes_inline",
     .by = KnobBy::Provider,
     .title = nullptr,
     .values = "read only: `create request close`",
     .effect =
         "the kinds of call the provider completes inline by itself (all that NDK does not "
         "make pend: Connect and Accept wait for the peer, a close waits for open "
         "successors); the fault layer accepts `create_mode`, `request_mode` and `close_mode` "
         "`inline` at open for the kinds listed",
     .set = nullptr,
     .get = nullptr},
    {.names = "knobs",
     .by = KnobBy::Both,
     .title = nullptr,
     .values = "read only",
     .effect = "every knob's name, one a line, the provider's then the layer's: what "
               "`dir(adapter.knobs)` and `repr(adapter.knobs)` show (a provider that has no knobs "
               "gets the layer's)",
     .set = nullptr,
     .get = nullptr},
};

} // namespace

std::span<const KnobSpec> knob_table() { return kKnobTable; }

bool covers(const KnobSpec &spec, std::string_view name)
{
    if (*spec.names == '\0')
        return info_field(name) != nullptr;
    std::istringstream words{std::string(spec.names)};
    for (std::string word; words >> word;)
        if (word == name)
            return true;
    return false;
}

std::vector<std::string> knob_names(KnobBy by)
{
    std::vector<std::string> names;
    for (const KnobSpec &spec : kKnobTable) {
        if (spec.by != by && spec.by != KnobBy::Both)
            continue;
        if (*spec.names == '\0') {
            for (const auto &field : kInfoFields)
                names.push_back(field.name);
            continue;
        }
        std::istringstream words{std::string(spec.names)};
        for (std::string word; words >> word;)
            names.push_back(word);
    }
    return names;
}

std::string knob_table_markdown()
{
    std::string rows;
    for (const KnobSpec &spec : kKnobTable)
        rows += kit::knob_markdown_row(spec.title != nullptr ? spec.title
                                                             : kit::knob_names_cell(spec.names),
                                       spec.by == KnobBy::Provider ? "provider" : "both",
                                       spec.values, spec.effect);
    return rows;
}

NDK_ADAPTER_INFO default_adapter_info() { return make_default_info(); }

} // namespace ndk::soft
