// A soft miniport: one virtual RNIC, with its knobs, its IP addresses on the
// soft fabric, the NDK adapters opened on it (several may be, digest 1.1) and the
// NDIS_NDK_PERFORMANCE_COUNTERS that OID_NDK_STATISTICS reports (digest 3.7).
#pragma once

#include "soft_fabric.hpp"
#include "soft_knobs.hpp"

#include <array>
#include <atomic>
#include <memory>
#include <vector>

namespace ndk::soft {

class SoftAdapter;
class Transport;

class Miniport {
public:
    Knobs knobs;
    std::vector<IpAddress> addresses;
    // Wire lock held (exclusive) for `adapters`, and for reading `counters`.
    std::vector<SoftAdapter *> adapters;
    NDIS_NDK_PERFORMANCE_COUNTERS counters{};
    // The objects of each kind its adapters hold (wire lock held): the caps a create is held to,
    // knobs max_*_count, are the miniport's NDIS_NDK_CAPABILITIES counts, which count across
    // all its adapters (digest 3.7).
    std::array<ULONG, NdkObjectTypeMax> object_counts{};
    // What carries its connections when it is not the in-process fabric (knob transport=shm);
    // made once the addresses are known, gone before they are released.
    std::unique_ptr<Transport> transport;
    // Knob link_ends_held (read only): the TCP streams the tcp transport found ended and left
    // unacted on while knob link_end was held.
    std::atomic<unsigned> link_ends_held{0};

    Miniport();
    ~Miniport();

    // Add to one counter: atomically, since connections on several threads count at once
    // under the shared wire lock (soft_wire_lock.hpp).
    static void count(ULONG64 &counter, int64_t delta = 1)
    {
        std::atomic_ref<ULONG64>(counter).fetch_add(static_cast<ULONG64>(delta),
                                                     std::memory_order_relaxed);
    }

    bool owns(const IpAddress &ip) const
    {
        for (const auto &a : addresses)
            if (a == ip)
                return true;
        return false;
    }
};

} // namespace ndk::soft
