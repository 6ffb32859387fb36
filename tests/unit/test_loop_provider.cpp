// The loop provider (core/src/providers/loop/), the example provider on the provider kit: its
// objects' life through the raw ABI, behind the validation layer, and a connection between two
// adapters (or within one) that moves data with Send, Write and Read.
#include "connection_support.hpp"

#include <atomic>
#include <optional>

using namespace ndktest;

namespace {

std::string next_address()
{
    static std::atomic<int> n{1};
    return "198.51.100." + std::to_string(n++ % 250 + 1);
}

// A loop adapter at its own address, behind the validation layer unless told otherwise.
struct LoopAdapter : RawAdapter {
    explicit LoopAdapter(bool validate = true, const std::string &ip = next_address())
        : RawAdapter("address=" + ip, {2, 0}, "loop", validate), ip(ip)
    {
    }
    std::vector<std::string> errors() const
    {
        std::vector<std::string> out;
        if (session() == nullptr)
            return out;
        for (const auto &v : session()->violations())
            if (v.severity == ndk::validate::Severity::Error)
                out.push_back(v.rule + " " + v.object + " " + v.call + ": " + v.message);
        return out;
    }
    std::string ip;
};

NTSTATUS finished(NTSTATUS status, const Record &r)
{
    if (status != STATUS_PENDING)
        return status;
    return r.wait() ? r.status() : kNoStatus;
}

// Connect `client`'s new QP to one on `server` (the same adapter for a loopback connection).
struct Connection {
    Side a, b;
    Incoming incoming;
    NDK_LISTENER *listener = nullptr;

    Connection(LoopAdapter &client, LoopAdapter &server)
    {
        for (auto [side, adapter] : {std::pair{&a, &client}, std::pair{&b, &server}}) {
            side->adapter = adapter;
            side->cq = adapter->cq(64);
            side->pd = adapter->pd();
            side->qp = adapter->qp(side->pd, side->cq, side->cq, side);
        }
        Record &created = server.record();
        NTSTATUS s = server.d().NdkCreateListener(server.get(), Incoming::event, &incoming,
                                                  Record::create, &created, &listener);
        listener = server.finish(s, created, listener, "NdkCreateListener");
        sockaddr_in here = ipv4(server.ip.c_str(), 0), there{};
        Record &listened = server.record();
        EXPECT_STATUS(STATUS_SUCCESS, finished(listener->Dispatch->NdkListen(
                                                   listener, reinterpret_cast<PSOCKADDR>(&here),
                                                   sizeof here, Record::request, &listened),
                                               listened));
        ULONG length = sizeof there;
        EXPECT_STATUS(STATUS_SUCCESS, listener->Dispatch->NdkGetLocalAddress(
                                          listener, reinterpret_cast<PSOCKADDR>(&there), &length));
        a.connector = client.connector();
        sockaddr_in from = ipv4(client.ip.c_str(), 0);
        Record &connected = client.record();
        EXPECT_STATUS(STATUS_PENDING, a.connector->Dispatch->NdkConnect(
                                          a.connector, a.qp, reinterpret_cast<PSOCKADDR>(&from),
                                          sizeof from, reinterpret_cast<PSOCKADDR>(&there),
                                          sizeof there, 4, 4, nullptr, 0, Record::request,
                                          &connected));
        b.connector = incoming.next();
        EXPECT_NE(b.connector, nullptr);
        Record &accepted = server.record();
        EXPECT_STATUS(STATUS_PENDING,
                      b.connector->Dispatch->NdkAccept(b.connector, b.qp, 4, 4, nullptr, 0,
                                                       nullptr, nullptr, Record::request,
                                                       &accepted));
        EXPECT_TRUE(connected.wait());
        EXPECT_STATUS(STATUS_SUCCESS, connected.status());
        EXPECT_STATUS(STATUS_SUCCESS, a.connector->Dispatch->NdkCompleteConnect(
                                          a.connector, nullptr, nullptr, Record::request,
                                          &client.record()));
        EXPECT_TRUE(accepted.wait());
        EXPECT_STATUS(STATUS_SUCCESS, accepted.status());
    }
};

std::vector<NDK_RESULT_EX> poll(const Side &side, size_t n)
{
    std::vector<NDK_RESULT_EX> out;
    auto deadline = std::chrono::steady_clock::now() + kWait;
    while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
        NDK_RESULT_EX r[8];
        ULONG got = side.cq->Dispatch->NdkGetCqResultsEx(side.cq, r, 8);
        out.insert(out.end(), r, r + got);
        if (got == 0)
            std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return out;
}

} // namespace

