// The loop provider's entry (see core/include/ndk/provider.h): the example provider on the
// provider kit, in-process connections only (docs/adding-a-provider.md walks through it).
#pragma once

#include "ndk/provider.h"

extern "C" const NDK_HARNESS_PROVIDER *ndk_loop_provider(void);
