// The miniport's NDIS OID requests (digest 3.7).  iWARP runs over TCP, so on siw the
// connection and endpoint tables list each ND entry followed by its TCP twin (the same
// 4-tuple: siw's TCP connection uses the rdma_cm addresses and ports).
#include "verbs_oid.hpp"

#include "verbs_objects.hpp"
#include "providers/kit/kit_oid.hpp"

#include <algorithm>
#include <cstring>
#include <unistd.h>

namespace ndk::verbs {
namespace {

SOCKADDR_INET inet(const sockaddr *address)
{
    SOCKADDR_INET out{};
    if (address != nullptr)
        std::memcpy(&out, address, length_of(address));
    return out;
}

// The adapters cannot close while their objects are listed (adapters_mu), nor the objects
// (each adapter's lock).
class VerbsOidAnswers final : public kit::OidAnswers {
public:
    explicit VerbsOidAnswers(Miniport &miniport) : miniport_(miniport) {}

    void set_enabled(bool enabled) override
    {
        std::lock_guard lock(miniport_.mu);
        miniport_.enabled = enabled;
    }
    bool mapped_to_tcp() override { return miniport_.device.iwarp; }
    NDIS_NDK_PERFORMANCE_COUNTERS counters() override
    {
        std::lock_guard lock(miniport_.mu);
        return miniport_.counters; // octets/frames: the device's, not counted here
    }
    void list_connections(ndis::ConnectionsTable &table) override
    {
        std::lock_guard adapters(miniport_.adapters_mu);
        for (VerbsAdapter *adapter : miniport_.adapters) {
            std::lock_guard lock(adapter->mu());
            adapter->for_each_object([&](Object &object) {
                if (object.type() != NdkObjectTypeConnector)
                    return;
                auto &c = static_cast<VConnector &>(object);
                if (c.state == VConnector::State::Established && c.id != nullptr)
                    table.add(inet(rdma_get_local_addr(c.id)), inet(rdma_get_peer_addr(c.id)));
            });
        }
    }
    void list_local_endpoints(ndis::LocalEndpointsTable &table) override
    {
        std::lock_guard adapters(miniport_.adapters_mu);
        for (VerbsAdapter *adapter : miniport_.adapters) {
            std::lock_guard lock(adapter->mu());
            adapter->for_each_object([&](Object &object) {
                const sockaddr *local = nullptr;
                bool listener = false;
                if (object.type() == NdkObjectTypeListener) {
                    auto &l = static_cast<VListener &>(object);
                    if (!l.listening || l.id == nullptr)
                        return;
                    local = rdma_get_local_addr(l.id);
                    listener = true;
                } else if (object.type() == NdkObjectTypeSharedEndpoint) {
                    local = reinterpret_cast<const sockaddr *>(
                        &static_cast<VSharedEndpoint &>(object).address);
                }
                if (local != nullptr && !object.close_requested())
                    table.add(inet(local), listener);
            });
        }
    }

private:
    Miniport &miniport_;
};

} // namespace

NDIS_STATUS oid_request(Miniport &miniport, NDIS_OID oid, bool set, void *buffer, ULONG length,
                        ULONG *written, ULONG *needed)
{
    VerbsOidAnswers answers(miniport);
    return kit::oid_request(answers, oid, set, buffer, length, written, needed);
}

} // namespace ndk::verbs
