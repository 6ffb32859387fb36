// How the registry offers the verbs provider (ndk/registry.hpp): "verbs", and "verbs:DEVICE"
// for knob device=DEVICE (verbs:siw0), so that a run names the device in the provider name
// (python/ndk/quirks.py keys quirks by it).
#include "ndk/registry.hpp"
#include "verbs_provider.h"

namespace ndk::verbs {

extern const BuiltinProvider kBuiltin{
    .name = "verbs", .entry = ndk_verbs_provider, .qualifier_knob = "device", .run_scoped = {}};

} // namespace ndk::verbs
