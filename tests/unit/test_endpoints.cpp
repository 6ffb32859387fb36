// Local endpoints (digest 1.1, 1.9, 1.10, 3.5): shared endpoints and listeners reserve
// address:port on the soft fabric, port 0 picks an ephemeral port, conflicts and exhaustion
// have their statuses, closing or failing releases the port; a connector without a
// connection.  Each adapter gets its own addresses, so the tests do not collide.
#include "support.hpp"

#include "ndk/objects.hpp"

#include <gtest/gtest.h>

namespace {

using ndk::SocketAddress;

// The adapter's addresses, "v4,v6".
std::pair<std::string, std::string> addresses_of(ndk::Adapter &adapter)
{
    std::string text;
    EXPECT_STATUS(STATUS_SUCCESS, adapter.get_knob("address", text));
    auto comma = text.find(',');
    if (comma == std::string::npos)
        return {text, ""};
    return {text.substr(0, comma), text.substr(comma + 1)};
}

std::shared_ptr<ndk::SharedEndpoint> shared_endpoint(ndk::Call call)
{
    EXPECT_TRUE(call.wait(ndk::Call::Seconds(5)));
    return std::dynamic_pointer_cast<ndk::SharedEndpoint>(call.object());
}

std::shared_ptr<ndk::Listener> listener(ndk::Adapter &adapter)
{
    ndk::Call call = adapter.create_listener();
    EXPECT_TRUE(call.wait(ndk::Call::Seconds(5)));
    return std::dynamic_pointer_cast<ndk::Listener>(call.object());
}

NTSTATUS listen(ndk::Listener &l, const std::string &host, uint16_t port)
{
    ndk::Call call = l.listen(SocketAddress::from(host, port));
    EXPECT_TRUE(call.wait(ndk::Call::Seconds(5)));
    return call.result();
}

TEST(Endpoints, PortZeroPicksAnEphemeralPortOnTheAdaptersAddress)
{
    auto adapter = ndk::Adapter::open("soft", "");
    auto [v4, v6] = addresses_of(*adapter);
    ASSERT_FALSE(v6.empty());
    auto se4 = shared_endpoint(adapter->create_shared_endpoint(SocketAddress::from("0.0.0.0", 0)));
    auto se6 = shared_endpoint(adapter->create_shared_endpoint(SocketAddress::from("::", 0)));
    ASSERT_TRUE(se4 && se6);
    SocketAddress local;
    ASSERT_STATUS(STATUS_SUCCESS, se4->get_local_address(local));
    EXPECT_EQ(local.host(), v4);
    EXPECT_GE(local.port(), 49152);
    EXPECT_EQ(local.length, sizeof(sockaddr_in));
    ASSERT_STATUS(STATUS_SUCCESS, se6->get_local_address(local));
    EXPECT_EQ(local.host(), v6);
    EXPECT_GE(local.port(), 49152);
    EXPECT_EQ(local.length, sizeof(sockaddr_in6));
    auto l = listener(*adapter);
    ASSERT_TRUE(l);
    ASSERT_STATUS(STATUS_SUCCESS, listen(*l, v4, 0));
    ASSERT_STATUS(STATUS_SUCCESS, l->get_local_address(local));
    EXPECT_EQ(local.host(), v4);
    EXPECT_GE(local.port(), 49152);
}

TEST(Endpoints, ATakenPortIsASharingViolationUntilItsHolderCloses)
{
    auto adapter = ndk::Adapter::open("soft", "");
    const std::string v4 = addresses_of(*adapter).first;
    auto first = shared_endpoint(adapter->create_shared_endpoint(SocketAddress::from(v4, 7000)));
    ASSERT_TRUE(first);
    EXPECT_STATUS(STATUS_SHARING_VIOLATION,
                  adapter->create_shared_endpoint(SocketAddress::from(v4, 7000)).result());
    // Listeners and shared endpoints share one port space.
    auto l = listener(*adapter);
    ASSERT_TRUE(l);
    EXPECT_STATUS(STATUS_SHARING_VIOLATION, listen(*l, v4, 7000));
    // The unspecified address names the same address.
    EXPECT_STATUS(STATUS_SHARING_VIOLATION, listen(*l, "0.0.0.0", 7000));
    ASSERT_TRUE(first->close().wait(ndk::Call::Seconds(5)));
    EXPECT_STATUS(STATUS_SUCCESS, listen(*l, v4, 7000));
    EXPECT_STATUS(STATUS_SHARING_VIOLATION,
                  adapter->create_shared_endpoint(SocketAddress::from(v4, 7000)).result());
    ASSERT_TRUE(l->close().wait(ndk::Call::Seconds(5)));
    EXPECT_STATUS(STATUS_SUCCESS,
                  adapter->create_shared_endpoint(SocketAddress::from(v4, 7000)).result());
}

TEST(Endpoints, AnExhaustedEphemeralRangeIsTooManyAddresses)
{
    auto adapter = ndk::Adapter::open("soft", "ephemeral_ports=50000-50001");
    std::vector<std::shared_ptr<ndk::SharedEndpoint>> held;
    for (int i = 0; i < 2; ++i) {
        held.push_back(
            shared_endpoint(adapter->create_shared_endpoint(SocketAddress::from("0.0.0.0", 0))));
        ASSERT_TRUE(held.back());
        SocketAddress local;
        ASSERT_STATUS(STATUS_SUCCESS, held.back()->get_local_address(local));
        EXPECT_EQ(local.port(), 50000 + i);
    }
    EXPECT_STATUS(STATUS_TOO_MANY_ADDRESSES,
                  adapter->create_shared_endpoint(SocketAddress::from("0.0.0.0", 0)).result());
    auto l = listener(*adapter);
    ASSERT_TRUE(l);
    EXPECT_STATUS(STATUS_TOO_MANY_ADDRESSES, listen(*l, "0.0.0.0", 0));
    // The IPv6 address has its own ports.
    EXPECT_STATUS(STATUS_SUCCESS, listen(*l, "::", 0));
}

TEST(Endpoints, AddressesTheAdapterDoesNotOwnAreInvalid)
{
    auto adapter = ndk::Adapter::open("soft", "");
    auto other = ndk::Adapter::open("soft", "");
    const std::string foreign = addresses_of(*other).first;
    EXPECT_STATUS(STATUS_INVALID_ADDRESS,
                  adapter->create_shared_endpoint(SocketAddress::from(foreign, 0)).result());
    EXPECT_STATUS(STATUS_INVALID_ADDRESS,
                  adapter->create_shared_endpoint(SocketAddress::from("192.0.2.250", 0)).result());
    auto l = listener(*adapter);
    ASSERT_TRUE(l);
    EXPECT_STATUS(STATUS_INVALID_ADDRESS, listen(*l, foreign, 9000));
    // A malformed socket address (too short for its family) is an invalid parameter.
    SocketAddress truncated = SocketAddress::from("0.0.0.0", 0);
    truncated.length = sizeof(sockaddr_in) - 1;
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, adapter->create_shared_endpoint(truncated).result());
}

