// The provider registry: built-in providers by name, any other by the path of a shared object
// that exports NdkHarnessGetProvider (core/include/ndk/provider.h, docs/providers.md).  Layers
// (the fault and validation layers) are not in it: each stacks itself over a Provider object it
// is handed (ndk::fault::wrap, ndk::validate::wrap).
#pragma once

#include "ndk/provider.h"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ndk {

// A provider built into the harness, as it declares itself beside its entry: its name, and
// what it means by "NAME:QUALIFIER" and by a run of its own.
struct BuiltinProvider {
    const char *name;
    const NDK_HARNESS_PROVIDER *(*entry)();
    // "NAME:QUALIFIER" is the provider with knob qualifier_knob=QUALIFIER (soft:tcp is soft
    // with transport=tcp), named so that a run, its report and its quirks say which; nullptr:
    // the provider takes no qualifier.
    const char *qualifier_knob;
    // A knob that a run sets to a name of its own when `when_knob` is `when_value` and the
    // run named none (soft: with transport=shm, shm_fabric, so runs side by side keep apart).
    struct RunScoped {
        const char *when_knob;
        const char *when_value;
        const char *knob;
    };
    std::span<const RunScoped> run_scoped;
};

// Every provider built into the harness (core/src/providers/builtin_providers.cpp).
std::span<const BuiltinProvider *const> builtin_providers();

class Provider {
public:
    // A built-in name ("soft", "soft:tcp", ...), or a path to a shared object.  Throws
    // ndk::Error(STATUS_NOT_SUPPORTED) with the reason when it cannot be loaded.
    static std::shared_ptr<Provider> load(const std::string &name_or_path);
    // Providers that can be opened here by name.
    static std::vector<std::string> available();

    // A layer's CreateMiniport: a miniport of the layer over one of `beneath`, the provider it
    // is stacked on, which it creates itself (beneath->create_miniport).
    using LayerCreate = NDIS_STATUS (*)(const std::shared_ptr<Provider> &beneath,
                                        const char *options, char *error, ULONG error_length,
                                        NDIS_HANDLE *miniport);

    // A provider entry under a name; `library` (a dlopen handle, or nullptr) is closed with
    // it, and `options` ("key=value" lines) come first in every CreateMiniport (the device of
    // "verbs:siw0", the transport of "soft:tcp").  `builtin` is how a built-in provider
    // declared itself (nullptr for one loaded by path).
    Provider(const NDK_HARNESS_PROVIDER *entry, void *library, std::string name,
             std::string options = {}, const BuiltinProvider *builtin = nullptr)
        : entry_(entry), library_(library), name_(std::move(name)), options_(std::move(options)),
          builtin_(builtin)
    {
    }
    // A layer stacked over `beneath`: `entry` answers everything but CreateMiniport, which is
    // `create` over `beneath`.  It carries `beneath`'s name (a run names the provider, not its
    // layers) and asks it for its run-scoped knobs.
    Provider(const NDK_HARNESS_PROVIDER *entry, std::shared_ptr<Provider> beneath,
             LayerCreate create)
        : entry_(entry), library_(nullptr), name_(beneath->name_), builtin_(nullptr),
          beneath_(std::move(beneath)), layer_create_(create)
    {
    }
    ~Provider();
    Provider(const Provider &) = delete;
    Provider &operator=(const Provider &) = delete;

    const NDK_HARNESS_PROVIDER &entry() const { return *entry_; }
    const std::string &name() const { return name_; }
    const std::string &options() const { return options_; }
    // The knobs a run sets to a name of its own, given its `options` ("key=value" lines or
    // ';'-separated pairs) over this provider's: shm_fabric for soft with transport=shm (or
    // soft:shm) when the options name no fabric.
    std::vector<std::string> run_scoped_knobs(const std::string &options) const;
    // A miniport with this provider's options before the caller's (a layer's: the layer over
    // a miniport of the provider beneath it).
    NDIS_STATUS create_miniport(const char *options, char *error, ULONG error_length,
                                NDIS_HANDLE *miniport) const;

private:
    const NDK_HARNESS_PROVIDER *entry_;
    void *library_; // dlopen handle, or nullptr for a built-in
    std::string name_;
    std::string options_;
    const BuiltinProvider *builtin_;   // nullptr for a layer or one loaded by path
    std::shared_ptr<Provider> beneath_; // a layer's: the provider it is stacked on
    LayerCreate layer_create_ = nullptr;
};

} // namespace ndk
