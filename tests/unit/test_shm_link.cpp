// One soft connection between two processes (core/src/providers/soft/shm/shm_link.*):
// a forked child connects through the registry to the parent's acceptor, with private data
// and read limits both ways; 100000 messages each way with the consumers sleeping on their
// doorbells in between; a Send pulled with process_vm_readv from the sender's vectors (and
// from a vector list too long for a slot), a Read Request answered with process_vm_writev;
// the reject, refuse and abandon paths; a side's answers counter (beside its ring's tail): taken once,
// seen as work until taken, ordered before the messages sent after it, and waking a consumer
// that sleeps; and the one-way latency of a 64-byte ping-pong, printed.
#include "providers/soft/os/cross_memory.hpp"
#include "providers/soft/shm/shm_peer_vectors.hpp"
#include "shm_link_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <system_error>
#include <thread>

namespace {

using namespace ndk::soft::shm;
using namespace ndk::soft::os;
using namespace ndk::soft::shm::test_support;
using ShmLinkTest = ShmRegistryDirTest;

const Endpoint kListen = ipv4(1, 7000);

std::byte pattern(std::size_t i, int seed)
{
    return static_cast<std::byte>((i * 131 + static_cast<std::size_t>(seed)) % 251);
}

// The next message, decoded (spans into `buffer`); Malformed when the peer went.
Message next_message(ShmLink &link, std::vector<std::byte> &buffer)
{
    std::size_t length = 0;
    if (!receive_while_alive(link, buffer, length))
        return Malformed{"peer gone"};
    return decode(std::span(buffer).first(length));
}

const char *why(const Message &m)
{
    const auto *bad = std::get_if<Malformed>(&m);
    return bad != nullptr ? bad->why : "another message";
}

TEST_F(ShmLinkTest, ChildConnectsThroughTheRegistryWithPrivateDataAndReadLimits)
{
    ShmAcceptor acceptor(EndpointRegistry(dir_), kListen);
    Child child = Child::spawn([&] {
        OutgoingConnection outgoing = OutgoingConnection::connect(
            EndpointRegistry(dir_), {ipv4(9, 1), kListen, {3, 5}, text("hello, listener")});
        if (outgoing.peer().pid != ::getppid())
            return 2;
        if (next_step(outgoing) != Establish::replied)
            return 3;
        if (as_text(outgoing.answer().private_data) != "welcome" ||
            outgoing.answer().limits != ReadLimits{7, 9})
            return 4;
        std::optional<ShmLink> link = outgoing.complete();
        if (!link || link->local_limits() != ReadLimits{3, 5} ||
            link->peer_limits() != ReadLimits{7, 9} || link->side() != LinkSide::active)
            return 5;
        // One message each way over the new rings.
        if (link->send(Ack{1, 0}) != RingStatus::ok)
            return 6;
        std::vector<std::byte> buffer(link->max_message());
        const Message answer = next_message(*link, buffer);
        return std::holds_alternative<Ack>(answer) && std::get<Ack>(answer).sequence == 2 ? 0 : 7;
    });
    const PeerWatch watch = watch_child(child);
    ReceivedRequest request;
    ShmLink link = accept_link(acceptor, watch, Reply{7, 9, text("welcome")}, &request);
    EXPECT_EQ(as_text(request.private_data), "hello, listener");
    EXPECT_EQ(request.limits, (ReadLimits{3, 5}));
    EXPECT_EQ(request.destination, kListen);
    EXPECT_EQ(request.source, ipv4(9, 1));
    EXPECT_EQ(request.sender.pid, child.pid());
    EXPECT_EQ(link.peer().pid, child.pid());
    EXPECT_EQ(link.side(), LinkSide::passive);
    EXPECT_EQ(link.local_limits(), (ReadLimits{7, 9}));
    EXPECT_EQ(link.peer_limits(), (ReadLimits{3, 5}));
    std::vector<std::byte> buffer(link.max_message());
    const Message first = next_message(link, buffer);
    ASSERT_TRUE(std::holds_alternative<Ack>(first));
    EXPECT_EQ(std::get<Ack>(first).sequence, 1u);
    ASSERT_EQ(link.send(Ack{2, 0}), RingStatus::ok);
    EXPECT_EQ(child.wait(), 0);
    // The child is gone: its link says so, and its ring is empty.
    EXPECT_TRUE(link.peer_gone());
    EXPECT_EQ(link.wait_for_messages(kStepLimit), ShmLink::Wait::peer_gone);
}

TEST_F(ShmLinkTest, NobodyListeningIsRefusedAndAnEndpointIsHeldOnce)
{
    EXPECT_THROW(
        {
            try {
                OutgoingConnection::connect(EndpointRegistry(dir_), {ipv4(9, 1), kListen, {}, {}});
            } catch (const std::system_error &e) {
                EXPECT_EQ(e.code().value(), ECONNREFUSED);
                throw;
            }
        },
        std::system_error);
    ShmAcceptor acceptor(EndpointRegistry(dir_), kListen);
    EXPECT_THROW(ShmAcceptor(EndpointRegistry(dir_), kListen), std::system_error);
    EXPECT_FALSE(acceptor.accept().has_value()); // nobody waits: no block
}

// A peer that closes its end without exiting ends the other side's wait too (its control
// socket's EOF), after the messages it sent before.  Both ends in this process.
TEST_F(ShmLinkTest, AClosedLinkEndsThePeersWaitAfterItsLastMessage)
{
    auto [active, passive] = link_pair_in_process(dir_, kListen);
    std::optional<ShmLink> closing(std::move(active));
    ASSERT_EQ(closing->send(Ack{1, 0}), RingStatus::ok);
    closing.reset();
    std::vector<std::byte> buffer(passive.max_message());
    const Message last = next_message(passive, buffer);
    ASSERT_TRUE(std::holds_alternative<Ack>(last));
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(passive.wait_for_messages(kStepLimit), ShmLink::Wait::peer_gone);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
    EXPECT_TRUE(passive.peer_gone());
}

// Each side sends `count` numbered messages from a thread while its main thread receives the
// peer's, pausing every 1000 messages so that the peer's consumer runs dry and sleeps on its
// doorbell.  0 when all arrived byte-exact and the doorbell was slept on.
int exchange(ShmLink &link, std::uint32_t count)
{
    constexpr std::size_t kMax = 64;
    std::atomic<int> sent{0};
    std::thread sender([&] {
        for (std::uint32_t n = 0; n < count; ++n) {
            if (n % 1000 == 999)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            if (!send_while_alive(link, numbered(n, kMax))) {
                sent = 1;
                return;
            }
        }
    });
    int result = 0;
    std::vector<std::byte> out(link.max_message());
    std::size_t length = 0;
    for (std::uint32_t n = 0; n < count && result == 0; ++n) {
        if (!receive_while_alive(link, out, length)) {
            result = 2;
            break;
        }
        const auto expected = numbered(n, kMax);
        if (length != expected.size() || !std::equal(expected.begin(), expected.end(), out.begin()))
            result = 3;
    }
    sender.join();
    if (result == 0 && sent != 0)
        result = 4;
    if (result == 0 && link.sleeps() == 0)
        result = 5;
    return result;
}

TEST_F(ShmLinkTest, HundredThousandMessagesEachWayThroughSleepingConsumers)
{
    constexpr std::uint32_t kCount = 100000;
    ShmAcceptor acceptor(EndpointRegistry(dir_), kListen);
    Child child = Child::spawn([&] {
        std::optional<ShmLink> link = connect_link(dir_, kListen);
        return link ? exchange(*link, kCount) : 10;
    });
    const PeerWatch watch = watch_child(child);
    ShmLink link = accept_link(acceptor, watch, Reply{});
    EXPECT_EQ(exchange(link, kCount), 0);
    EXPECT_EQ(child.wait(), 0);
    // The child's consumer slept, so sends had to ring (once per sleep at most).
    EXPECT_GT(link.doorbells_rung(), 0u);
    std::printf("[ shm link ] 100000 messages each way: parent slept %llu times, rang %llu times\n",
                static_cast<unsigned long long>(link.sleeps()),
                static_cast<unsigned long long>(link.doorbells_rung()));
}

bool may_copy_with_children()
{
    const PtracePolicy policy = ptrace_policy();
    return policy == PtracePolicy::classic || policy == PtracePolicy::descendants ||
           (policy == PtracePolicy::admin_only && ::geteuid() == 0);
}

// The child: a Send from three vectors, a Send whose 2000-vector list travels by reference, and
// a Read Request whose three sink vectors the parent fills; each acknowledged.
int cross_memory_child(const std::filesystem::path &dir)
{
    std::optional<ShmLink> link = connect_link(dir, kListen);
    if (!link)
        return 10;
    std::vector<std::byte> a(1000), b(5000), c(70000), d(6000);
    std::size_t at = 0;
    for (auto *piece : {&a, &b, &c})
        for (auto &byte : *piece)
            byte = pattern(at++, 1);
    for (std::size_t i = 0; i < d.size(); ++i)
        d[i] = pattern(i, 2);
    const auto address = [](const std::vector<std::byte> &v, std::size_t at = 0) {
        return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(v.data() + at));
    };
    const WireVector three[] = {{address(a), a.size()}, {address(b), b.size()}, {address(c), c.size()}};
    std::vector<WireVector> list;
    for (std::size_t i = 0; i < 2000; ++i)
        list.push_back({address(d, 3 * i), 3});
    std::vector<std::byte> s1(100), s2(3000), s3(20000);
    const WireVector sink[] = {{address(s1), s1.size()}, {address(s2), s2.size()}, {address(s3), s3.size()}};
    if (link->send(Send{1, true, false, 0, 0, Payload::vectors_of(three)}) != RingStatus::ok ||
        link->send(Send{2, false, false, 0, 0, Payload::remote_list(list, d.size())}) != RingStatus::ok ||
        link->send(ReadRequest{3, 0x10000, 77, Payload::vectors_of(sink)}) != RingStatus::ok)
        return 11;
    std::vector<std::byte> buffer(link->max_message());
    for (std::uint64_t sequence = 1; sequence <= 3; ++sequence) {
        const Message m = next_message(*link, buffer);
        const auto *ack = std::get_if<Ack>(&m);
        if (ack == nullptr || ack->sequence != sequence || ack->status != 0)
            return 12;
    }
    at = 0;
    for (auto *piece : {&s1, &s2, &s3})
        for (auto byte : *piece)
            if (byte != pattern(at++, 3))
                return 13;
    return 0;
}

