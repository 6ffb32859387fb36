// The loop provider as a loadable provider (ndk conformance --provider path/to/lib.so).
#include "loop_provider.h"

extern "C" __attribute__((visibility("default"))) const NDK_HARNESS_PROVIDER *
NdkHarnessGetProvider(void)
{
    return ndk_loop_provider();
}
