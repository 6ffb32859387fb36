// The shm transport: a soft adapter's connections to any process of this host and user
// (knob transport=shm; docs/transport.md, "The shm transport in the soft provider").
//
// A miniport opened with it claims its addresses in the host's endpoint registry (so no other
// process can take them), makes each listener reachable through an abstract socket, and runs
// one progress thread that carries establishment and the data of every established connection
// (shm_link.hpp, shm_progress.hpp).  Everything above (the NDK rules) is the soft provider's
// own: the transport only moves the events of soft_connector_link.hpp and the operations of
// soft_channel.hpp, and calls the target side (soft_target.hpp) where they arrive.
#pragma once

#include "providers/soft/soft_transport.hpp"

#include <memory>

namespace ndk::soft {

// The transport of `miniport`, whose addresses are assigned: claims them in the registry
// (AddressUnavailable when another running process holds one), starts the progress thread.  std::system_error when the
// registry cannot be used.
std::unique_ptr<Transport> make_shm_transport(Miniport &miniport);

} // namespace ndk::soft