// The bytes of `payload` pulled from `pid` into one buffer.
std::vector<std::byte> pull(pid_t pid, const Payload &payload)
{
    std::vector<iovec> remote;
    const PeerVectors vectors = peer_vectors(pid, payload, remote);
    EXPECT_EQ(vectors.status, PeerVectorsStatus::ok);
    std::vector<std::byte> local(payload.total_length);
    const iovec into{local.data(), local.size()};
    const CopyResult read = read_from(pid, {&into, 1}, remote);
    EXPECT_EQ(read.status, CopyStatus::ok) << to_string(read.status);
    EXPECT_EQ(read.bytes, local.size());
    return local;
}

TEST_F(ShmLinkTest, ASendIsPulledFromTheSendersVectorsAndAReadIsPushedIntoTheSink)
{
    if (!may_copy_with_children())
        GTEST_SKIP() << "Yama ptrace_scope (/proc/sys/kernel/yama/ptrace_scope) forbids cross-memory copies into a child here: set it to 0 or 1, or run as root under 2";
    ShmAcceptor acceptor(EndpointRegistry(dir_), kListen);
    Child child = Child::spawn([&] { return cross_memory_child(dir_); });
    const PeerWatch watch = watch_child(child);
    ShmLink link = accept_link(acceptor, watch, Reply{});
    std::vector<std::byte> buffer(link.max_message());

    Message m = next_message(link, buffer);
    ASSERT_TRUE(std::holds_alternative<Send>(m)) << why(m);
    const Send first = std::get<Send>(m);
    EXPECT_TRUE(first.solicited);
    ASSERT_EQ(first.payload.vector_count(), 3u);
    const auto pulled = pull(child.pid(), first.payload);
    ASSERT_EQ(pulled.size(), 76000u);
    for (std::size_t i = 0; i < pulled.size(); ++i)
        ASSERT_EQ(pulled[i], pattern(i, 1)) << i;
    ASSERT_EQ(link.send(Ack{1, 0}), RingStatus::ok);

    m = next_message(link, buffer);
    ASSERT_TRUE(std::holds_alternative<Send>(m)) << why(m);
    const Send second = std::get<Send>(m);
    ASSERT_EQ(second.payload.form, PayloadForm::vector_list);
    EXPECT_EQ(second.payload.list_count, 2000u);
    const auto listed = pull(child.pid(), second.payload);
    ASSERT_EQ(listed.size(), 6000u);
    for (std::size_t i = 0; i < listed.size(); ++i)
        ASSERT_EQ(listed[i], pattern(i, 2)) << i;
    ASSERT_EQ(link.send(Ack{2, 0}), RingStatus::ok);

    m = next_message(link, buffer);
    ASSERT_TRUE(std::holds_alternative<ReadRequest>(m)) << why(m);
    const ReadRequest read = std::get<ReadRequest>(m);
    EXPECT_EQ(read.remote_token, 77u);
    EXPECT_EQ(read.remote_address, 0x10000u);
    std::vector<iovec> sink;
    ASSERT_EQ(peer_vectors(child.pid(), read.sink, sink).status, PeerVectorsStatus::ok);
    ASSERT_EQ(sink.size(), 3u);
    std::vector<std::byte> source(read.sink.total_length);
    for (std::size_t i = 0; i < source.size(); ++i)
        source[i] = pattern(i, 3);
    const iovec from{source.data(), source.size()};
    const CopyResult written = write_to(child.pid(), {&from, 1}, sink);
    ASSERT_EQ(written.status, CopyStatus::ok) << to_string(written.status);
    ASSERT_EQ(written.bytes, source.size());
    ASSERT_EQ(link.send(Ack{3, 0}), RingStatus::ok);
    EXPECT_EQ(child.wait(), 0);
}

