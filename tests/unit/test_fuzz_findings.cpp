// Regressions for what the libFuzzer target tests/fuzz/fuzz_dispatch found (docs/testing.md),
// each reduced to the calls that showed it.
#include "connection_support.hpp"

using namespace ndktest;

namespace {

std::vector<std::string> provider_errors(const RawAdapter &adapter)
{
    std::vector<std::string> out;
    for (const auto &v : adapter.session()->violations())
        if (v.severity == ndk::validate::Severity::Error &&
            v.side == ndk::validate::Side::Provider)
            out.push_back(v.rule + " " + v.object + " " + v.call + ": " + v.message);
    return out;
}

} // namespace

// A CQ closed while its QP is open pends (digest 3.1); the adapter's close then closes the QP
// the consumer left open and completes the CQ's close.  The QP gets no close completion, so the
// layer cannot order the two: it reported CLOSE-ANTECEDENT-OPEN on the CQ (a false report).
TEST(FuzzFindings, AnAntecedentCloseCompletedByTheAdapterCloseIsNotJudged)
{
    for (const char *mode : {"inline", "pending"}) {
        RawAdapter adapter(std::string("close_mode=") + mode, {2, 0}, "soft", true);
        NDK_CQ *cq = adapter.cq(8);
        NDK_PD *pd = adapter.pd();
        NDK_QP *qp = adapter.qp(pd, cq, cq);
        ASSERT_NE(qp, nullptr);
        Record &closed = adapter.record();
        ASSERT_STATUS(STATUS_PENDING, close_with(cq, closed));
        EXPECT_EQ(closed.count(), 0);
        adapter.close();
        EXPECT_EQ(closed.count(), 1) << mode;
        EXPECT_EQ(provider_errors(adapter), std::vector<std::string>{}) << mode;
    }
}

// The rule still holds outside the adapter's close: the CQ's close completes only after the
// QP's close completion, and the layer says nothing.
TEST(FuzzFindings, AnAntecedentCloseStillWaitsForItsSuccessorsClose)
{
    RawAdapter adapter("", {2, 0}, "soft", true);
    NDK_CQ *cq = adapter.cq(8);
    NDK_PD *pd = adapter.pd();
    NDK_QP *qp = adapter.qp(pd, cq, cq);
    Record &cq_closed = adapter.record();
    ASSERT_STATUS(STATUS_PENDING, close_with(cq, cq_closed));
    Record &qp_closed = adapter.record();
    NTSTATUS s = close_with(qp, qp_closed);
    if (s == STATUS_PENDING) {
        ASSERT_TRUE(qp_closed.wait());
    }
    ASSERT_TRUE(cq_closed.wait());
    EXPECT_EQ(provider_errors(adapter), std::vector<std::string>{});
    adapter.close();
    EXPECT_EQ(provider_errors(adapter), std::vector<std::string>{});
}

// A Connect refused inside the provider (no listener) holds no QP, though its completion may
// still be on its way: a QP closed meanwhile closes at once.  The layer judged the connector
// as the QP's successor from the Connect call on and reported CLOSE-ANTECEDENT-OPEN; the link
// now counts only once the Connect succeeded.
TEST(FuzzFindings, AQpClosedWhileItsRefusedConnectCompletesIsNotJudged)
{
    for (int round = 0; round < 20; ++round) {
        RawAdapter adapter("address=192.0.2.1", {2, 0}, "soft", true);
        NDK_CONNECTOR *connector = adapter.connector();
        NDK_CQ *cq = adapter.cq(8);
        NDK_PD *pd = adapter.pd();
        NDK_QP *qp = adapter.qp(pd, cq, cq);
        ASSERT_TRUE(connector && qp);
        sockaddr_in src = ipv4("192.0.2.1", 0);
        sockaddr_in dst = ipv4("192.0.2.1", 4791); // nobody listens there
        Record &connected = adapter.record();
        NTSTATUS s = connector->Dispatch->NdkConnect(
            connector, qp, reinterpret_cast<PSOCKADDR>(&src), sizeof src,
            reinterpret_cast<PSOCKADDR>(&dst), sizeof dst, 4, 4, nullptr, 0, Record::request,
            &connected);
        ASSERT_TRUE(s == STATUS_PENDING || s == STATUS_CONNECTION_REFUSED) << std::hex << s;
        Record &qp_closed = adapter.record();
        if (close_with(qp, qp_closed) == STATUS_PENDING) {
            ASSERT_TRUE(qp_closed.wait());
        }
        if (s == STATUS_PENDING) {
            ASSERT_TRUE(connected.wait());
        }
        EXPECT_EQ(provider_errors(adapter), std::vector<std::string>{});
        adapter.close();
    }
}
