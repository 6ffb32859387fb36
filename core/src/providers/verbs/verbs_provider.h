// The built-in verbs provider's entry (see core/include/ndk/provider.h).  Built only when
// libibverbs and librdmacm are found (NDK_HAVE_VERBS).
#pragma once

#include "ndk/provider.h"

extern "C" const NDK_HARNESS_PROVIDER *ndk_verbs_provider(void);
