// The soft provider packaged as a loadable provider: the same code behind the shared-object
// entry point, so the plug-in path (ndk conformance --provider path/to/lib.so) is tested with
// a provider that is known to conform.
#include "soft_provider.h"

extern "C" __attribute__((visibility("default"))) const NDK_HARNESS_PROVIDER *
NdkHarnessGetProvider(void)
{
    return ndk_soft_provider();
}
