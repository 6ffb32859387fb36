// The soft fabric (core/src/providers/soft/soft_fabric.{hpp,cpp}): IP ownership, port
// reservation with SHARING_VIOLATION / TOO_MANY_ADDRESSES, reference-counted release, and the
// addresses adapters get.  The fabric is one per process, so every test here uses addresses of
// its own from TEST-NET-1 (192.0.2.0/24), which the fabric never hands out by itself.
#include "support.hpp"

#include "ndk/objects.hpp"
#include "providers/soft/soft_fabric.hpp"
#include "providers/soft/soft_miniport.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <set>

namespace {

using ndk::soft::Endpoint;
using ndk::soft::Fabric;
using ndk::soft::IpAddress;
using ndk::soft::PortReservation;

IpAddress ip(const std::string &text)
{
    auto parsed = IpAddress::parse(text);
    EXPECT_TRUE(parsed) << text;
    return parsed.value_or(IpAddress{});
}

constexpr std::pair<uint16_t, uint16_t> kDefaultRange{49152, 65535};

TEST(FabricAddress, ParseFormatAndEndpointFromSockaddr)
{
    IpAddress v4 = ip("192.0.2.1");
    EXPECT_EQ(v4.family, AF_INET);
    EXPECT_EQ(v4.to_string(), "192.0.2.1");
    EXPECT_FALSE(v4.is_unspecified());
    IpAddress v6 = ip("2001:db8::1");
    EXPECT_EQ(v6.family, AF_INET6);
    EXPECT_EQ(v6.to_string(), "2001:db8::1");
    EXPECT_TRUE(ip("0.0.0.0").is_unspecified());
    EXPECT_TRUE(ip("::").is_unspecified());
    EXPECT_FALSE(IpAddress::parse("192.0.2"));
    EXPECT_FALSE(IpAddress::parse("host.example"));
    EXPECT_FALSE(IpAddress::parse(""));
    EXPECT_NE(ip("192.0.2.1"), ip("192.0.2.2"));
    EXPECT_EQ(ip("192.0.2.1"), ip("192.0.2.1"));
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = htons(4791);
    inet_pton(AF_INET, "192.0.2.9", &in.sin_addr);
    Endpoint e;
    ASSERT_STATUS(STATUS_SUCCESS,
                  Endpoint::from_sockaddr(reinterpret_cast<SOCKADDR *>(&in), sizeof in, e));
    EXPECT_EQ(e.ip, ip("192.0.2.9"));
    EXPECT_EQ(e.port, 4791);
    EXPECT_EQ(e.sockaddr_length(), sizeof(sockaddr_in));

    sockaddr_in6 in6{};
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(80);
    inet_pton(AF_INET6, "2001:db8::9", &in6.sin6_addr);
    ASSERT_STATUS(STATUS_SUCCESS,
                  Endpoint::from_sockaddr(reinterpret_cast<SOCKADDR *>(&in6), sizeof in6, e));
    EXPECT_EQ(e.ip, ip("2001:db8::9"));
    EXPECT_EQ(e.port, 80);
    EXPECT_EQ(e.sockaddr_length(), sizeof(sockaddr_in6));

    // NULL, too short for the family, unknown family.
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, Endpoint::from_sockaddr(nullptr, sizeof in, e));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  Endpoint::from_sockaddr(reinterpret_cast<SOCKADDR *>(&in), sizeof in - 1, e));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  Endpoint::from_sockaddr(reinterpret_cast<SOCKADDR *>(&in6), sizeof in, e));
    sockaddr_storage unix_like{};
    unix_like.ss_family = AF_UNIX;
    EXPECT_STATUS(
        STATUS_INVALID_PARAMETER,
        Endpoint::from_sockaddr(reinterpret_cast<SOCKADDR *>(&unix_like), sizeof unix_like, e));
}

TEST(FabricAddress, EndpointToSockaddrReportsTheSizeItNeeds)
{
    Endpoint e{ip("2001:db8::7"), 1234};
    sockaddr_in6 out{};
    ULONG length = sizeof(sockaddr_in); // too small for IPv6
    EXPECT_STATUS(STATUS_BUFFER_TOO_SMALL,
                  e.to_sockaddr(reinterpret_cast<SOCKADDR *>(&out), &length));
    EXPECT_EQ(length, sizeof(sockaddr_in6));
    length = 0;
    EXPECT_STATUS(STATUS_BUFFER_TOO_SMALL, e.to_sockaddr(nullptr, &length));
    EXPECT_EQ(length, sizeof(sockaddr_in6));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  e.to_sockaddr(reinterpret_cast<SOCKADDR *>(&out), nullptr));

    length = sizeof out + 10;
    ASSERT_STATUS(STATUS_SUCCESS, e.to_sockaddr(reinterpret_cast<SOCKADDR *>(&out), &length));
    EXPECT_EQ(length, sizeof(sockaddr_in6));
    EXPECT_EQ(out.sin6_family, AF_INET6);
    EXPECT_EQ(ntohs(out.sin6_port), 1234);
    Endpoint back;
    ASSERT_STATUS(STATUS_SUCCESS,
                  Endpoint::from_sockaddr(reinterpret_cast<SOCKADDR *>(&out), length, back));
    EXPECT_EQ(back.ip, e.ip);
    EXPECT_EQ(back.port, e.port);
}

