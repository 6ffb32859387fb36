// The fault layer as a provider stacked over the one it is handed (ndk::fault::wrap): its
// miniport is one over that provider's, its adapters are faces over that provider's
// (fault_layer.hpp).
// The layer acts its knobs itself in front of every provider; every other knob, and the
// `misbehave` names that need a provider's internals, go to the provider.
#include "layers/fault/fault_layer.hpp"

#include "ndk/fault.hpp"
#include "ndk/status.hpp"
#include "providers/kit/kit_provider_entry.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace ndk::fault {

namespace {

struct MiniportHandle {
    std::unique_ptr<FaultMiniport> miniport;
    std::mutex mu;
    // Every adapter opened, closed ones included: a late callback of a closed adapter's
    // provider still finds its records (they go with the miniport).
    std::vector<std::unique_ptr<FaultAdapter>> adapters;
};

MiniportHandle &handle_of(NDIS_HANDLE handle) { return *static_cast<MiniportHandle *>(handle); }

void write_text(char *out, ULONG length, const std::string &text)
{
    if (out != nullptr && length > 0)
        std::snprintf(out, length, "%s", text.c_str());
}

// Whether the wrapped provider has knob `key` (a read of it is not STATUS_NOT_SUPPORTED).
bool provider_has(const FaultMiniport &m, const char *key)
{
    const NDK_HARNESS_PROVIDER &entry = m.inner->entry();
    if (entry.ControlMiniport == nullptr)
        return false;
    char reply[512] = {};
    return entry.ControlMiniport(m.inner_handle, key, nullptr, reply, sizeof reply) !=
           STATUS_NOT_SUPPORTED;
}

// The provider's reply to a read of `key`, "" when it has no such knob.
std::string provider_read(const FaultMiniport &m, const char *key)
{
    const NDK_HARNESS_PROVIDER &entry = m.inner->entry();
    char reply[512] = {};
    if (entry.ControlMiniport == nullptr ||
        entry.ControlMiniport(m.inner_handle, key, nullptr, reply, sizeof reply) != STATUS_SUCCESS)
        return "";
    return reply;
}

// `misbehave`: the layer acts its names; any other goes to the provider's own `misbehave`
// knob (the names that need its internals).  One misbehaviour at a time: setting one sets the
// other side's to none.
NTSTATUS control_misbehave(FaultMiniport &m, const char *value, char *reply, ULONG reply_length)
{
    const NDK_HARNESS_PROVIDER &entry = m.inner->entry();
    const bool provider_knob = provider_has(m, "misbehave");
    std::string text;
    if (value == nullptr) { // the layer's when it acts one, else the provider's
        if (m.injection.misbehave() != Misbehave::None || !provider_knob) {
            NTSTATUS status = m.injection.get("misbehave", text);
            write_text(reply, reply_length, text);
            return status;
        }
        return entry.ControlMiniport(m.inner_handle, "misbehave", nullptr, reply, reply_length);
    }
    if (Injection::is_misbehave(value)) {
        NTSTATUS status = m.injection.set("misbehave", value, text);
        write_text(reply, reply_length, text);
        if (status == STATUS_SUCCESS && provider_knob) {
            char ignored[256] = {};
            entry.ControlMiniport(m.inner_handle, "misbehave", "none", ignored, sizeof ignored);
        }
        return status;
    }
    if (!provider_knob) {
        write_text(reply, reply_length,
                   "misbehave=" + std::string(value) +
                       " needs the provider's internals, and this provider has no misbehave "
                       "knob; the fault layer acts the names docs/knobs.md marks as its own");
        return STATUS_NOT_SUPPORTED;
    }
    NTSTATUS status = entry.ControlMiniport(m.inner_handle, "misbehave", value, reply, reply_length);
    if (status == STATUS_SUCCESS) {
        m.injection.set("misbehave", "none", text);
    } else if (status == STATUS_INVALID_PARAMETER && reply != nullptr && reply_length > 0) {
        // Unknown to both: the provider's list of valid names, then the layer's.
        std::string names = reply;
        for (const std::string &name : Injection::misbehave_names())
            names += ", " + name;
        write_text(reply, reply_length, names);
    }
    return status;
}

// The provider's `progress=manual` holds the layer's completions too: they run when stepped.
void follow_progress(FaultMiniport &m)
{
    m.deferrer.set_manual(provider_read(m, "progress") == "manual");
}

// `step`: the layer's held completions first (they were queued before anything the provider
// queued behind them), then the provider's tasks; read, what both have queued.
NTSTATUS control_step(FaultMiniport &m, const char *value, char *reply, ULONG reply_length)
{
    const NDK_HARNESS_PROVIDER &entry = m.inner->entry();
    if (value == nullptr) {
        NTSTATUS status = entry.ControlMiniport(m.inner_handle, "step", nullptr, reply, reply_length);
        if (status == STATUS_SUCCESS)
            write_text(reply, reply_length,
                       std::to_string(std::strtoull(reply, nullptr, 10) + m.deferrer.queued()));
        return status;
    }
    char *end = nullptr;
    const unsigned long steps = std::strtoul(value, &end, 10);
    if (*value == '\0' || *end != '\0' || steps > 1000000) // the provider says why
        return entry.ControlMiniport(m.inner_handle, "step", value, reply, reply_length);
    const unsigned ran = m.deferrer.step(static_cast<unsigned>(steps));
    const std::string rest = std::to_string(steps - ran);
    NTSTATUS status = entry.ControlMiniport(m.inner_handle, "step", rest.c_str(), reply, reply_length);
    if (status == STATUS_SUCCESS)
        write_text(reply, reply_length, std::to_string(std::strtoull(reply, nullptr, 10) + ran));
    return status;
}

// The layer acts its knobs (Injection::is_knob) in front of every provider; the provider gets
// every other knob.  `knobs` lists both.
NTSTATUS control(FaultMiniport &m, const char *key, const char *value, char *reply,
                 ULONG reply_length)
{
    const std::string name = key != nullptr ? key : "";
    if (name == "misbehave")
        return control_misbehave(m, value, reply, reply_length);
    if (Injection::is_knob(name)) {
        std::string text;
        NTSTATUS status = value != nullptr ? m.injection.set(name, value, text)
                                           : m.injection.get(name, text);
        write_text(reply, reply_length, text);
        return status;
    }
    const NDK_HARNESS_PROVIDER &entry = m.inner->entry();
    if (entry.ControlMiniport == nullptr) {
        if (name == "knobs" && value == nullptr) {
            std::string all;
            for (const std::string &knob : Injection::knob_names())
                all += knob + "\n";
            write_text(reply, reply_length, all);
            return STATUS_SUCCESS;
        }
        return STATUS_NOT_SUPPORTED;
    }
    if (name == "step")
        return control_step(m, value, reply, reply_length);
    if (name == "quiescent" && value == nullptr) {
        // The provider's answer, and nothing held here: a deferred completion is a call's too.
        NTSTATUS status = entry.ControlMiniport(m.inner_handle, key, value, reply, reply_length);
        if (status == STATUS_SUCCESS && !Deferrer::all_idle())
            write_text(reply, reply_length, "0");
        return status;
    }
    NTSTATUS status = entry.ControlMiniport(m.inner_handle, key, value, reply, reply_length);
    if (status == STATUS_SUCCESS && name == "knobs" && value == nullptr) {
        // The layer's knobs, then the provider's (`misbehave` once), in the table's order.
        std::string all;
        for (const std::string &knob : Injection::knob_names())
            all += knob + "\n";
        std::istringstream theirs{std::string(reply)};
        for (std::string knob; std::getline(theirs, knob);)
            if (!knob.empty() && !Injection::is_knob(knob))
                all += knob + "\n";
        write_text(reply, reply_length, all);
    }
    if (status == STATUS_SUCCESS && name == "progress" && value != nullptr)
        follow_progress(m);
    return status;
}

// Whether the provider completes calls of `mode_knob`'s kind inline by itself: its read-only
// knob `completes_inline` lists the kinds ("create request close").
bool completes_inline(const FaultMiniport &m, const std::string &mode_knob)
{
    const std::string kind = mode_knob.substr(0, mode_knob.find('_'));
    std::istringstream words(provider_read(m, "completes_inline"));
    for (std::string word; words >> word;)
        if (word == kind)
            return true;
    return false;
}

// Options: knobs ("key=value" lines or ';'-separated pairs).  The layer's knobs are taken out
// and applied once the provider's miniport exists; the provider gets the rest.
NDIS_STATUS create_miniport(const std::shared_ptr<Provider> &inner, const char *options,
                            char *error, ULONG error_length, NDIS_HANDLE *handle)
{
    std::string normalized = options ? options : "";
    std::replace(normalized.begin(), normalized.end(), ';', '\n');
    std::string theirs;
    std::vector<std::pair<std::string, std::string>> knobs; // the layer's
    std::istringstream lines(normalized);
    for (std::string line; std::getline(lines, line);) {
        if (line.empty())
            continue;
        size_t eq = line.find('=');
        if (eq != std::string::npos && Injection::is_knob(line.substr(0, eq)))
            knobs.emplace_back(line.substr(0, eq), line.substr(eq + 1));
        else
            theirs += line + "\n";
    }
    if (inner->entry().ControlMiniport == nullptr && !theirs.empty()) {
        write_text(error, error_length, "provider '" + inner->name() + "' has no knobs");
        return STATUS_NOT_SUPPORTED;
    }
    NDIS_HANDLE inner_handle = nullptr;
    NDIS_STATUS status = inner->create_miniport(theirs.empty() ? nullptr : theirs.c_str(), error,
                                                error_length, &inner_handle);
    if (status != NDIS_STATUS_SUCCESS)
        return status;
    auto result = std::make_unique<MiniportHandle>();
    result->miniport = std::make_unique<FaultMiniport>(inner, inner_handle);
    follow_progress(*result->miniport);
    for (const auto &[key, value] : knobs) {
        // The layer can add pends but cannot make a provider complete inline: asked at open for
        // an inline mode, it takes the provider's word (`completes_inline`) that it does, and
        // otherwise says so (a scenario that needs inline completions then skips).  At run
        // time, `inline` only stops the layer's own pends.
        if (key.ends_with("_mode") && value == "inline" &&
            !completes_inline(*result->miniport, key)) {
            write_text(error, error_length,
                       "knob " + key + "=inline: the provider does not say it completes these "
                       "calls inline (knob completes_inline), and the fault layer cannot make "
                       "it");
            inner->entry().DestroyMiniport(inner_handle);
            return STATUS_NOT_SUPPORTED;
        }
        char reply[1024] = {};
        status = control(*result->miniport, key.c_str(), value.c_str(), reply, sizeof reply);
        if (status != STATUS_SUCCESS) {
            write_text(error, error_length,
                       "knob " + key + "=" + value + ": " +
                           (reply[0] != '\0' ? reply : "not supported by the provider"));
            inner->entry().DestroyMiniport(inner_handle);
            return status;
        }
    }
    *handle = result.release();
    return NDIS_STATUS_SUCCESS;
}

VOID destroy_miniport(NDIS_HANDLE handle)
{
    std::unique_ptr<MiniportHandle> owned(&handle_of(handle));
    FaultMiniport &m = *owned->miniport;
    m.inner->entry().DestroyMiniport(m.inner_handle);
}

NTSTATUS control_miniport(NDIS_HANDLE handle, const char *key, const char *value, char *reply,
                          ULONG reply_length)
{
    return control(*handle_of(handle).miniport, key, value, reply, reply_length);
}

NDIS_STATUS oid_request(MiniportHandle &handle, NDIS_OID oid, bool set, void *buffer,
                        ULONG length, ULONG *written, ULONG *needed)
{
    FaultMiniport &m = *handle.miniport;
    return kit::forward_oid_request(m.inner->entry(), m.inner_handle, oid, set, buffer, length,
                                    written, needed);
}

NDIS_STATUS ndk_capabilities(MiniportHandle &handle, NDIS_NDK_CAPABILITIES &capabilities)
{
    FaultMiniport &m = *handle.miniport;
    return kit::forward_ndk_capabilities(m.inner->entry(), m.inner_handle, capabilities);
}

NDIS_STATUS open_adapter(NDIS_HANDLE handle, PNDIS_OPEN_NDK_ADAPTER_PARAMETERS parameters,
                         NDK_ADAPTER **adapter)
{
    MiniportHandle &h = handle_of(handle);
    FaultMiniport &m = *h.miniport;
    NDK_ADAPTER *inner = nullptr;
    NDIS_STATUS status = m.inner->entry().Characteristics.OpenNDKAdapterHandler(
        m.inner_handle, parameters, &inner);
    if (status != NDIS_STATUS_SUCCESS || inner == nullptr)
        return status;
    auto opened = std::make_unique<FaultAdapter>(m, inner);
    *adapter = reinterpret_cast<NDK_ADAPTER *>(opened->face());
    std::lock_guard lock(h.mu);
    h.adapters.push_back(std::move(opened));
    return NDIS_STATUS_SUCCESS;
}

VOID close_adapter(NDIS_HANDLE handle, NDK_ADAPTER *adapter)
{
    FaultMiniport &m = *handle_of(handle).miniport;
    Face *face = face_of(adapter);
    if (face == nullptr) { // not one of ours: the provider's to judge
        m.inner->entry().Characteristics.CloseNDKAdapterHandler(m.inner_handle, adapter);
        return;
    }
    m.injection.release_adapter(face->adapter);
    m.deferrer.drain(face->adapter);
    m.inner->entry().Characteristics.CloseNDKAdapterHandler(
        m.inner_handle, reinterpret_cast<NDK_ADAPTER *>(face->inner));
}

// The layer's CreateMiniport is wrap()'s, over the provider it is handed; the entry's own has
// no provider beneath it.
NDIS_STATUS create_unstacked(const char *, char *error, ULONG error_length, NDIS_HANDLE *)
{
    write_text(error, error_length,
               "the fault layer is stacked over a provider with ndk::fault::wrap");
    return STATUS_INVALID_PARAMETER;
}

const NDK_HARNESS_PROVIDER kFaultEntry =
    kit::make_provider<MiniportHandle, oid_request, ndk_capabilities>(
        "fault", open_adapter, close_adapter, create_unstacked, destroy_miniport,
        control_miniport);

} // namespace

std::shared_ptr<Provider> wrap(std::shared_ptr<Provider> inner)
{
    return std::make_shared<Provider>(&kFaultEntry, std::move(inner), create_miniport);
}

} // namespace ndk::fault
