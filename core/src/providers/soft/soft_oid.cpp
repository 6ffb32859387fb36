#include "soft_oid.hpp"

#include "soft_objects.hpp"
#include "providers/kit/kit_oid.hpp"

#include <algorithm>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace ndk::soft {
namespace {

SOCKADDR_INET sockaddr_inet(const Endpoint &endpoint)
{
    SOCKADDR_INET out{};
    ULONG length = sizeof out;
    endpoint.to_sockaddr(reinterpret_cast<SOCKADDR *>(&out), &length);
    return out;
}

// The fabric's wire lock keeps the adapters' objects and the counters still while the kit
// writes a table.  The soft fabric's TCP 4-tuple (iWARP) is the ND one.
class SoftOidAnswers final : public kit::OidAnswers {
public:
    explicit SoftOidAnswers(Miniport &miniport) : miniport_(miniport) {}

    void set_enabled(bool enabled) override
    {
        std::string why;
        miniport_.knobs.set("adapter_not_ready", enabled ? "0" : "1", why);
    }
    bool mapped_to_tcp() override
    {
        return miniport_.knobs.adapter_info({2, 1}).RdmaTechnology == NdkiWarp;
    }
    NDIS_NDK_PERFORMANCE_COUNTERS counters() override
    {
        std::lock_guard lock(Fabric::instance().wire());
        NDIS_NDK_PERFORMANCE_COUNTERS counters = miniport_.counters;
        for (SoftAdapter *adapter : miniport_.adapters)
            adapter->for_each_object([&](SoftObject &object) {
                if (object.type() == NdkObjectTypeQp)
                    static_cast<SoftQp &>(object).add_traffic_to(counters);
            });
        return counters;
    }
    void list_connections(ndis::ConnectionsTable &table) override
    {
        std::lock_guard lock(Fabric::instance().wire());
        for (SoftAdapter *adapter : miniport_.adapters) {
            adapter->for_each_object([&](SoftObject &object) {
                if (object.type() != NdkObjectTypeConnector)
                    return;
                auto &c = static_cast<SoftConnector &>(object);
                if (c.state == SoftConnector::State::Connected)
                    table.add(sockaddr_inet(c.local), sockaddr_inet(c.remote));
            });
        }
    }
    void list_local_endpoints(ndis::LocalEndpointsTable &table) override
    {
        std::lock_guard lock(Fabric::instance().wire());
        for (SoftAdapter *adapter : miniport_.adapters) {
            adapter->for_each_object([&](SoftObject &object) {
                const std::shared_ptr<PortReservation> *port = nullptr;
                bool listener = false;
                if (object.type() == NdkObjectTypeListener) {
                    auto &l = static_cast<SoftListener &>(object);
                    if (!l.listening)
                        return;
                    port = &l.port;
                    listener = true;
                } else if (object.type() == NdkObjectTypeSharedEndpoint) {
                    port = &static_cast<SoftSharedEndpoint &>(object).port;
                }
                if (port != nullptr && *port && !object.close_requested())
                    table.add(sockaddr_inet((*port)->endpoint()), listener);
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
    SoftOidAnswers answers(miniport);
    return kit::oid_request(answers, oid, set, buffer, length, written, needed);
}

} // namespace ndk::soft
