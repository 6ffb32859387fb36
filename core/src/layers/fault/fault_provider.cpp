// The fault layer as a provider: ndk_fault_layer(), whose CreateMiniport loads the provider
// named by fault_provider= and whose adapters are faces over that provider's (fault_layer.hpp).
// A knob of the layer's goes to the provider when the provider has it (it knows its own
// objects best), unless fault_prefer_layer=1; the layer supplies it otherwise.
#include "layers/fault/fault_layer.hpp"

#include "ndk/fault.hpp"
#include "ndk/call.hpp"
#include "ndk/status.hpp"
#include "providers/kit/kit_provider_entry.hpp"

#include <algorithm>
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

// The knob whose presence at the provider says it has `key`'s family: a provider with `fail`
// also clears failures, one with `hold` also releases, one with `create_mode` also seeds.
std::string family_of(const std::string &key)
{
    if (key == "clear_failures")
        return "fail";
    if (key == "release" || key == "held")
        return "hold";
    if (key == "seed")
        return "create_mode";
    return key;
}

// Whether the wrapped provider has knob `key` (its family) itself.
bool provider_has(const FaultMiniport &m, const std::string &key)
{
    const NDK_HARNESS_PROVIDER &entry = m.inner->entry();
    if (entry.ControlMiniport == nullptr)
        return false;
    char reply[512] = {};
    return entry.ControlMiniport(m.inner_handle, family_of(key).c_str(), nullptr, reply,
                                 sizeof reply) != STATUS_NOT_SUPPORTED;
}

// Whether the layer answers knob `key` (set to `value`, or read when `value` is null).
bool layer_takes(const FaultMiniport &m, const std::string &key, const char *value)
{
    if (!Injection::is_knob(key))
        return false;
    if (key == "misbehave") {
        // The layer acts only some names; the others stay the provider's (when it has them).
        if (value == nullptr)
            return m.injection.misbehave() != Misbehave::None || !provider_has(m, key);
        if (!Injection::is_misbehave(value))
            return !provider_has(m, key);
    }
    return m.prefer_layer || !provider_has(m, key);
}