TEST(LoopProvider, BuiltInByName)
{
    auto available = ndk::Provider::available();
    EXPECT_NE(std::find(available.begin(), available.end(), "loop"), available.end());
    auto provider = ndk::Provider::load("loop");
    EXPECT_STREQ(provider->entry().Name, "loop");
    EXPECT_EQ(provider->entry().Version, static_cast<ULONG>(NDK_HARNESS_PROVIDER_VERSION));
}

TEST(LoopProvider, SaysWhatItDoesNotImplement)
{
    LoopAdapter a;
    NDK_ADAPTER_INFO info = a.info();
    EXPECT_EQ(info.MaxSrqDepth, 0u);
    EXPECT_EQ(info.MaxWindowSize, 0u);
    EXPECT_EQ(info.FRMRPageCount, 0u);
    EXPECT_EQ(a.knob("address"), a.ip);
    NDK_PD *pd = a.pd();
    NDK_CQ *cq = a.cq();
    ASSERT_NE(pd, nullptr);
    Record &r = a.record();
    NDK_MW *mw = nullptr;
    NDK_MR *frmr = nullptr;
    NDK_SRQ *srq = nullptr;
    NDK_QP *qp = nullptr;
    NDK_SHARED_ENDPOINT *se = nullptr;
    sockaddr_in any = ipv4("0.0.0.0", 0);
    EXPECT_STATUS(STATUS_NOT_SUPPORTED, pd->Dispatch->NdkCreateMw(pd, Record::create, &r, &mw));
    EXPECT_STATUS(STATUS_NOT_SUPPORTED,
                  pd->Dispatch->NdkCreateMr(pd, TRUE, Record::create, &r, &frmr));
    // An SRQ deeper than MaxSrqDepth 0 is INVALID_PARAMETER (digest 1.2), not NOT_SUPPORTED.
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  pd->Dispatch->NdkCreateSrq(pd, 8, 1, 0, nullptr, nullptr, nullptr,
                                             Record::create, &r, &srq));
    EXPECT_STATUS(STATUS_NOT_SUPPORTED,
                  pd->Dispatch->NdkCreateQpWithSrq(pd, cq, cq, nullptr, nullptr, 8, 1, 0,
                                                   Record::create, &r, &qp));
    EXPECT_STATUS(STATUS_NOT_SUPPORTED,
                  a.d().NdkCreateSharedEndpoint(a.get(), reinterpret_cast<PSOCKADDR>(&any),
                                                sizeof any, Record::create, &r, &se));
    EXPECT_EQ(r.count(), 0) << "an inline failure has no completion";
    // The fault layer pends its creates, and takes its word (knob completes_inline) that it
    // completes them inline; it has no other knobs.
    EXPECT_NO_THROW(RawAdapter("create_mode=pending", {2, 0}, "loop"));
    EXPECT_NO_THROW(RawAdapter("create_mode=inline", {2, 0}, "loop"));
    EXPECT_THROW(RawAdapter("max_cq_depth=8", {2, 0}, "loop"), ndk::Error);
    a.close();
    EXPECT_TRUE(a.errors().empty()) << a.errors().front();
}

TEST(LoopProvider, ClosesFollowDigest31)
{
    LoopAdapter a(/*validate=*/false); // the layer would not pass the double close on
    NDK_CQ *cq = a.cq();
    NDK_PD *pd = a.pd();
    NDK_MR *mr = a.mr(pd, false);
    NDK_QP *qp = a.qp(pd, cq, cq);
    ASSERT_NE(qp, nullptr);
    Record &pd_closed = a.record();
    Record &cq_closed = a.record();
    // Antecedents and parents close first: their closes wait for the QP and the MR.
    EXPECT_STATUS(STATUS_PENDING, close_with(pd, pd_closed));
    EXPECT_STATUS(STATUS_PENDING, close_with(cq, cq_closed));
    EXPECT_STATUS(STATUS_INVALID_DEVICE_STATE, close_with(pd, a.record())); // DOUBLE-CLOSE
    EXPECT_STATUS(STATUS_SUCCESS, close_with(mr, a.record()));
    EXPECT_EQ(pd_closed.count(), 0) << "the PD's close completed with its QP open";
    Record &qp_closed = a.record();
    EXPECT_STATUS(STATUS_SUCCESS, close_with(qp, qp_closed));
    EXPECT_EQ(qp_closed.count(), 0) << "an inline close has no completion";
    EXPECT_TRUE(pd_closed.wait());
    EXPECT_TRUE(cq_closed.wait());
    EXPECT_EQ(pd_closed.count() + cq_closed.count(), 2);
}

