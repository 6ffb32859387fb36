// The verbs provider as a loadable provider (ndk conformance --provider path/to/lib.so), for
// consumers that load providers by path.
#include "verbs_provider.h"

extern "C" __attribute__((visibility("default"))) const NDK_HARNESS_PROVIDER *
NdkHarnessGetProvider(void)
{
    return ndk_verbs_provider();
}