NTSTATUS control(FaultMiniport &m, const char *key, const char *value, char *reply,
                 ULONG reply_length)
{
    const std::string name = key != nullptr ? key : "";
    if (name == "misbehave" && value != nullptr) {
        // One misbehaviour at a time: whichever of the two does not act it is set to none.
        std::string ignored;
        if (!layer_takes(m, name, value)) {
            m.injection.set(name, "none", ignored);
        } else if (provider_has(m, name)) {
            char none[256] = {};
            m.inner->entry().ControlMiniport(m.inner_handle, key, "none", none, sizeof none);
        }
    }
    if (name == "misbehave" && value != nullptr && !Injection::is_misbehave(value) &&
        !provider_has(m, name)) {
        write_text(reply, reply_length,
                   "misbehave=" + std::string(value) +
                       " needs the provider's internals, and this provider has no misbehave "
                       "knob; the fault layer acts the names `misbehave` lists in docs/knobs.md");
        return STATUS_NOT_SUPPORTED;
    }
    if (layer_takes(m, name, value)) {
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
    NTSTATUS status = entry.ControlMiniport(m.inner_handle, key, value, reply, reply_length);
    if (status == STATUS_SUCCESS && name == "knobs" && value == nullptr) {
        // The provider's knobs and the layer's it lacks.
        std::string all = reply;
        for (const std::string &knob : Injection::knob_names())
            if (!provider_has(m, knob))
                all += knob + "\n";
        write_text(reply, reply_length, all);
    }
    return status;
}

// Options: fault_provider=NAME, fault_prefer_layer=1, and knobs ("key=value" lines or
// ';'-separated pairs).  The provider gets every knob first, so that one it has is its own
// (its values, its error texts); only when it refuses a knob it does not know
// (STATUS_NOT_SUPPORTED) does the layer take its own out and try again, then apply them.
NDIS_STATUS create_miniport(const char *options, char *error, ULONG error_length,
                            NDIS_HANDLE *handle)
{
    const std::string kProvider = "fault_provider=", kPrefer = "fault_prefer_layer=";
    std::string normalized = options ? options : "";
    std::replace(normalized.begin(), normalized.end(), ';', '\n');
    std::string inner_name, all, theirs;
    bool prefer = false;
    std::vector<std::pair<std::string, std::string>> knobs; // the layer's
    std::istringstream lines(normalized);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind(kProvider, 0) == 0) {
            inner_name = line.substr(kProvider.size());
            continue;
        }
        if (line.rfind(kPrefer, 0) == 0) {
            prefer = line.substr(kPrefer.size()) == "1";
            continue;
        }
        if (line.empty())
            continue;
        all += line + "\n";
        size_t eq = line.find('=');
        if (eq != std::string::npos && Injection::is_knob(line.substr(0, eq)))
            knobs.emplace_back(line.substr(0, eq), line.substr(eq + 1));
        else
            theirs += line + "\n";
    }
    if (inner_name.empty()) {
        write_text(error, error_length, "the fault layer needs fault_provider=NAME");
        return STATUS_INVALID_PARAMETER;
    }
    std::shared_ptr<Provider> inner;
    try {
        inner = Provider::load(inner_name);
    } catch (const Error &failure) {
        write_text(error, error_length, failure.what());
        return failure.status();
    }
    if (inner->entry().ControlMiniport == nullptr && !theirs.empty()) {
        write_text(error, error_length, "provider '" + inner_name + "' has no knobs");
        return STATUS_NOT_SUPPORTED;
    }
    auto create = [&](const std::string &text, NDIS_HANDLE *out) {
        return inner->create_miniport(text.empty() ? nullptr : text.c_str(), error, error_length,
                                      out);
    };
    NDIS_HANDLE inner_handle = nullptr;
    NDIS_STATUS status = STATUS_NOT_SUPPORTED;
    bool layer_knobs = prefer || knobs.empty() || inner->entry().ControlMiniport == nullptr;
    if (!layer_knobs) {
        status = create(all, &inner_handle);
        if (status == STATUS_NOT_SUPPORTED)
            layer_knobs = true; // a knob it does not know: perhaps one of the layer's
        else if (status != NDIS_STATUS_SUCCESS)
            return status;
    }
    if (layer_knobs) {
        status = create(theirs, &inner_handle);
        if (status != NDIS_STATUS_SUCCESS)
            return status;
    }
    auto result = std::make_unique<MiniportHandle>();
    result->miniport = std::make_unique<FaultMiniport>(inner, inner_handle);
    result->miniport->prefer_layer = prefer;
    if (layer_knobs) {
        for (const auto &[key, value] : knobs) {
            // The layer can add pends but cannot make a provider complete inline: asked at
            // open for an inline mode the provider does not have, it says so (a scenario that
            // needs inline completions then skips).  At run time, `inline` only stops the
            // layer's own pends.
            if (key.ends_with("_mode") && value == "inline" && !prefer &&
                !provider_has(*result->miniport, key)) {
                write_text(error, error_length,
                           "knob " + key + "=inline: the provider has no " + key +
                               ", and the fault layer cannot make it complete inline");
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

const NDK_HARNESS_PROVIDER kFaultEntry = kit::make_provider<MiniportHandle, oid_request>(
    "fault", open_adapter, close_adapter, create_miniport, destroy_miniport, control_miniport);

} // namespace

std::shared_ptr<Provider> wrap(std::shared_ptr<Provider> inner, bool prefer_layer)
{
    std::string options = "fault_provider=" + inner->load_name() + "\n" + inner->options();
    if (prefer_layer)
        options += "fault_prefer_layer=1\n";
    return std::make_shared<Provider>(&kFaultEntry, nullptr, inner->name(), std::move(options),
                                      "fault");
}

} // namespace ndk::fault

extern "C" const NDK_HARNESS_PROVIDER *ndk_fault_layer(void) { return &ndk::fault::kFaultEntry; }