TEST(Endpoints, ListenerLocalAddressAndStates)
{
    auto adapter = ndk::Adapter::open("soft", "");
    auto l = listener(*adapter);
    ASSERT_TRUE(l);
    SocketAddress local;
    EXPECT_STATUS(STATUS_INVALID_DEVICE_STATE, l->get_local_address(local)) << "not listening";
    ASSERT_STATUS(STATUS_SUCCESS, listen(*l, "0.0.0.0", 8000));
    EXPECT_STATUS(STATUS_INVALID_DEVICE_STATE, listen(*l, "0.0.0.0", 8001)) << "already listening";
    // Through the raw dispatch: a buffer too small reports the size it needs.
    NDK_LISTENER *raw = l->ndk();
    sockaddr_in out{};
    ULONG length = sizeof out - 1;
    EXPECT_STATUS(STATUS_BUFFER_TOO_SMALL, raw->Dispatch->NdkGetLocalAddress(
                                               raw, reinterpret_cast<SOCKADDR *>(&out), &length));
    EXPECT_EQ(length, sizeof(sockaddr_in));
    ASSERT_STATUS(STATUS_SUCCESS, raw->Dispatch->NdkGetLocalAddress(
                                      raw, reinterpret_cast<SOCKADDR *>(&out), &length));
    EXPECT_EQ(ntohs(out.sin_port), 8000);
    // Pausing connect events does not give up the address.
    l->control_connect_events(true);
    auto second = listener(*adapter);
    ASSERT_TRUE(second);
    EXPECT_STATUS(STATUS_SHARING_VIOLATION, listen(*second, "0.0.0.0", 8000));
}

