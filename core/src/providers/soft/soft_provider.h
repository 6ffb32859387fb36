// The built-in soft provider's entry (see core/include/ndk/provider.h).
#pragma once

#include "ndk/provider.h"

extern "C" const NDK_HARNESS_PROVIDER *ndk_soft_provider(void);
