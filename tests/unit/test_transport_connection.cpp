// An established connection of a transport with a progress thread of its own
// (core/src/providers/soft/soft_transport_link.hpp): the link it holds, as the progress thread
// sees it (wire()), and a ConnectionLink, through which the handler given that link reaches the
// connection without the tables' lookup (the shm transport's readable(): a mutex, a map lookup
// and a shared_ptr copy per serve of the rings before).
#include "providers/soft/soft_transport_link.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <utility>

namespace {

using ndk::soft::ConnectionLink;
using ndk::soft::TransportConnection;

// A link as the progress thread knows it: movable, and not to be copied into the connection
// by accident (the progress thread holds its address).
struct FakeLink {
    explicit FakeLink(int id) : id(id) {}
    FakeLink(FakeLink &&) noexcept = default;
    FakeLink(const FakeLink &) = delete;
    int id;
};

struct FakeConnection;
using FakeConnectionLink = ConnectionLink<FakeLink, FakeConnection>;
struct FakeConnection : TransportConnection<FakeLink, FakeConnectionLink> {
    explicit FakeConnection(FakeLink l) : TransportConnection(FakeConnectionLink(std::move(l), *this))
    {
    }
};

TEST(TransportConnection, WireIsTheHeldLinkWhenItIsOne)
{
    TransportConnection<FakeLink> connection(FakeLink(7));
    EXPECT_EQ(&connection.wire(), &connection.link);
    EXPECT_EQ(connection.wire().id, 7);
}

TEST(TransportConnection, WireIsWhatTheHeldPointerOwns)
{
    TransportConnection<FakeLink, std::unique_ptr<FakeLink>> connection(std::make_unique<FakeLink>(8));
    EXPECT_EQ(&connection.wire(), connection.link.get());
}

// The progress thread hands the handler the connection's wire(); the handler finds the
// connection from it, each of several connections its own.
TEST(TransportConnection, ConnectionLinkLeadsFromTheWireToItsConnection)
{
    auto first = std::make_shared<FakeConnection>(FakeLink(1));
    auto second = std::make_shared<FakeConnection>(FakeLink(2));
    FakeLink &first_wire = first->wire();
    FakeLink &second_wire = second->wire();
    EXPECT_EQ(first_wire.id, 1);
    EXPECT_EQ(second_wire.id, 2);
    EXPECT_EQ(&first_wire, static_cast<FakeLink *>(&first->link)); // the held link itself
    EXPECT_EQ(&FakeConnectionLink::connection_of(first_wire), first.get());
    EXPECT_EQ(&FakeConnectionLink::connection_of(second_wire), second.get());
}

} // namespace
