// Providers by name or path: the built-in providers as each declares itself (its
// BuiltinProvider, providers/*/NAME_builtin.cpp, listed by providers/builtin_providers.cpp), and
// dlopen of any other.  A layer is not a provider here: it wraps a Provider it is handed.
#include "ndk/registry.hpp"

#include "ndk/status.hpp"

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

// "NAME" or "NAME:QUALIFIER" of a built-in provider; nullptr when no built-in is so named.
std::shared_ptr<Provider> load_builtin(const std::string &spelling)
{
    const size_t colon = spelling.find(':');
    const std::string name = spelling.substr(0, colon);
    for (const BuiltinProvider *builtin : builtin_providers()) {
        if (name != builtin->name)
            continue;
        if (colon == std::string::npos)
            return std::make_shared<Provider>(builtin->entry(), nullptr, name, "", builtin);
        const std::string qualifier = spelling.substr(colon + 1);
        if (builtin->qualifier_knob == nullptr || qualifier.empty())
            throw Error(STATUS_NOT_SUPPORTED, "provider '" + name + "' takes no ':" +
                                                  (qualifier.empty() ? "" : qualifier) +
                                                  "' qualifier");
        return std::make_shared<Provider>(builtin->entry(), nullptr, spelling,
                                          std::string(builtin->qualifier_knob) + "=" + qualifier +
                                              "\n",
                                          builtin);
    }
    return nullptr;
}

std::shared_ptr<Provider> load_library(const std::string &path)
{
    void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
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
        throw Error(STATUS_NOT_SUPPORTED,
                    path + " does not export a valid " + NDK_HARNESS_PROVIDER_SYMBOL);
    }
    return std::make_shared<Provider>(entry, library, path);
}

} // namespace

std::shared_ptr<Provider> Provider::load(const std::string &name_or_path)
{
    if (name_or_path.find('/') != std::string::npos)
        return load_library(name_or_path);
    if (auto builtin = load_builtin(name_or_path))
        return builtin;
    std::string names;
    for (const std::string &name : available())
        names += (names.empty() ? "" : ", ") + name;
    throw Error(STATUS_NOT_SUPPORTED, "no provider named '" + name_or_path + "' (built-in: " +
                                          names + "; or give a path to a .so)");
}

std::vector<std::string> Provider::available()
{
    std::vector<std::string> names;
    for (const BuiltinProvider *builtin : builtin_providers())
        names.emplace_back(builtin->name);
    return names;
}

} // namespace ndk
