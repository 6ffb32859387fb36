// The soft provider's entry: miniports, knobs, and adapter open/close with the version
// negotiation of OPEN_NDK_ADAPTER_HANDLER (digest 1.1).
#include "soft_provider.h"

#include "soft_adapter.hpp"
#include "soft_capabilities.hpp"
#include "soft_objects.hpp"
#include "soft_oid.hpp"
#include "providers/kit/kit_provider_entry.hpp"
#include "providers/kit/kit_reply_text.hpp"
#include "providers/soft/shm/shm_transport.hpp"
#include "providers/soft/tcp/tcp_transport.hpp"

#include <cstring>
#include <string>
#include <vector>

namespace ndk::soft {

Miniport::Miniport() = default;
Miniport::~Miniport() = default;

namespace {

// The entry has checked the arguments (kit::open_adapter_entry).
NDIS_STATUS open_adapter(Miniport &miniport, NDK_VERSION requested, NDK_ADAPTER **ppNdkAdapter)
{
    if (miniport.knobs.adapter_not_ready())
        return NDIS_STATUS_ADAPTER_NOT_READY; // NDK functionality is not enabled
    NDK_VERSION version;
    if (NDIS_STATUS status = kit::negotiate_version(
            requested, miniport.knobs.highest_minor(requested.Major), version);
        status != NDIS_STATUS_SUCCESS)
        return status;
    *ppNdkAdapter = new SoftAdapter(miniport, version);
    return NDIS_STATUS_SUCCESS;
}

VOID close_adapter(NDIS_HANDLE, NDK_ADAPTER *adapter)
{
    // Blocking: returns when every callback on every descendant has returned (digest 3.1).
    delete SoftAdapter::from(adapter);
}

// transport=shm: the miniport's addresses claimed host-wide.  Addresses the fabric chose
// (no address knob) may be another process's: the fabric chooses again, a bounded number of
// times; given ones are the caller's to change.
NTSTATUS attach_shm_transport(Miniport &miniport, std::string &why)
{
    constexpr int kAttempts = 64;
    for (int attempt = 0;; ++attempt) {
        try {
            miniport.transport = make_shm_transport(miniport);
            return STATUS_SUCCESS;
        } catch (const AddressUnavailable &claimed) {
            why = std::string("address already owned by another process: ") + claimed.what();
            if (!miniport.knobs.addresses().empty() || attempt + 1 == kAttempts)
                return STATUS_ADDRESS_ALREADY_EXISTS;
            Fabric::instance().detach(&miniport);
            miniport.addresses.clear();
            if (NTSTATUS s = Fabric::instance().attach(&miniport, "", miniport.addresses);
                s != STATUS_SUCCESS)
                return s;
        } catch (const std::exception &e) {
            why = std::string("transport=shm: ") + e.what();
            return STATUS_INSUFFICIENT_RESOURCES;
        }
    }
}

// transport=tcp: the miniport's addresses must be this host's (docs/transport.md, "The tcp
// transport in the soft provider", says how a run makes the default ones local).
NTSTATUS attach_tcp_transport(Miniport &miniport, std::string &why)
{
    try {
        miniport.transport = make_tcp_transport(miniport);
        return STATUS_SUCCESS;
    } catch (const AddressUnavailable &e) {
        why = std::string("transport=tcp: ") + e.what() +
              " is not an address of this host (give one with address=..., or make the soft "
              "ranges local as root: ip route add local 198.18.0.0/15 dev lo; ip -6 route add "
              "local fd00:6e64:6b::/64 dev lo table local)";
        return STATUS_INVALID_ADDRESS;
    } catch (const std::exception &e) {
        why = std::string("transport=tcp: ") + e.what();
        return STATUS_INSUFFICIENT_RESOURCES;
    }
}

NDIS_STATUS create_miniport(const char *options, char *error, ULONG error_length,
                            NDIS_HANDLE *out)
{
    if (out == nullptr)
        return STATUS_INVALID_PARAMETER;
    auto miniport = std::make_unique<Miniport>();
    std::string why;
    NTSTATUS status = miniport->knobs.apply(options ? options : "", why);
    if (status != STATUS_SUCCESS) {
        copy_reply_text(why, error, error_length);
        return status;
    }
    if (!miniport->knobs.inproc_transport() && miniport->knobs.manual_progress()) {
        // The peer's messages are taken by the transport's thread as they come, so there is
        // nothing for a step to hold back (docs/transport.md).
        copy_reply_text("progress=manual needs transport=inproc: with transport=shm or tcp "
                        "the transport's own thread moves the data",
                        error, error_length);
        return STATUS_NOT_SUPPORTED;
    }
    status = Fabric::instance().attach(miniport.get(), miniport->knobs.addresses(),
                                       miniport->addresses);
    if (status != STATUS_SUCCESS) {
        copy_reply_text(status == STATUS_ADDRESS_ALREADY_EXISTS
                      ? "address already owned by another soft adapter: " +
                            miniport->knobs.addresses()
                      : "not an IPv4 or IPv6 address: " + miniport->knobs.addresses(),
                  error, error_length);
        return status;
    }
    if (miniport->knobs.shm_transport() || miniport->knobs.tcp_transport()) {
        status = miniport->knobs.shm_transport() ? attach_shm_transport(*miniport, why)
                                                 : attach_tcp_transport(*miniport, why);
        if (status != STATUS_SUCCESS) {
            Fabric::instance().detach(miniport.get());
            copy_reply_text(why, error, error_length);
            return status;
        }
    }
    *out = miniport.release();
    return STATUS_SUCCESS;
}

VOID destroy_miniport(NDIS_HANDLE context)
{
    auto *miniport = static_cast<Miniport *>(context);
    miniport->transport.reset(); // its address claims go before the addresses
    Fabric::instance().detach(miniport);
    delete miniport;
}

// The miniport's engines (one per open adapter), snapshotted under the wire lock.
std::vector<Engine *> engines_of(Miniport &miniport)
{
    std::lock_guard lock(Fabric::instance().wire());
    std::vector<Engine *> engines;
    for (SoftAdapter *adapter : miniport.adapters)
        engines.push_back(&adapter->engine());
    return engines;
}

void set_progress(Miniport &miniport)
{
    bool manual = miniport.knobs.manual_progress();
    for (Engine *engine : engines_of(miniport))
        engine->set_manual(manual);
}

// Knob "fatal_cq_error": set (any value) fails every CQ of the miniport's adapters with
// STATUS_INTERNAL_ERROR, "fatal CQ error (usually hardware)" (digest 1.3), as an RNIC would;
// the reply is how many CQs entered the error state.  Read, it is how many CQs are in error.
NTSTATUS fatal_cq_error(Miniport &miniport, bool set, char *reply, ULONG reply_length)
{
    std::vector<SoftAdapter *> adapters;
    {
        std::lock_guard lock(Fabric::instance().wire());
        adapters = miniport.adapters;
    }
    unsigned count = 0;
    for (SoftAdapter *adapter : adapters) { // an adapter outlives this call: not closed here
        std::lock_guard lock(adapter->mu());
        adapter->for_each_object([&](SoftObject &object) {
            if (object.type() != NdkObjectTypeCq || object.close_requested())
                return;
            auto &cq = static_cast<SoftCq &>(object);
            if (set && cq.error == STATUS_SUCCESS) {
                fail_cq(cq, STATUS_INTERNAL_ERROR);
                ++count;
            } else if (!set && cq.error != STATUS_SUCCESS) {
                ++count;
            }
        });
    }
    copy_reply_text(std::to_string(count), reply, reply_length);
    return STATUS_SUCCESS;
}

// Knob "step": set N runs up to N queued engine tasks of the miniport's adapters, oldest
// adapter first; the reply is how many ran.  Read, it is how many are queued.
NTSTATUS step(Miniport &miniport, const char *value, char *reply, ULONG reply_length)
{
    auto engines = engines_of(miniport);
    if (value == nullptr) {
        size_t queued = 0;
        for (Engine *engine : engines)
            queued += engine->queued();
        copy_reply_text(std::to_string(queued), reply, reply_length);
        return STATUS_SUCCESS;
    }
    char *end = nullptr;
    unsigned long steps = std::strtoul(value, &end, 10);
    if (*value == '\0' || *end != '\0' || steps > 1000000) {
        copy_reply_text(std::string("knob step=") + value + ": expected a count of steps", reply,
                  reply_length);
        return STATUS_INVALID_PARAMETER;
    }
    if (!miniport.knobs.manual_progress()) {
        copy_reply_text("knob step: progress is auto (set progress=manual first)", reply, reply_length);
        return STATUS_INVALID_DEVICE_STATE;
    }
    unsigned ran = 0;
    for (Engine *engine : engines) // an adapter's engine outlives this call: not closed here
        while (ran < steps) {
            unsigned n = engine->step(static_cast<unsigned>(steps - ran));
            if (n == 0)
                break;
            ran += n;
        }
    copy_reply_text(std::to_string(ran), reply, reply_length);
    return STATUS_SUCCESS;
}

// Knob "quiescent" (read only): "1" when no soft adapter of this process can make anything
// happen until a consumer calls: every adapter's engine with nothing queued, nothing running
// and no timer set, and every transport with nothing in flight and every connection's other
// end in this process (soft_quiet.hpp; a peer in another process may send at any time).  Data
// moves inproc on the posting thread, and everything else (callbacks, completions of pended
// calls, continued transfers, timers) is an engine task or, over shm and tcp, the transport's
// progress, so a scenario that waits for something that must not happen may stop waiting at
// once (docs/knobs.md).  The wire lock, held exclusive throughout, keeps every handler and
// engine task that would change anything out while the transports are looked at, and each
// transport's progress thread stays held from its look to the answer.
std::string quiescent()
{
    std::lock_guard wire(Fabric::instance().wire());
    QuietLedger ledger;
    for (Miniport *miniport : Fabric::instance().miniports()) {
        if (miniport->transport && !miniport->transport->quiescent(ledger))
            return "0";
        for (SoftAdapter *adapter : miniport->adapters)
            if (!adapter->engine().idle())
                return "0";
    }
    return ledger.ends_meet() ? "1" : "0";
}

NTSTATUS control_miniport(Miniport &m, const char *key, const char *value, char *reply,
                          ULONG reply_length)
{
    Miniport *miniport = &m; // the entry has checked it (kit::control_entry)
    std::string text;
    if (value == nullptr) {
        if (std::strcmp(key, "address") == 0) {
            for (const auto &ip : miniport->addresses)
                text += (text.empty() ? "" : ",") + ip.to_string();
            copy_reply_text(text, reply, reply_length);
            return STATUS_SUCCESS;
        }
        if (std::strcmp(key, "step") == 0)
            return step(*miniport, nullptr, reply, reply_length);
        if (std::strcmp(key, "quiescent") == 0) {
            copy_reply_text(quiescent(), reply, reply_length);
            return STATUS_SUCCESS;
        }
        if (std::strcmp(key, "link_ends_held") == 0) {
            copy_reply_text(std::to_string(miniport->link_ends_held.load()), reply, reply_length);
            return STATUS_SUCCESS;
        }
        if (std::strcmp(key, "completes_inline") == 0) { // every call NDK does not make pend
            copy_reply_text("create request close", reply, reply_length);
            return STATUS_SUCCESS;
        }
        if (std::strcmp(key, "fatal_cq_error") == 0)
            return fatal_cq_error(*miniport, false, reply, reply_length);
        if (std::strcmp(key, "knobs") == 0) { // read only: every knob's name, one a line
            for (const auto &name : knob_names())
                text += name + "\n";
            copy_reply_text(text, reply, reply_length);
            return STATUS_SUCCESS;
        }
        NTSTATUS status = miniport->knobs.get(key, text);
        copy_reply_text(text, reply, reply_length);
        return status;
    }
    if (std::strcmp(key, "address") == 0) {
        copy_reply_text("the address is set when the adapter is opened", reply, reply_length);
        return STATUS_INVALID_PARAMETER;
    }
    if (std::strcmp(key, "knobs") == 0 || std::strcmp(key, "completes_inline") == 0 ||
        std::strcmp(key, "quiescent") == 0 || std::strcmp(key, "link_ends_held") == 0) {
        copy_reply_text(std::string(key) + " is read only", reply, reply_length);
        return STATUS_INVALID_PARAMETER;
    }
    if (std::strcmp(key, "step") == 0)
        return step(*miniport, value, reply, reply_length);
    if (std::strcmp(key, "fatal_cq_error") == 0)
        return fatal_cq_error(*miniport, true, reply, reply_length);
    NTSTATUS status = miniport->knobs.set(key, value, text);
    copy_reply_text(text, reply, reply_length);
    if (status == STATUS_SUCCESS && std::strcmp(key, "progress") == 0)
        set_progress(*miniport);
    return status;
}

constexpr NDK_HARNESS_PROVIDER kSoftProvider =
    kit::make_provider<Miniport, oid_request, ndk_capabilities>(
        "soft", kit::open_adapter_entry<Miniport, open_adapter>, close_adapter,
        create_miniport, destroy_miniport, kit::control_entry<Miniport, control_miniport>);

} // namespace
} // namespace ndk::soft

extern "C" const NDK_HARNESS_PROVIDER *ndk_soft_provider(void) { return &ndk::soft::kSoftProvider; }
