// The providers built into the harness, each as it declares itself beside its entry
// (providers/*/NAME_builtin.cpp): what ndk::Provider::load finds by name, in the order
// ndk::Provider::available lists them.  A provider of another tree is loaded by path instead.
#include "ndk/registry.hpp"

namespace ndk {

namespace soft {
extern const BuiltinProvider kBuiltin;
}
namespace loop {
extern const BuiltinProvider kBuiltin;
}
#ifdef NDK_HAVE_VERBS
namespace verbs {
extern const BuiltinProvider kBuiltin;
}
#endif

std::span<const BuiltinProvider *const> builtin_providers()
{
    static const BuiltinProvider *const kBuiltins[] = {
        &soft::kBuiltin,
        &loop::kBuiltin,
#ifdef NDK_HAVE_VERBS
        &verbs::kBuiltin,
#endif
    };
    return kBuiltins;
}

} // namespace ndk
