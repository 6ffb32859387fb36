// The fault layer (core/src/layers/fault/): the test knobs `fail`, `hold`, `create_mode`,
// `request_mode`, `close_mode` and `seed` at the ABI edge of any provider, for providers that
// do not have them (docs/knobs.md, docs/architecture.md).
#pragma once

#include "ndk/provider.h"
#include "ndk/registry.hpp"

#include <memory>

namespace ndk::fault {

// `inner` behind the fault layer: the layer's entry with fault_provider=<inner>.  Its name is
// the inner provider's.  With `prefer_layer`, the layer supplies its knobs even where the
// provider has them (a test of the layer against a provider known to conform).
std::shared_ptr<Provider> wrap(std::shared_ptr<Provider> inner, bool prefer_layer = false);

} // namespace ndk::fault

// The fault layer's provider entry, for any harness: CreateMiniport takes
// fault_provider=NAME (a built-in provider or the path of one), fault_prefer_layer=1, the
// layer's knobs, and passes the rest to that provider.
extern "C" const NDK_HARNESS_PROVIDER *ndk_fault_layer(void);
