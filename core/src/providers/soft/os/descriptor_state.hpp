// Whether a descriptor has something to read right now, looked at without waiting and without
// taking anything: what the soft provider's knob `quiescent` asks of the transports' sockets.
#pragma once

namespace ndk::soft::os {

// Something waits to be read: data, a connection to accept, the peer's end (EOF, a reset) or
// an error, as poll() reports it at once.
bool readable_now(int fd);

} // namespace ndk::soft::os
