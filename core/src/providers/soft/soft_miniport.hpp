// A soft miniport: one virtual RNIC, with its knobs and its IP addresses on the soft fabric.
// NDK adapters are opened on it (several may be, digest 1.1).
#pragma once

#include "soft_fabric.hpp"
#include "soft_knobs.hpp"

#include <vector>

namespace ndk::soft {

class Miniport {
public:
    Knobs knobs;
    std::vector<IpAddress> addresses;

    bool owns(const IpAddress &ip) const
    {
        for (const auto &a : addresses)
            if (a == ip)
                return true;
        return false;
    }
};

} // namespace ndk::soft
