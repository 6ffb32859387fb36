// The soft fabric end to end through the raw ABI: establishment, data that really moves,
// completions in order, error completions ending the connection, manual progress.
#include "connection_support.hpp"

namespace ndktest {
namespace {

TEST(Connection, SendLandsInThePostedReceive)
{
    Pair pair;
    ASSERT_TRUE(pair.connect());
    Region sink(pair.server(), pair.b().pd, 256, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    Region source(pair.client(), pair.a().pd, 256, 0);
    for (size_t i = 0; i < source.bytes.size(); ++i)
        source.bytes[i] = static_cast<unsigned char>(i * 7);
    NDK_SGE rsge = sink.sge(0, 256);
    ASSERT_STATUS(STATUS_SUCCESS, pair.b().qp->Dispatch->NdkReceive(
                                      pair.b().qp, reinterpret_cast<PVOID>(7), &rsge, 1));
    NDK_SGE ssge = source.sge(16, 100);
    ASSERT_STATUS(STATUS_SUCCESS, pair.a().qp->Dispatch->NdkSend(
                                      pair.a().qp, reinterpret_cast<PVOID>(9), &ssge, 1, 0));
    auto received = pair.poll(pair.b(), 1);
    ASSERT_EQ(received.size(), 1u);
    EXPECT_STATUS(STATUS_SUCCESS, received[0].Status);
    EXPECT_EQ(received[0].Type, NdkOperationTypeReceive);
    EXPECT_EQ(received[0].BytesTransferred, 100u);
    EXPECT_EQ(received[0].RequestContext, reinterpret_cast<PVOID>(7));
    EXPECT_EQ(received[0].ProviderErrorCode, 0u);
    EXPECT_EQ(0, std::memcmp(sink.bytes.data(), source.bytes.data() + 16, 100));
    auto sent = pair.poll(pair.a(), 1);
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_STATUS(STATUS_SUCCESS, sent[0].Status);
    EXPECT_EQ(sent[0].Type, NdkOperationTypeSend);
}

TEST(Connection, RdmaWriteThenReadMoveTheBytes)
{
    Pair pair;
    ASSERT_TRUE(pair.connect());
    Region target(pair.server(), pair.b().pd, 8192,
                  NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ);
    Region local(pair.client(), pair.a().pd, 8192,
                 NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK);
    for (size_t i = 0; i < 4096; ++i)
        local.bytes[i] = static_cast<unsigned char>(i ^ 0x5A);
    NDK_SGE out = local.sge(0, 4096);
    ASSERT_STATUS(STATUS_SUCCESS,
                  pair.a().qp->Dispatch->NdkWrite(pair.a().qp, nullptr, &out, 1,
                                                  target.address(1000), target.remote, 0));
    NDK_SGE in = local.sge(4096, 4096);
    ASSERT_STATUS(STATUS_SUCCESS,
                  pair.a().qp->Dispatch->NdkRead(pair.a().qp, reinterpret_cast<PVOID>(2), &in, 1,
                                                 target.address(1000), target.remote, 0));
    auto results = pair.poll(pair.a(), 2);
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[0].Type, NdkOperationTypeWrite); // in order within the queue
    EXPECT_EQ(results[1].Type, NdkOperationTypeRead);
    EXPECT_STATUS(STATUS_SUCCESS, results[1].Status);
    EXPECT_EQ(0, std::memcmp(target.bytes.data() + 1000, local.bytes.data(), 4096));
    EXPECT_EQ(0, std::memcmp(local.bytes.data() + 4096, local.bytes.data(), 4096));
}

TEST(Connection, OversizedSendOverflowsTheReceiveAndEndsTheConnection)
{
    Pair pair;
    ASSERT_TRUE(pair.connect());
    Region sink(pair.server(), pair.b().pd, 64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    Region source(pair.client(), pair.a().pd, 128, 0);
    NDK_SGE rsge = sink.sge(0, 64);
    ASSERT_STATUS(STATUS_SUCCESS, pair.b().qp->Dispatch->NdkReceive(pair.b().qp, nullptr, &rsge, 1));
    ASSERT_STATUS(STATUS_SUCCESS, pair.b().qp->Dispatch->NdkReceive(pair.b().qp, nullptr, &rsge, 1));
    NDK_SGE ssge = source.sge(0, 128);
    ASSERT_STATUS(STATUS_SUCCESS, pair.a().qp->Dispatch->NdkSend(pair.a().qp, nullptr, &ssge, 1, 0));
    auto received = pair.poll(pair.b(), 2);
    ASSERT_EQ(received.size(), 2u);
    EXPECT_STATUS(STATUS_BUFFER_OVERFLOW, received[0].Status);
    EXPECT_STATUS(STATUS_CANCELLED, received[1].Status) << "the rest is flushed";
    auto sent = pair.poll(pair.a(), 1);
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_STATUS(STATUS_REMOTE_RESOURCES, sent[0].Status);
    // Further requests complete with STATUS_CANCELLED (ND2 QP error model).
    ASSERT_STATUS(STATUS_SUCCESS, pair.a().qp->Dispatch->NdkSend(pair.a().qp, nullptr, &ssge, 1, 0));
    auto after = pair.poll(pair.a(), 1);
    ASSERT_EQ(after.size(), 1u);
    EXPECT_STATUS(STATUS_CANCELLED, after[0].Status);
}

TEST(Connection, SendWithoutReceiveTimesOut)
{
    Pair pair("rnr_timeout_ms=20");
    ASSERT_TRUE(pair.connect());
    Region source(pair.client(), pair.a().pd, 16, 0);
    NDK_SGE ssge = source.sge(0, 16);
    ASSERT_STATUS(STATUS_SUCCESS, pair.a().qp->Dispatch->NdkSend(pair.a().qp, nullptr, &ssge, 1, 0));
    auto sent = pair.poll(pair.a(), 1);
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_STATUS(STATUS_IO_TIMEOUT, sent[0].Status);
}

TEST(Connection, ManualProgressHoldsTheTransferUntilStepped)
{
    Pair pair("progress=manual");
    pair.client().set("progress", "auto");
    ASSERT_TRUE(pair.connect());
    ASSERT_STATUS(STATUS_SUCCESS, pair.client().set("progress", "manual"));
    Region sink(pair.server(), pair.b().pd, 64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    Region source(pair.client(), pair.a().pd, 64, 0);
    NDK_SGE rsge = sink.sge(0, 64), ssge = source.sge(0, 8);
    ASSERT_STATUS(STATUS_SUCCESS, pair.b().qp->Dispatch->NdkReceive(pair.b().qp, nullptr, &rsge, 1));
    ASSERT_STATUS(STATUS_SUCCESS, pair.a().qp->Dispatch->NdkSend(pair.a().qp, nullptr, &ssge, 1, 0));
    NDK_RESULT_EX r[2];
    EXPECT_EQ(pair.b().cq->Dispatch->NdkGetCqResultsEx(pair.b().cq, r, 2), 0u)
        << "nothing moves before a step";
    EXPECT_EQ(pair.client().knob("step"), "1");
    char reply[64] = {};
    ASSERT_STATUS(STATUS_SUCCESS, pair.client().entry().ControlMiniport(
                                      pair.client().miniport(), "step", "1", reply, sizeof reply));
    EXPECT_STREQ(reply, "1");
    EXPECT_EQ(pair.b().cq->Dispatch->NdkGetCqResultsEx(pair.b().cq, r, 2), 1u);
    pair.client().set("progress", "auto");
}

// OID_NDK_CONNECTIONS through the provider entry: too small a buffer is answered with the size
// needed; an iWARP miniport lists each connection twice (ND, then TCP), owner on ND rows only.
TEST(ConnectionOid, ConnectionsTablePairsNdAndTcpEntries)
{
    Pair pair;
    ASSERT_TRUE(pair.connect());
    auto &entry = pair.client().entry();
    ULONG written = 0, needed = 0;
    EXPECT_STATUS(NDIS_STATUS_BUFFER_TOO_SHORT,
                  entry.OidRequest(pair.client().miniport(), OID_NDK_CONNECTIONS, FALSE, nullptr,
                                   0, &written, &needed));
    ASSERT_EQ(needed, offsetof(NDIS_NDK_CONNECTIONS, Connections) +
                          2 * sizeof(NDIS_NDK_CONNECTION_ENTRY));
    std::vector<unsigned char> buffer(needed);
    ASSERT_STATUS(NDIS_STATUS_SUCCESS,
                  entry.OidRequest(pair.client().miniport(), OID_NDK_CONNECTIONS, FALSE,
                                   buffer.data(), needed, &written, &needed));
    EXPECT_EQ(written, needed);
    const auto *table = reinterpret_cast<const NDIS_NDK_CONNECTIONS *>(buffer.data());
    EXPECT_EQ(table->Header.Revision, NDIS_NDK_CONNECTIONS_REVISION_1);
    EXPECT_EQ(table->Header.Size, needed);
    EXPECT_EQ(table->Count, 2u);
    EXPECT_TRUE(table->NDConnectionsMappedtoTCPConnections);
    const NDIS_NDK_CONNECTION_ENTRY *rows = table->Connections;
    EXPECT_EQ(ntohs(rows[0].Remote.Ipv4.sin_port), ntohs(rows[1].Remote.Ipv4.sin_port));
    EXPECT_NE(rows[0].OwnerPid, 0u);
    EXPECT_EQ(rows[1].OwnerPid, 0u);
    char remote[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &rows[0].Remote.Ipv4.sin_addr, remote, sizeof remote);
    EXPECT_EQ(std::string(remote), pair.server_address());
}

} // namespace
} // namespace ndktest
