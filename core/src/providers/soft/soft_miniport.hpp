// A soft miniport: one virtual RNIC, with its knobs, its IP addresses on the
// soft fabric, the NDK adapters opened on it (several may be, digest 1.1) and the
// NDIS_NDK_PERFORMANCE_COUNTERS that OID_NDK_STATISTICS reports (digest 3.7).
#pragma once

#include "soft_fabric.hpp"
#include "soft_knobs.hpp"

#include <vector>

namespace ndk::soft {

class SoftAdapter;

class Miniport {
public:
    Knobs knobs;
    std::vector<IpAddress> addresses;
    // Wire lock held for these two.
    std::vector<SoftAdapter *> adapters;
    NDIS_NDK_PERFORMANCE_COUNTERS counters{};

    bool owns(const IpAddress &ip) const
    {
        for (const auto &a : addresses)
            if (a == ip)
                return true;
        return false;
    }
};

} // namespace ndk::soft
