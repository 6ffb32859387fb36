// The loop provider's entry (core/include/ndk/provider.h): a miniport is one RNIC of the
// process-wide fabric with its addresses (option `address=IP[,IP...]`, else one IPv4 and one
// IPv6 address of its own); the knob `address` reads them back, and the read-only
// `completes_inline` says every call it does not have to pend completes inline.  There are no
// other knobs: scenarios that need one skip, or get it from the fault layer (docs/knobs.md).
#include "loop_provider.h"

#include "loop_objects.hpp"
#include "providers/kit/kit_oid.hpp"
#include "providers/kit/kit_provider_entry.hpp"
#include "providers/kit/kit_reply_text.hpp"

#include <cstring>
#include <memory>

namespace ndk::loop {
namespace {

// NDK 1.2 and 2.1, each major negotiated on its own (docs/semantics.md, VERSIONS); the entry
// has checked the arguments (kit::open_adapter_entry).
NDIS_STATUS open_adapter(Miniport &miniport, NDK_VERSION requested, NDK_ADAPTER **ppNdkAdapter)
{
    {
        std::lock_guard lock(fabric_mu());
        if (!miniport.enabled)
            return NDIS_STATUS_ADAPTER_NOT_READY; // OID_NDK_SET_STATE disabled it
    }
    NDK_VERSION version;
    if (NDIS_STATUS s = kit::negotiate_version(requested, kit::implemented_minor(requested.Major),
                                               version);
        s != NDIS_STATUS_SUCCESS)
        return s;
    *ppNdkAdapter = new LoopAdapter(miniport, version);
    return NDIS_STATUS_SUCCESS;
}

VOID close_adapter(NDIS_HANDLE, NDK_ADAPTER *adapter)
{
    delete LoopAdapter::from(adapter); // blocking (digest 3.1)
}

NDIS_STATUS create_miniport(const char *options, char *error, ULONG error_length, NDIS_HANDLE *out)
{
    if (out == nullptr)
        return STATUS_INVALID_PARAMETER;
    std::string addresses;
    for (const auto &[key, value] : kit::parse_options(options)) {
        if (key != "address") {
            copy_reply_text("the loop provider has no knob '" + key +
                                "' (only address=IP[,IP...] at open)",
                            error, error_length);
            return STATUS_NOT_SUPPORTED;
        }
        addresses = value;
    }
    auto miniport = std::make_unique<Miniport>();
    if (NTSTATUS s = Fabric::instance().attach(*miniport, addresses); s != STATUS_SUCCESS) {
        copy_reply_text(s == STATUS_ADDRESS_ALREADY_EXISTS
                            ? "address already owned by another loop adapter: " + addresses
                            : "not an IPv4 or IPv6 address: " + addresses,
                        error, error_length);
        return s;
    }
    *out = miniport.release();
    return STATUS_SUCCESS;
}

VOID destroy_miniport(NDIS_HANDLE context)
{
    auto *miniport = static_cast<Miniport *>(context);
    Fabric::instance().detach(*miniport);
    delete miniport;
}

NTSTATUS control_miniport(Miniport &miniport, const char *key, const char *value, char *reply,
                          ULONG reply_length)
{
    if (std::strcmp(key, "completes_inline") == 0 && value == nullptr) {
        // Only Connect and Accept (waiting for the peer) and a close with open successors pend.
        copy_reply_text("create request close", reply, reply_length);
        return STATUS_SUCCESS;
    }
    if (std::strcmp(key, "address") != 0) {
        copy_reply_text(std::string("the loop provider has no knob '") + key + "'", reply,
                        reply_length);
        return STATUS_NOT_SUPPORTED;
    }
    if (value != nullptr) {
        copy_reply_text("the address is set when the adapter is opened", reply, reply_length);
        return STATUS_INVALID_PARAMETER;
    }
    std::string text;
    for (const Endpoint &ip : miniport.addresses)
        text += (text.empty() ? "" : ",") + ip.text();
    copy_reply_text(text, reply, reply_length);
    return STATUS_SUCCESS;
}

// The OIDs (digest 3.7): the kit routes, sizes and writes; this lists.
class LoopOidAnswers final : public kit::OidAnswers {
public:
    explicit LoopOidAnswers(Miniport &miniport) : miniport_(miniport) {}
    void set_enabled(bool enabled) override
    {
        std::lock_guard lock(fabric_mu());
        miniport_.enabled = enabled;
    }
    bool mapped_to_tcp() override { return false; } // no TCP under these connections
    NDIS_NDK_PERFORMANCE_COUNTERS counters() override
    {
        std::lock_guard lock(fabric_mu());
        return miniport_.counters;
    }
    void list_connections(ndis::ConnectionsTable &table) override
    {
        for_each([&](LoopObject &o) {
            auto &c = static_cast<LConnector &>(o);
            if (o.type() == NdkObjectTypeConnector && c.state == LConnector::State::Connected)
                table.add(c.local.to_inet(), c.remote.to_inet());
        });
    }
    void list_local_endpoints(ndis::LocalEndpointsTable &table) override
    {
        for_each([&](LoopObject &o) {
            auto &l = static_cast<LListener &>(o);
            if (o.type() == NdkObjectTypeListener && l.listening && !o.close_requested())
                table.add(l.local.to_inet(), true);
        });
    }

private:
    template <class F>
    void for_each(F &&visit)
    {
        std::lock_guard lock(fabric_mu());
        for (LoopAdapter *adapter : miniport_.adapters)
            adapter->for_each_object(visit);
    }
    Miniport &miniport_;
};

NDIS_STATUS oid_request(Miniport &miniport, NDIS_OID oid, bool set, void *buffer, ULONG length,
                        ULONG *written, ULONG *needed)
{
    LoopOidAnswers answers(miniport);
    return kit::oid_request(answers, oid, set, buffer, length, written, needed);
}

// NDIS_NDK_CAPABILITIES (digest 3.7): loop keeps no count of QPs, CQs, MRs or PDs of its own
// (MAXULONG), has neither memory windows nor SRQs (0: LoopAdapter::info's MaxWindowSize and
// MaxSrqDepth are 0), no adapter-wide read limits (0), and keeps every counter.
NDIS_STATUS ndk_capabilities(Miniport &, NDIS_NDK_CAPABILITIES &capabilities)
{
    capabilities.MaxQpCount = MAXULONG;
    capabilities.MaxCqCount = MAXULONG;
    capabilities.MaxMrCount = MAXULONG;
    capabilities.MaxPdCount = MAXULONG;
    capabilities.MaxMwCount = 0;
    capabilities.MaxSrqCount = 0;
    return NDIS_STATUS_SUCCESS;
}

constexpr NDK_HARNESS_PROVIDER kLoopProvider =
    kit::make_provider<Miniport, oid_request, ndk_capabilities>(
        "loop", kit::open_adapter_entry<Miniport, open_adapter>, close_adapter,
        create_miniport, destroy_miniport, kit::control_entry<Miniport, control_miniport>);

} // namespace
} // namespace ndk::loop

extern "C" const NDK_HARNESS_PROVIDER *ndk_loop_provider(void) { return &ndk::loop::kLoopProvider; }
