#include "ndk/registry.hpp"

#include "ndk/call.hpp"
#include "ndk/fault.hpp"
#include "providers/loop/loop_provider.h"
#include "providers/soft/soft_provider.h"
#ifdef NDK_HAVE_VERBS
#include "providers/verbs/verbs_provider.h"
#endif

#include <dlfcn.h>

namespace ndk {

namespace {

// An entry of a revision this harness knows (ndk/provider.h), at least as long as that
// revision: version 2 (no QueryNdkCapabilities) still loads.
bool loadable_revision(const NDK_HARNESS_PROVIDER &entry)
{
    if (entry.Version == NDK_HARNESS_PROVIDER_VERSION_2)
        return entry.Size >= NDK_SIZEOF_HARNESS_PROVIDER_VERSION_2;
    return entry.Version == NDK_HARNESS_PROVIDER_VERSION_3 &&
           entry.Size >= sizeof(NDK_HARNESS_PROVIDER);
}

} // namespace

std::shared_ptr<Provider> Provider::load(const std::string &name_or_path)
{
    if (name_or_path == "soft")
        return std::shared_ptr<Provider>(new Provider(ndk_soft_provider(), nullptr, "soft"));
    // "soft:TRANSPORT" (soft:shm, soft:tcp): the soft provider with knob transport=TRANSPORT,
    // named so that a run, its report and its quirks (python/ndk/quirks.py) say which.
    if (name_or_path.rfind("soft:", 0) == 0 && name_or_path.size() > 5)
        return std::make_shared<Provider>(ndk_soft_provider(), nullptr, name_or_path,
                                          "transport=" + name_or_path.substr(5) + "\n", "soft");
    // The example provider on the provider kit (core/src/providers/loop/).
    if (name_or_path == "loop")
        return std::shared_ptr<Provider>(new Provider(ndk_loop_provider(), nullptr, "loop"));
    // The fault layer, as a layer stacked over it loads it (options: fault_provider=...).
    if (name_or_path == "fault")
        return std::make_shared<Provider>(ndk_fault_layer(), nullptr, "fault");
#ifdef NDK_HAVE_VERBS
    if (name_or_path == "verbs")
        return std::shared_ptr<Provider>(new Provider(ndk_verbs_provider(), nullptr, "verbs"));
    // "verbs:DEVICE" (e.g. verbs:siw0): the verbs provider on that RDMA device, so a run names
    // the device in the provider name (python/ndk/quirks.py keys quirks by it).
    if (name_or_path.rfind("verbs:", 0) == 0 && name_or_path.size() > 6)
        return std::make_shared<Provider>(ndk_verbs_provider(), nullptr, name_or_path,
                                          "device=" + name_or_path.substr(6) + "\n", "verbs");
#endif
    if (name_or_path.find('/') == std::string::npos)
        throw Error(STATUS_NOT_SUPPORTED, "no provider named '" + name_or_path +
                                              "' (built-in: soft, loop; or give a path to a .so)");
    void *library = dlopen(name_or_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr)
        throw Error(STATUS_NOT_SUPPORTED, "cannot load provider: " + std::string(dlerror()));
    auto get = reinterpret_cast<NDK_HARNESS_GET_PROVIDER>(
        dlsym(library, NDK_HARNESS_PROVIDER_SYMBOL));
    const NDK_HARNESS_PROVIDER *entry = get ? get() : nullptr;
    if (entry == nullptr || !loadable_revision(*entry) ||
        entry->Characteristics.OpenNDKAdapterHandler == nullptr ||
        entry->Characteristics.CloseNDKAdapterHandler == nullptr ||
        entry->CreateMiniport == nullptr || entry->DestroyMiniport == nullptr) {
        dlclose(library);
        throw Error(STATUS_NOT_SUPPORTED, name_or_path + " does not export a valid " +
                                              NDK_HARNESS_PROVIDER_SYMBOL);
    }
    return std::shared_ptr<Provider>(new Provider(entry, library, name_or_path));
}

std::vector<std::string> Provider::available()
{
#ifdef NDK_HAVE_VERBS
    return {"soft", "loop", "verbs"};
#else
    return {"soft", "loop"};
#endif
}

NDIS_STATUS Provider::create_miniport(const char *options, char *error, ULONG error_length,
                                      NDIS_HANDLE *miniport) const
{
    if (options_.empty())
        return entry_->CreateMiniport(options, error, error_length, miniport);
    std::string all = options_ + (options ? options : "");
    return entry_->CreateMiniport(all.c_str(), error, error_length, miniport);
}

Provider::~Provider()
{
    if (library_ != nullptr)
        dlclose(library_);
}

} // namespace ndk