class LoopData : public testing::TestWithParam<bool> {}; // loopback: one adapter for both ends

TEST_P(LoopData, SendWriteAndReadComplete)
{
    LoopAdapter client;
    std::optional<LoopAdapter> other;
    if (!GetParam())
        other.emplace();
    LoopAdapter &server = GetParam() ? client : *other;
    Connection c(client, server);
    constexpr ULONG kAll = NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ |
                           NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_RDMA_READ_SINK;
    Region at_a(client, c.a.pd, 4096, kAll), at_b(server, c.b.pd, 4096, kAll);
    std::memcpy(at_a.bytes.data(), "hello, loop", 11);
    std::memcpy(at_b.bytes.data() + 1024, "read me", 7);

    NDK_SGE receive = at_b.sge(0, 64), send = at_a.sge(0, 11);
    EXPECT_STATUS(STATUS_SUCCESS, c.b.qp->Dispatch->NdkReceive(c.b.qp, &c.b, &receive, 1));
    EXPECT_STATUS(STATUS_SUCCESS, c.a.qp->Dispatch->NdkSend(c.a.qp, &c.a, &send, 1, 0));
    auto received = poll(c.b, 1);
    ASSERT_EQ(received.size(), 1u);
    EXPECT_STATUS(STATUS_SUCCESS, received[0].Status);
    EXPECT_EQ(received[0].Type, NdkOperationTypeReceive);
    EXPECT_EQ(received[0].BytesTransferred, 11u);
    EXPECT_EQ(std::memcmp(at_b.bytes.data(), "hello, loop", 11), 0);

    NDK_SGE write = at_a.sge(0, 11), read = at_a.sge(2048, 7);
    EXPECT_STATUS(STATUS_SUCCESS, c.a.qp->Dispatch->NdkWrite(c.a.qp, nullptr, &write, 1,
                                                             at_b.address(512), at_b.remote, 0));
    EXPECT_STATUS(STATUS_SUCCESS, c.a.qp->Dispatch->NdkRead(c.a.qp, nullptr, &read, 1,
                                                            at_b.address(1024), at_b.remote, 0));
    auto done = poll(c.a, 3);
    ASSERT_EQ(done.size(), 3u);
    EXPECT_EQ(done[0].Type, NdkOperationTypeSend);
    EXPECT_EQ(done[1].Type, NdkOperationTypeWrite);
    EXPECT_EQ(done[2].Type, NdkOperationTypeRead);
    for (const auto &r : done)
        EXPECT_STATUS(STATUS_SUCCESS, r.Status);
    EXPECT_EQ(std::memcmp(at_b.bytes.data() + 512, "hello, loop", 11), 0);
    EXPECT_EQ(std::memcmp(at_a.bytes.data() + 2048, "read me", 7), 0);

    // A read beyond the peer's region fails with REMOTE_RESOURCES and ends the connection.
    EXPECT_STATUS(STATUS_SUCCESS, c.a.qp->Dispatch->NdkRead(c.a.qp, nullptr, &read, 1,
                                                            at_b.address(4090), at_b.remote, 0));
    auto failed = poll(c.a, 1);
    ASSERT_EQ(failed.size(), 1u);
    EXPECT_STATUS(STATUS_REMOTE_RESOURCES, failed[0].Status);

    client.close();
    if (other)
        other->close();
    EXPECT_TRUE(client.errors().empty()) << client.errors().front();
}

INSTANTIATE_TEST_SUITE_P(LoopProvider, LoopData, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool> &info) {
                             return info.param ? "OneAdapter" : "TwoAdapters";
                         });