// A child that connects to kListen without private data, runs `then` on the connection (its
// exit code), writes 'd' to `done` once `then` returned 0, and stays until `release` ends (so
// the parent can still watch it).
template <class Then>
Child connecting_child(const std::filesystem::path &dir, Pipe &done, Pipe &release, Then then)
{
    Child child = Child::spawn([&] {
        done.read_end.reset();
        release.write_end.reset();
        OutgoingConnection outgoing = OutgoingConnection::connect(EndpointRegistry(dir),
                                                                  {ipv4(9, 1), kListen, {}, {}});
        const int code = then(outgoing);
        if (code == 0)
            done.put('d');
        release.get();
        return code;
    });
    done.write_end.reset();
    release.read_end.reset();
    return child;
}

// The child's connection on `acceptor` with its request read.
IncomingConnection request_from(ShmAcceptor &acceptor, const Child &child)
{
    IncomingConnection incoming = incoming_from(acceptor, watch_child(child));
    if (next_step(incoming) != Establish::request)
        throw std::runtime_error("no connect request");
    return incoming;
}

TEST_F(ShmLinkTest, AnswersPublishedAreWorkUntilTakenOnceAndPrecedeLaterMessages)
{
    auto [active, passive] = link_pair_in_process(dir_, kListen);
    EXPECT_FALSE(passive.has_messages());
    EXPECT_EQ(passive.take_answered(), std::nullopt);
    active.publish_answered(3);
    EXPECT_TRUE(passive.has_messages()) << "answers not taken yet keep the link busy (quiescence)";
    EXPECT_FALSE(active.has_messages()) << "a side's own answers are not its work";
    EXPECT_EQ(passive.take_answered(), 3u);
    EXPECT_FALSE(passive.has_messages());
    EXPECT_EQ(passive.take_answered(), std::nullopt) << "taken once";
    // An error Ack goes after the counter that covers the successes before it: whoever takes
    // the Ack and then looks at the counter sees them.
    active.publish_answered(5);
    ASSERT_EQ(active.send(Ack{6, 0xC0000005u}), RingStatus::ok);
    std::vector<std::byte> buffer(passive.max_message());
    Message message;
    ASSERT_EQ(passive.receive(buffer, message), RingStatus::ok);
    ASSERT_TRUE(std::holds_alternative<Ack>(message)) << why(message);
    EXPECT_EQ(std::get<Ack>(message).sequence, 6u);
    EXPECT_EQ(passive.take_answered(), 5u);
}

