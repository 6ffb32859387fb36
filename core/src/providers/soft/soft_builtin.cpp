// How the registry offers the soft provider (ndk/registry.hpp): "soft", "soft:TRANSPORT" for
// knob transport=TRANSPORT (soft:inproc, soft:shm, soft:tcp), and, with transport=shm, the
// shm fabric a run keeps to itself (docs/transport.md, "Addresses and fabrics").
#include "ndk/registry.hpp"
#include "soft_provider.h"

namespace ndk::soft {

namespace {
constexpr BuiltinProvider::RunScoped kRunScoped[] = {
    {.when_knob = "transport", .when_value = "shm", .knob = "shm_fabric"}};
} // namespace

extern const BuiltinProvider kBuiltin{.name = "soft",
                                      .entry = ndk_soft_provider,
                                      .qualifier_knob = "transport",
                                      .run_scoped = kRunScoped};

} // namespace ndk::soft
