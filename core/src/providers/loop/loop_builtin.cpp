// How the registry offers the loop provider (ndk/registry.hpp): "loop", with no qualifier.
// Not part of the provider template the SDK installs from this folder: a provider outside the
// tree is loaded by path.
#include "loop_provider.h"
#include "ndk/registry.hpp"

namespace ndk::loop {

extern const BuiltinProvider kBuiltin{
    .name = "loop", .entry = ndk_loop_provider, .qualifier_knob = nullptr, .run_scoped = {}};

} // namespace ndk::loop