TEST(Endpoints, AFailedListenReleasesItsPort)
{
    auto adapter =
        ndk::Adapter::open("soft", "fail=NdkListen STATUS_INSUFFICIENT_RESOURCES inline 1");
    auto l = listener(*adapter);
    ASSERT_TRUE(l);
    ndk::Call failed = l->listen(SocketAddress::from("0.0.0.0", 8100));
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, failed.status());
    EXPECT_EQ(failed.completions(), 0);
    std::string reply;
    ASSERT_STATUS(
        STATUS_SUCCESS,
        adapter->set_knob("fail", "NdkListen STATUS_INSUFFICIENT_RESOURCES async 1", reply));
    ndk::Call async_failed = l->listen(SocketAddress::from("0.0.0.0", 8100));
    EXPECT_STATUS(STATUS_PENDING, async_failed.status());
    ASSERT_TRUE(async_failed.wait(ndk::Call::Seconds(5)));
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, async_failed.result());
    SocketAddress local;
    EXPECT_STATUS(STATUS_INVALID_DEVICE_STATE, l->get_local_address(local));
    // Nothing is left reserved: another listener takes the port, then this one a new one.
    auto other = listener(*adapter);
    ASSERT_TRUE(other);
    EXPECT_STATUS(STATUS_SUCCESS, listen(*other, "0.0.0.0", 8100));
    EXPECT_STATUS(STATUS_SUCCESS, listen(*l, "0.0.0.0", 8101));
}

TEST(Endpoints, SharedEndpointCreatedPendingOrFailingAsync)
{
    auto adapter = ndk::Adapter::open("soft", "create_mode=pending");
    ndk::Call pending = adapter->create_shared_endpoint(SocketAddress::from("0.0.0.0", 8200));
    EXPECT_STATUS(STATUS_PENDING, pending.status());
    auto se = shared_endpoint(pending);
    ASSERT_TRUE(se);
    EXPECT_EQ(pending.completions(), 1);
    std::string reply;
    ASSERT_STATUS(STATUS_SUCCESS,
                  adapter->set_knob("fail",
                                    "NdkCreateSharedEndpoint STATUS_INSUFFICIENT_RESOURCES async 1",
                                    reply));
    ndk::Call failed = adapter->create_shared_endpoint(SocketAddress::from("0.0.0.0", 8201));
    ASSERT_TRUE(failed.wait(ndk::Call::Seconds(5)));
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, failed.result());
    EXPECT_EQ(failed.object(), nullptr);
    // The failed create reserved nothing.
    ndk::Call retry = adapter->create_shared_endpoint(SocketAddress::from("0.0.0.0", 8201));
    ASSERT_TRUE(retry.wait(ndk::Call::Seconds(5)));
    EXPECT_STATUS(STATUS_SUCCESS, retry.result());
    EXPECT_STATUS(STATUS_SHARING_VIOLATION,
                  adapter->create_shared_endpoint(SocketAddress::from("0.0.0.0", 8200)).result());
}

TEST(Endpoints, AConnectorWithoutAConnectionIsConnectionInvalid)
{
    ndktest::RawAdapter a;
    NDK_CONNECTOR *c = a.connector();
    ASSERT_NE(c, nullptr);
    const auto &d = *c->Dispatch;
    ndktest::Record &r = a.record();
    sockaddr_in addr{};
    ULONG length = sizeof addr;
    ULONG ird = 0, ord = 0, private_length = 0;
    EXPECT_STATUS(STATUS_CONNECTION_INVALID,
                  d.NdkCompleteConnect(c, nullptr, nullptr, ndktest::Record::request, &r));
    EXPECT_STATUS(STATUS_CONNECTION_INVALID,
                  d.NdkCompleteConnectEx(c, nullptr, nullptr, ndktest::Record::request, &r));
    EXPECT_STATUS(STATUS_CONNECTION_INVALID, d.NdkAccept(c, nullptr, 0, 0, nullptr, 0, nullptr,
                                                         nullptr, ndktest::Record::request, &r));
    EXPECT_STATUS(STATUS_CONNECTION_INVALID, d.NdkAcceptEx(c, nullptr, 0, 0, nullptr, 0, nullptr,
                                                           nullptr, ndktest::Record::request, &r));
    EXPECT_STATUS(STATUS_CONNECTION_INVALID, d.NdkReject(c, nullptr, 0));
    EXPECT_STATUS(STATUS_CONNECTION_INVALID,
                  d.NdkGetConnectionData(c, &ird, &ord, nullptr, &private_length));
    EXPECT_STATUS(STATUS_CONNECTION_INVALID,
                  d.NdkGetLocalAddress(c, reinterpret_cast<SOCKADDR *>(&addr), &length));
    EXPECT_STATUS(STATUS_CONNECTION_INVALID,
                  d.NdkGetPeerAddress(c, reinterpret_cast<SOCKADDR *>(&addr), &length));
    EXPECT_STATUS(STATUS_CONNECTION_INVALID, d.NdkDisconnect(c, ndktest::Record::request, &r));
    a.close();
    EXPECT_EQ(r.count(), 0);
}

} // namespace
