// The soft fabric: which virtual RNIC owns which IP address, and which local ports are in use.
// One per process.  Ports are reference counted (digest 3.5): a reservation is a shared handle,
// the listener and every connector accepted through it hold one, and the port is released
// only when the last holder lets go.
#pragma once

#include "ndk/ndkpi.h"
#include "soft_wire_lock.hpp"

#include <array>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ndk::soft {

struct IpAddress {
    int family = AF_INET; // AF_INET or AF_INET6
    std::array<uint8_t, 16> bytes{};

    auto operator<=>(const IpAddress &) const = default;
    bool is_unspecified() const;
    std::string to_string() const;
    static std::optional<IpAddress> parse(const std::string &text);
};

// A socket address as NDK passes it: PSOCKADDR + length.
struct Endpoint {
    IpAddress ip;
    uint16_t port = 0;

    // STATUS_INVALID_PARAMETER for a NULL address, an unknown family or a length too short for
    // its family.
    static NTSTATUS from_sockaddr(const SOCKADDR *address, ULONG length, Endpoint &out);
    // Writes the sockaddr; STATUS_BUFFER_TOO_SMALL (and *length updated) when it does not fit.
    NTSTATUS to_sockaddr(SOCKADDR *address, ULONG *length) const;
    ULONG sockaddr_length() const;
};

class Miniport;
class PortReservation;

// How many times a transport may pick another port when the one the fabric chose turns out to
// be busy on the host's network (another program's listening port; a 4-tuple the host's TCP
// still holds), as a kernel's bind or connect to port 0 would pick again.
inline constexpr int kPortRepicks = 16;

class SoftListener;

class Fabric {
public:
    static Fabric &instance();

    // The wire lock: every soft adapter's object state is guarded by it, so data can move
    // between two adapters (or within one) without lock ordering between them.  The data path
    // takes it shared (with its connection's own lock), everything else exclusive
    // (soft_wire_lock.hpp).
    WireLock &wire() { return wire_; }

    // Listening endpoints and established 4-tuples.  Wire lock held for all four.
    SoftListener *listener_at(const Endpoint &local) const;
    void set_listener(const Endpoint &local, SoftListener *listener); // nullptr: remove
    // False when the 4-tuple exists already (STATUS_ADDRESS_ALREADY_EXISTS, digest 1.8).
    bool add_tuple(const Endpoint &local, const Endpoint &remote);
    void remove_tuple(const Endpoint &local, const Endpoint &remote);

    // Give a miniport its addresses: the listed ones (STATUS_ADDRESS_ALREADY_EXISTS if taken,
    // STATUS_INVALID_ADDRESS if unparsable), or a fresh IPv4 + IPv6 pair when the list is empty.
    NTSTATUS attach(Miniport *miniport, const std::string &addresses,
                    std::vector<IpAddress> &assigned);
    void detach(Miniport *miniport);
    Miniport *owner(const IpAddress &ip) const;
    // Every miniport attached now (each holds at least one address).
    std::vector<Miniport *> miniports() const;

    // Reserve ip:port.  Port 0 picks a free port in [lo, hi] (STATUS_TOO_MANY_ADDRESSES when
    // none is free), the next one after the address's last pick, as kernels pick ephemeral
    // ports (RFC 6056): a port freed a moment ago is taken again only after the rest of the
    // range, so a new connection does not meet the old one's 4-tuple while the host's TCP
    // still closes it.  A taken port is STATUS_SHARING_VIOLATION.
    NTSTATUS reserve(const IpAddress &ip, uint16_t port, std::pair<uint16_t, uint16_t> range,
                     std::shared_ptr<PortReservation> &out);

private:
    friend class PortReservation;
    void release(const IpAddress &ip, uint16_t port);

    WireLock wire_;
    std::map<std::pair<IpAddress, uint16_t>, SoftListener *> listeners_;
    std::map<std::pair<std::pair<IpAddress, uint16_t>, std::pair<IpAddress, uint16_t>>, int>
        tuples_;

    mutable std::mutex mu_; // addresses and ports; taken after the wire lock, never before
    std::map<IpAddress, Miniport *> owners_;
    struct Ports {
        std::map<uint16_t, bool> used;
        uint32_t next = 0; // where the next port-0 pick starts (0: at the range's low end)
    };
    std::map<IpAddress, Ports> ports_;
    uint32_t next_auto_ = 1;
};

class PortReservation {
public:
    PortReservation(IpAddress ip, uint16_t port) : endpoint_{ip, port} {}
    ~PortReservation() { Fabric::instance().release(endpoint_.ip, endpoint_.port); }
    PortReservation(const PortReservation &) = delete;
    PortReservation &operator=(const PortReservation &) = delete;
    const Endpoint &endpoint() const { return endpoint_; }

private:
    Endpoint endpoint_;
};

} // namespace ndk::soft