TEST_F(ShmLinkTest, AnswersWakeAConsumerSleepingOnItsDoorbell)
{
    auto [active, passive] = link_pair_in_process(dir_, kListen);
    std::thread answering([&active = active] {
        // Most likely after the consumer armed its doorbell and slept (correct either way).
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        active.publish_answered(1);
    });
    // No spin: armed at once.  Were the answer not to ring, the wait would sleep out its limit.
    const ShmLink::Wait waited = passive.wait_for_messages(kStepLimit, 0);
    answering.join();
    EXPECT_EQ(waited, ShmLink::Wait::ready);
    EXPECT_EQ(passive.take_answered(), 1u);
}

TEST_F(ShmLinkTest, ARejectCarriesItsPrivateDataBack)
{
    ShmAcceptor acceptor(EndpointRegistry(dir_), kListen);
    Child child = Child::spawn([&] {
        OutgoingConnection outgoing = OutgoingConnection::connect(
            EndpointRegistry(dir_), {ipv4(9, 1), kListen, {1, 1}, text("may I?")});
        if (next_step(outgoing) != Establish::rejected)
            return 2;
        return as_text(outgoing.answer().private_data) == "no, thanks" ? 0 : 3;
    });
    IncomingConnection incoming = request_from(acceptor, child);
    EXPECT_EQ(as_text(incoming.request().private_data), "may I?");
    incoming.reject(text("no, thanks"));
    EXPECT_EQ(child.wait(), 0);
}

