// The loop provider's fabric: every loop miniport of the process, by address, with its
// listeners, the ports in use and the memory tokens.  There is no wire: a connection joins two
// QPs of this process (two adapters, or one adapter with itself) and data moves by memcpy.
// One mutex guards the fabric and every loop object of every adapter, so data moves between
// two adapters without lock ordering; no consumer callback is ever called with it held.
#pragma once

#include "ndk/ndkpi.h"

#include <array>
#include <compare>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ndk::loop {

class LoopAdapter;
struct LListener;
struct LMr;

// An IPv4 or IPv6 address (the bytes of in_addr / in6_addr) and a port.
struct Endpoint {
    uint16_t family = 0; // AF_INET or AF_INET6
    std::array<uint8_t, 16> ip{};
    uint16_t port = 0; // host order

    static std::optional<Endpoint> parse(const std::string &text); // an address, port 0
    // A consumer's SOCKADDR: STATUS_INVALID_PARAMETER when malformed (docs/semantics.md, ADDRESS).
    static NTSTATUS from_sockaddr(const SOCKADDR *address, ULONG length, Endpoint &out);
    // Into the consumer's buffer: STATUS_BUFFER_TOO_SMALL with the size needed.
    NTSTATUS to_sockaddr(PSOCKADDR address, ULONG *length) const;
    SOCKADDR_INET to_inet() const;
    std::string text() const; // the address without the port
    bool unspecified() const;
    Endpoint host() const { return {family, ip, 0}; }
    auto operator<=>(const Endpoint &) const = default;
};

// One RNIC: its addresses, its open adapters, its counters (OID_NDK_STATISTICS).
struct Miniport {
    std::vector<Endpoint> addresses;
    std::vector<LoopAdapter *> adapters;
    bool enabled = true; // OID_NDK_SET_STATE
    NDIS_NDK_PERFORMANCE_COUNTERS counters{};
};

class Fabric {
public:
    static Fabric &instance();
    std::mutex mu;

    // Give a miniport its addresses ("" = one IPv4 and one IPv6 address of its own):
    // STATUS_INVALID_ADDRESS for a malformed one, STATUS_ADDRESS_ALREADY_EXISTS for one taken.
    NTSTATUS attach(Miniport &miniport, const std::string &addresses);
    void detach(Miniport &miniport);
    Miniport *owner(const Endpoint &address) const;

    // Ports: a listener's port is held by it and by every connector it delivered, a connect's
    // by its connector (digest 3.5).  reserve() takes `at` (port 0: an ephemeral port):
    // STATUS_SHARING_VIOLATION when in use, STATUS_TOO_MANY_ADDRESSES when none is free.
    NTSTATUS reserve(Endpoint &at);
    void hold(const Endpoint &at) { ++ports_[at]; }
    void release(const Endpoint &at);

    std::map<Endpoint, LListener *> listeners;

    // Memory tokens: a region's local token and its remote token, never 0 (docs/semantics.md,
    // TOKENS), unique in the process.
    struct Token {
        LMr *mr;
        bool remote;
    };
    UINT32 add_token(LMr *mr, bool remote);
    const Token *token(UINT32 value) const;
    void remove_token(UINT32 value) { tokens_.erase(value); }

private:
    std::map<Endpoint, Miniport *> owners_;
    std::map<Endpoint, int> ports_;
    std::unordered_map<UINT32, Token> tokens_;
    UINT32 next_token_ = 0x100;
    uint32_t next_miniport_ = 1;
};

inline std::mutex &fabric_mu() { return Fabric::instance().mu; }

} // namespace ndk::loop
