// The RDMA device behind a verbs miniport: which one (by name or by an IP address it owns),
// its addresses, and the NDK_ADAPTER_INFO and NDIS_NDK_CAPABILITIES its limits give.
#pragma once

#include "ndk/ndkpi.h"

#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <string>
#include <vector>

namespace ndk::verbs {

struct Device {
    std::string name;                        // e.g. rxe0, siw0
    std::vector<sockaddr_storage> addresses; // the IP addresses rdma_cm binds to this device
    ibv_device_attr attr{};
    ibv_port_attr port{};
    bool iwarp = false;
    ULONG max_inline = 0;    // what a QP was granted when it asked for inline data
    bool cq_resize = false;  // ibv_resize_cq works on this device
    bool memory_windows = false;

    // The adapter information for a negotiated version (digest 2.1).
    NDK_ADAPTER_INFO info(NDK_VERSION version) const;
    // The counts of NDIS_NDK_CAPABILITIES (digest 3.7) from ibv_query_device: max_qp, max_cq,
    // max_mr, max_pd, max_srq, and max_mw where windows exist (0 otherwise); the header is
    // the caller's.
    void ndk_capabilities(NDIS_NDK_CAPABILITIES &capabilities) const;
    std::string address_text() const; // "a,b" as the `address` knob reads
};

// Choose a device: `name` (if not empty) or the device that owns the first of `address`
// ("a[,b]", if not empty), else the first device that has an IP address.
// STATUS_DEVICE_NOT_READY with the reason in `why` when there is none (no RDMA device on this
// host) or when the named device does not own every address given; STATUS_INVALID_PARAMETER
// for a name or address that matches no device.  The given addresses come first in
// Device::addresses.
NTSTATUS select_device(const std::string &name, const std::string &address, Device &out,
                       std::string &why);

// Text of an address ("192.0.2.1" or "fd00::1"), and a port of either family.
std::string address_to_text(const sockaddr *address);
uint16_t port_of(const sockaddr *address);
socklen_t length_of(const sockaddr *address);

} // namespace ndk::verbs
