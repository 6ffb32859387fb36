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

    virtual ~Provider();
    const NDK_HARNESS_PROVIDER &entry() const { return *entry_; }
    const std::string &name() const { return name_; }
    // entry().CreateMiniport, for a provider that needs to know which instance it is (a layer
    // wrapping another provider: its entry is shared by every wrapped provider).
    virtual NDIS_STATUS create_miniport(const char *options, char *error, ULONG error_length,
                                        NDIS_HANDLE *miniport) const;

protected:
    Provider(const NDK_HARNESS_PROVIDER *entry, void *library, std::string name)
        : entry_(entry), library_(library), name_(std::move(name))
    {
    }

private:
    const NDK_HARNESS_PROVIDER *entry_;
    void *library_; // dlopen handle, or nullptr for a built-in
    std::string name_;
};

} // namespace ndk