TEST_F(ShmLinkTest, ARejectWithoutPrivateDataIsNotAnEmptyOne)
{
    ShmAcceptor acceptor(EndpointRegistry(dir_), kListen);
    Pipe done, release;
    Child child = connecting_child(dir_, done, release, [](OutgoingConnection &outgoing) {
        if (next_step(outgoing) != Establish::rejected)
            return 2;
        return outgoing.answer().private_data_present ? 3 : 0;
    });
    IncomingConnection incoming = request_from(acceptor, child);
    incoming.reject(std::nullopt); // the passive connector closed before it accepted
    EXPECT_EQ(done.get(), 'd');
    release.write_end.reset();
    EXPECT_EQ(child.wait(), 0);
}

TEST_F(ShmLinkTest, AnActiveSideThatRefusesTheReplyIsSeenRefused)
{
    ShmAcceptor acceptor(EndpointRegistry(dir_), kListen);
    Pipe done, release;
    Child child = connecting_child(dir_, done, release, [](OutgoingConnection &outgoing) {
        if (next_step(outgoing) != Establish::replied)
            return 2;
        outgoing.refuse();
        return 0;
    });
    IncomingConnection incoming = request_from(acceptor, child);
    ASSERT_TRUE(incoming.accept(Reply{}));
    EXPECT_EQ(next_step(incoming), Establish::refused);
    EXPECT_THROW(incoming.take_link(), std::logic_error);
    EXPECT_EQ(done.get(), 'd');
    release.write_end.reset();
    EXPECT_EQ(child.wait(), 0);
}

