// The tcp transport: a soft adapter as an iWARP endpoint on the host's TCP stack (knob
// transport=tcp; docs/transport.md, "The tcp transport in the soft provider"; docs/iwarp.md).
//
// Every listener is a listening socket on the adapter's address and port, every connection a
// kernel TCP connection: MPA revision 2 with RFC 6581's enhanced establishment carries the
// connect request, the reply or reject with their private data and read limits (tcp_establish
// .hpp); DDP and RDMAP carry the data (tcp_link.hpp), so the peer may be another soft adapter
// of any process or host, or another implementation of the protocol (Linux siw).  One progress
// thread per adapter's miniport (tcp_progress.hpp) accepts, establishes and receives; the NDK
// rules above are the soft provider's own, as for every transport.
#pragma once

#include "providers/soft/soft_transport.hpp"

#include <memory>

namespace ndk::soft {

// The transport of `miniport`, whose addresses are assigned: checks that each is local,
// starts the progress thread.  AddressUnavailable when one is not this host's (nothing can
// listen there or connect from it), std::system_error when sockets fail.
std::unique_ptr<Transport> make_tcp_transport(Miniport &miniport);

} // namespace ndk::soft