TEST(FabricPorts, TakenPortIsASharingViolation)
{
    auto &fabric = Fabric::instance();
    std::shared_ptr<PortReservation> first, second, other_ip;
    ASSERT_STATUS(STATUS_SUCCESS, fabric.reserve(ip("192.0.2.10"), 4000, kDefaultRange, first));
    ASSERT_TRUE(first);
    EXPECT_EQ(first->endpoint().port, 4000);
    EXPECT_EQ(first->endpoint().ip, ip("192.0.2.10"));
    EXPECT_STATUS(STATUS_SHARING_VIOLATION,
                  fabric.reserve(ip("192.0.2.10"), 4000, kDefaultRange, second));
    EXPECT_FALSE(second);
    // The same port on another address is free.
    EXPECT_STATUS(STATUS_SUCCESS, fabric.reserve(ip("192.0.2.11"), 4000, kDefaultRange, other_ip));
}

TEST(FabricPorts, ReleasedOnlyWithTheLastReference)
{
    auto &fabric = Fabric::instance();
    std::shared_ptr<PortReservation> listener, again;
    ASSERT_STATUS(STATUS_SUCCESS, fabric.reserve(ip("192.0.2.12"), 5000, kDefaultRange, listener));
    std::shared_ptr<PortReservation> accepted = listener; // e.g. a connector accepted through it
    listener.reset();
    EXPECT_STATUS(STATUS_SHARING_VIOLATION,
                  fabric.reserve(ip("192.0.2.12"), 5000, kDefaultRange, again));
    accepted.reset();
    EXPECT_STATUS(STATUS_SUCCESS, fabric.reserve(ip("192.0.2.12"), 5000, kDefaultRange, again));
}

TEST(FabricPorts, PortZeroPicksFreePortsInTheRangeUntilNoneIsLeft)
{
    auto &fabric = Fabric::instance();
    const IpAddress addr = ip("192.0.2.13");
    const std::pair<uint16_t, uint16_t> range{50000, 50002};
    std::vector<std::shared_ptr<PortReservation>> held(3);
    std::set<uint16_t> ports;
    for (auto &r : held) {
        ASSERT_STATUS(STATUS_SUCCESS, fabric.reserve(addr, 0, range, r));
        ports.insert(r->endpoint().port);
    }
    EXPECT_EQ(ports, (std::set<uint16_t>{50000, 50001, 50002}));
    std::shared_ptr<PortReservation> none;
    EXPECT_STATUS(STATUS_TOO_MANY_ADDRESSES, fabric.reserve(addr, 0, range, none));
    EXPECT_FALSE(none);
    // An explicit port outside the range is unaffected by its exhaustion.
    std::shared_ptr<PortReservation> explicit_port;
    EXPECT_STATUS(STATUS_SUCCESS, fabric.reserve(addr, 7000, range, explicit_port));
    // Freeing one makes exactly that one available again.
    uint16_t freed = held[1]->endpoint().port;
    held[1].reset();
    std::shared_ptr<PortReservation> reused;
    ASSERT_STATUS(STATUS_SUCCESS, fabric.reserve(addr, 0, range, reused));
    EXPECT_EQ(reused->endpoint().port, freed);
}

TEST(FabricPorts, PortZeroGoesOnFromTheLastPickAndWrapsAround)
{
    // RFC 6056's sequential choice: a port freed a moment ago is picked again only after the
    // rest of the range (docs/transport.md, tcp Ports: a new connection must not meet the
    // 4-tuple of one the host's TCP still closes).
    auto &fabric = Fabric::instance();
    const IpAddress addr = ip("192.0.2.15");
    const std::pair<uint16_t, uint16_t> range{50000, 50002};
    std::vector<uint16_t> picks;
    for (int i = 0; i < 4; ++i) {
        std::shared_ptr<PortReservation> r;
        ASSERT_STATUS(STATUS_SUCCESS, fabric.reserve(addr, 0, range, r));
        picks.push_back(r->endpoint().port); // released at once
    }
    EXPECT_EQ(picks, (std::vector<uint16_t>{50000, 50001, 50002, 50000}));
}

TEST(FabricPorts, ExplicitPortInsideTheRangeIsSkippedByPortZero)
{
    auto &fabric = Fabric::instance();
    const IpAddress addr = ip("192.0.2.14");
    std::shared_ptr<PortReservation> fixed, picked;
    ASSERT_STATUS(STATUS_SUCCESS, fabric.reserve(addr, 60000, {60000, 60001}, fixed));
    ASSERT_STATUS(STATUS_SUCCESS, fabric.reserve(addr, 0, {60000, 60001}, picked));
    EXPECT_EQ(picked->endpoint().port, 60001);
}

class FabricOwnership : public ::testing::Test {
protected:
    void TearDown() override
    {
        Fabric::instance().detach(&a_);
        Fabric::instance().detach(&b_);
    }
    ndk::soft::Miniport a_, b_;
};