// The active side gives up before the answer (its timeout, its close) and goes: the passive
// side's accept() then fails, and says that the peer abandoned rather than merely vanished.
TEST_F(ShmLinkTest, AnActiveSideThatAbandonsBeforeTheAnswerIsSeenAbandoned)
{
    ShmAcceptor acceptor(EndpointRegistry(dir_), kListen);
    Pipe done, release;
    Child child = connecting_child(dir_, done, release, [](OutgoingConnection &outgoing) {
        outgoing.abandon();
        return 0;
    });
    ASSERT_EQ(done.get(), 'd');
    IncomingConnection incoming = request_from(acceptor, child);
    EXPECT_FALSE(incoming.accept(Reply{}));
    EXPECT_EQ(incoming.poll(), Establish::abandoned);
    release.write_end.reset();
    EXPECT_EQ(child.wait(), 0);
}

// The child echoes every message back, waiting with `spin`, until a 1-byte message says stop.
int echo(const std::filesystem::path &dir, unsigned spin)
{
    std::optional<ShmLink> link = connect_link(dir, kListen);
    if (!link)
        return 10;
    std::vector<std::byte> out(link->max_message());
    std::size_t length = 0;
    for (;;) {
        if (!receive_while_alive(*link, out, length, spin))
            return 11;
        if (length == 1)
            return 0;
        if (!send_while_alive(*link, std::span(out).first(length)))
            return 12;
    }
}

struct Latency {
    double one_way_us = 0; // half the median round trip
    std::size_t rounds = 0;
};

// Ping-pong 64-byte messages: at most `rounds` round trips and about `budget` of wall time
// (two spinning processes on a loaded 2-core machine can take a scheduler quantum per round).
Latency one_way(const std::filesystem::path &dir, std::size_t rounds, unsigned spin,
                std::chrono::milliseconds budget)
{
    ShmAcceptor acceptor(EndpointRegistry(dir), kListen);
    Child child = Child::spawn([&] { return echo(dir, spin); });
    const PeerWatch watch = watch_child(child);
    ShmLink link = accept_link(acceptor, watch, Reply{});
    const std::vector<std::byte> ping(64, std::byte{0x5a});
    std::vector<std::byte> out(link.max_message());
    std::size_t length = 0;
    std::vector<double> round_trips;
    const auto end = std::chrono::steady_clock::now() + budget;
    while (round_trips.size() < rounds && std::chrono::steady_clock::now() < end) {
        const auto start = std::chrono::steady_clock::now();
        if (!send_while_alive(link, ping) || !receive_while_alive(link, out, length, spin))
            break;
        round_trips.push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                .count());
    }
    const std::byte stop[1] = {};
    EXPECT_TRUE(send_while_alive(link, stop));
    EXPECT_EQ(child.wait(), 0);
    EXPECT_GT(round_trips.size(), 0u);
    if (round_trips.empty())
        return {};
    std::nth_element(round_trips.begin(), round_trips.begin() + round_trips.size() / 2,
                     round_trips.end());
    return {round_trips[round_trips.size() / 2] / 2, round_trips.size()};
}

// Not a benchmark with a bound: the number is printed so the team knows the floor on this
// machine (docs/transport.md quotes it).
TEST_F(ShmLinkTest, OneWayLatencyOf64ByteMessagesIsPrinted)
{
    const Latency spinning = one_way(dir_, 10000, 1u << 16, std::chrono::seconds(3));
    const Latency sleeping = one_way(dir_, 3000, 0, std::chrono::seconds(3));
    const Latency by_default =
        one_way(dir_, 5000, DoorbellSleeper::kDefaultSpin, std::chrono::seconds(3));
    std::printf("[ shm latency ] 64 B one-way, median of a ping-pong: spinning %.2f us (%zu round "
                "trips), sleeping on the doorbell %.2f us (%zu), default spin then sleep %.2f us "
                "(%zu)\n",
                spinning.one_way_us, spinning.rounds, sleeping.one_way_us, sleeping.rounds,
                by_default.one_way_us, by_default.rounds);
    RecordProperty("one_way_us_default", std::to_string(by_default.one_way_us));
    RecordProperty("one_way_us_spinning", std::to_string(spinning.one_way_us));
    RecordProperty("one_way_us_sleeping", std::to_string(sleeping.one_way_us));
}

} // namespace
