// The provider registry: built-in providers by name, any other by the path of a shared object
// that exports NdkHarnessGetProvider (core/include/ndk/provider.h, docs/providers.md).
#pragma once

#include "ndk/provider.h"

#include <memory>
#include <string>
#include <vector>

namespace ndk {

class Provider {
public:
    // "soft", or a path to a shared object.  Throws ndk::Error(STATUS_NOT_SUPPORTED) with the
    // reason when it cannot be loaded.
    static std::shared_ptr<Provider> load(const std::string &name_or_path);
    // Providers that can be opened here by name.
    static std::vector<std::string> available();

    // A provider entry under a name; `library` (a dlopen handle, or nullptr) is closed with
    // it, and `options` ("key=value" lines) come first in every CreateMiniport: the device of
    // "verbs:siw0", the provider a layer wraps (validate_provider=...).  `load_name` is what
    // Provider::load takes to give the same entry (with `options`, the same provider): a
    // layer stacked on this one loads it so.
    Provider(const NDK_HARNESS_PROVIDER *entry, void *library, std::string name,
             std::string options = {}, std::string load_name = {})
        : entry_(entry), library_(library), name_(std::move(name)), options_(std::move(options)),
          load_name_(load_name.empty() ? name_ : std::move(load_name))
    {
    }
    ~Provider();
    Provider(const Provider &) = delete;
    Provider &operator=(const Provider &) = delete;

    const NDK_HARNESS_PROVIDER &entry() const { return *entry_; }
    const std::string &name() const { return name_; }
    const std::string &load_name() const { return load_name_; }
    const std::string &options() const { return options_; }
    // entry().CreateMiniport with this provider's options before the caller's.
    NDIS_STATUS create_miniport(const char *options, char *error, ULONG error_length,
                                NDIS_HANDLE *miniport) const;

private:
    const NDK_HARNESS_PROVIDER *entry_;
    void *library_; // dlopen handle, or nullptr for a built-in
    std::string name_;
    std::string options_;
    std::string load_name_;
};

} // namespace ndk