TEST_F(FabricOwnership, ExplicitAddressesAndAlreadyOwned)
{
    auto &fabric = Fabric::instance();
    std::vector<IpAddress> assigned;
    ASSERT_STATUS(STATUS_SUCCESS, fabric.attach(&a_, "192.0.2.20, 2001:db8::20", assigned));
    EXPECT_EQ(assigned, (std::vector<IpAddress>{ip("192.0.2.20"), ip("2001:db8::20")}));
    EXPECT_EQ(fabric.owner(ip("192.0.2.20")), &a_);
    EXPECT_EQ(fabric.owner(ip("2001:db8::20")), &a_);
    EXPECT_EQ(fabric.owner(ip("192.0.2.21")), nullptr);

    std::vector<IpAddress> other;
    EXPECT_STATUS(STATUS_ADDRESS_ALREADY_EXISTS, fabric.attach(&b_, "192.0.2.20", other));
    // A rejected list takes nothing, not even its valid leading part.
    EXPECT_STATUS(STATUS_ADDRESS_ALREADY_EXISTS,
                  fabric.attach(&b_, "192.0.2.22 192.0.2.20", other));
    EXPECT_EQ(fabric.owner(ip("192.0.2.22")), nullptr);

    fabric.detach(&a_);
    EXPECT_EQ(fabric.owner(ip("192.0.2.20")), nullptr);
    EXPECT_STATUS(STATUS_SUCCESS, fabric.attach(&b_, "192.0.2.20", other));
    EXPECT_EQ(fabric.owner(ip("192.0.2.20")), &b_);
}

TEST_F(FabricOwnership, InvalidAddressesAreRejected)
{
    auto &fabric = Fabric::instance();
    std::vector<IpAddress> assigned;
    EXPECT_STATUS(STATUS_INVALID_ADDRESS, fabric.attach(&a_, "not-an-ip", assigned));
    EXPECT_STATUS(STATUS_INVALID_ADDRESS, fabric.attach(&a_, "0.0.0.0", assigned));
    EXPECT_STATUS(STATUS_INVALID_ADDRESS, fabric.attach(&a_, "::", assigned));
    EXPECT_STATUS(STATUS_INVALID_ADDRESS, fabric.attach(&a_, "192.0.2.23 bogus", assigned));
    EXPECT_EQ(fabric.owner(ip("192.0.2.23")), nullptr);
}

TEST_F(FabricOwnership, AutomaticAddressesAreAUniqueIpv4AndIpv6Pair)
{
    auto &fabric = Fabric::instance();
    std::vector<IpAddress> first, second;
    ASSERT_STATUS(STATUS_SUCCESS, fabric.attach(&a_, "", first));
    ASSERT_STATUS(STATUS_SUCCESS, fabric.attach(&b_, "", second));
    ASSERT_EQ(first.size(), 2u);
    ASSERT_EQ(second.size(), 2u);
    EXPECT_EQ(first[0].family, AF_INET);
    EXPECT_EQ(first[1].family, AF_INET6);
    std::set<IpAddress> all{first[0], first[1], second[0], second[1]};
    EXPECT_EQ(all.size(), 4u);
    for (const auto &a : first)
        EXPECT_EQ(fabric.owner(a), &a_);
    for (const auto &b : second) {
        EXPECT_EQ(fabric.owner(b), &b_);
        EXPECT_FALSE(b.is_unspecified());
    }
}

TEST(FabricAdapters, EachAdapterGetsItsOwnAddresses)
{
    auto a = ndk::Adapter::open("soft", "");
    auto b = ndk::Adapter::open("soft", "");
    std::string a_addresses, b_addresses;
    ASSERT_STATUS(STATUS_SUCCESS, a->get_knob("address", a_addresses));
    ASSERT_STATUS(STATUS_SUCCESS, b->get_knob("address", b_addresses));
    EXPECT_FALSE(a_addresses.empty());
    EXPECT_NE(a_addresses, b_addresses);
    EXPECT_NE(a_addresses.find(','), std::string::npos) << "an IPv4 and an IPv6 address";
}

TEST(FabricAdapters, AnAddressBelongsToOneAdapterUntilItCloses)
{
    auto first = ndk::Adapter::open("soft", "address=192.0.2.30");
    std::string addresses;
    ASSERT_STATUS(STATUS_SUCCESS, first->get_knob("address", addresses));
    EXPECT_EQ(addresses, "192.0.2.30");
    try {
        ndk::Adapter::open("soft", "address=192.0.2.30");
        ADD_FAILURE() << "a second adapter took an owned address";
    } catch (const ndk::Error &e) {
        EXPECT_STATUS(STATUS_ADDRESS_ALREADY_EXISTS, e.status());
    }
    std::string reply;
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, first->set_knob("address", "192.0.2.31", reply));
    first->close();
    auto second = ndk::Adapter::open("soft", "address=192.0.2.30");
    ASSERT_STATUS(STATUS_SUCCESS, second->get_knob("address", addresses));
    EXPECT_EQ(addresses, "192.0.2.30");
}

} // namespace
