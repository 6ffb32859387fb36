// The provider kit's rules on their own, without a provider: the order of the post checks
// (docs/semantics.md, POST-CHECKS), the CQ arm (digest 3.2, ARM-ANY, CQ-ERROR-ARM), the OID
// protocol (OID-SIZE) and the counted dependents of an object's lifetime (digest 3.1,
// MR-IN-USE).  The scenarios check the same rules through soft and verbs.
#include "providers/kit/kit_cq_arm.hpp"
#include "providers/kit/kit_create_checks.hpp"
#include "providers/kit/kit_functions.hpp"
#include "providers/kit/kit_lifetime.hpp"
#include "providers/kit/kit_notification_cpus.hpp"
#include "providers/kit/kit_oid.hpp"
#include "providers/kit/kit_post_checks.hpp"

#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>
#include <thread>
#include <vector>

namespace {

using namespace ndk::kit;

const SglLimits kLimits{.max_sge = 2, .max_transfer = 100, .inline_size = 8};

TEST(ProviderKit, InitiatorChecksComeInTheDocumentedOrder)
{
    // Every failure at once: the first in the order wins, then each in turn once the earlier
    // ones are cured.
    QueueView queue{.cq_in_error = true, .connected = false, .queued = 4, .depth = 4};
    const ULONG bad_flags = NDK_OP_FLAG_RDMA_READ_SINK;
    EXPECT_EQ(check_initiator_post(queue, bad_flags, kSendFlags), STATUS_INVALID_DEVICE_STATE);
    queue.cq_in_error = false;
    EXPECT_EQ(check_initiator_post(queue, bad_flags, kSendFlags), STATUS_CONNECTION_INVALID);
    queue.connected = true;
    EXPECT_EQ(check_initiator_post(queue, bad_flags, kSendFlags), STATUS_INVALID_PARAMETER);
    EXPECT_EQ(check_initiator_post(queue, 0, kSendFlags), STATUS_NO_MORE_ENTRIES);
    queue.queued = 3;
    EXPECT_EQ(check_initiator_post(queue, 0, kSendFlags), STATUS_SUCCESS);
}

TEST(ProviderKit, TooManySgesComeBeforeTooMuchData)
{
    std::vector<NDK_SGE> sgl(3, NDK_SGE{nullptr, 60, 0}); // 3 SGEs, 180 bytes
    uint64_t total = 0;
    EXPECT_EQ(check_sgl(sgl.data(), 3, 0, kLimits, &total), STATUS_DATA_OVERRUN);
    EXPECT_EQ(check_sgl(sgl.data(), 2, 0, kLimits, &total), STATUS_BUFFER_OVERFLOW);
    EXPECT_EQ(check_sgl(sgl.data(), 1, 0, kLimits, &total), STATUS_SUCCESS);
    EXPECT_EQ(total, 60u);
    EXPECT_EQ(check_sgl(nullptr, 1, 0, kLimits, &total), STATUS_INVALID_PARAMETER);
}

TEST(ProviderKit, InlineDataIsBoundedByItsSizeNotTheSgeCount)
{
    std::vector<NDK_SGE> sgl(3, NDK_SGE{nullptr, 2, 0}); // 3 SGEs of 2 bytes: 6 inline bytes
    uint64_t total = 0;
    EXPECT_EQ(check_sgl(sgl.data(), 3, NDK_OP_FLAG_INLINE, kLimits, &total), STATUS_SUCCESS);
    EXPECT_EQ(total, 6u);
    sgl[0].Length = 5; // 9 bytes > InlineDataSize 8
    EXPECT_EQ(check_sgl(sgl.data(), 3, NDK_OP_FLAG_INLINE, kLimits, &total),
              STATUS_BUFFER_OVERFLOW);
}

TEST(ProviderKit, ReceiveChecksPutCqAndQueueBeforeTheSgl)
{
    std::vector<NDK_SGE> sgl(3, NDK_SGE{nullptr, 60, 0});
    uint64_t total = 0;
    QueueView queue{.cq_in_error = true, .connected = true, .queued = 1, .depth = 1};
    EXPECT_EQ(check_receive_post(queue, sgl.data(), 3, kLimits, &total),
              STATUS_INVALID_DEVICE_STATE);
    queue.cq_in_error = false;
    EXPECT_EQ(check_receive_post(queue, sgl.data(), 3, kLimits, &total), STATUS_NO_MORE_ENTRIES);
    queue.queued = 0;
    EXPECT_EQ(check_receive_post(queue, sgl.data(), 3, kLimits, &total), STATUS_DATA_OVERRUN);
    EXPECT_EQ(check_receive_post(queue, sgl.data(), 2, kLimits, &total), STATUS_BUFFER_OVERFLOW);
}

TEST(ProviderKit, ReArmsMergeAnyFirstThenSolicited)
{
    CqArm arm;
    EXPECT_FALSE(arm.arm(NDK_CQ_NOTIFY_SOLICITED + 1)); // not an arm type
    EXPECT_FALSE(arm.armed());
    ASSERT_TRUE(arm.arm(NDK_CQ_NOTIFY_ERRORS));
    ASSERT_TRUE(arm.arm(NDK_CQ_NOTIFY_SOLICITED));
    EXPECT_EQ(arm.type(), ULONG{NDK_CQ_NOTIFY_SOLICITED});
    ASSERT_TRUE(arm.arm(NDK_CQ_NOTIFY_ANY));
    EXPECT_EQ(arm.type(), ULONG{NDK_CQ_NOTIFY_ANY});
    ASSERT_TRUE(arm.arm(NDK_CQ_NOTIFY_SOLICITED));
    EXPECT_EQ(arm.type(), ULONG{NDK_CQ_NOTIFY_ANY}); // ANY stays
}

TEST(ProviderKit, AnArmIsSatisfiedOnceByWhatArrived)
{
    CqArm arm;
    arm.arrived(false); // before any arm: no notification, but it counts for the next arm
    EXPECT_FALSE(arm.take(STATUS_SUCCESS));
    arm.arm(NDK_CQ_NOTIFY_SOLICITED);
    EXPECT_FALSE(arm.take(STATUS_SUCCESS)); // an unsolicited success does not satisfy it
    arm.arrived(true); // an error or a solicited send does
    EXPECT_EQ(arm.take(STATUS_SUCCESS), STATUS_SUCCESS);
    EXPECT_FALSE(arm.take(STATUS_SUCCESS)); // once per arm
    arm.arm(NDK_CQ_NOTIFY_ANY);
    EXPECT_FALSE(arm.take(STATUS_SUCCESS)); // nothing arrived since the callback
    arm.arrived(false);
    EXPECT_FALSE(arm.take(STATUS_SUCCESS, [] { return true; })); // held back by moderation
    EXPECT_EQ(arm.take(STATUS_SUCCESS), STATUS_SUCCESS);
}

TEST(ProviderKit, AnArmCaughtUpFromACountOfPushesFollowsTheSameRules)
{
    // The soft CQ's way: the ring's absolute count of pushes instead of arrived() per
    // completion, solicited_arrived() for those that satisfy SOLICITED.
    CqArm arm;
    arm.catch_up(3); // three arrived before any arm: they count for the next arm
    arm.arm(NDK_CQ_NOTIFY_SOLICITED);
    EXPECT_FALSE(arm.take(STATUS_SUCCESS)); // none of them solicited
    arm.solicited_arrived();
    arm.catch_up(4);
    EXPECT_EQ(arm.arrived_count(), 4u);
    EXPECT_EQ(arm.take(STATUS_SUCCESS), STATUS_SUCCESS);
    arm.arm(NDK_CQ_NOTIFY_ANY);
    arm.catch_up(4);
    EXPECT_FALSE(arm.take(STATUS_SUCCESS)); // nothing arrived since the callback
    arm.catch_up(6);
    EXPECT_EQ(arm.arrived_count(), 2u); // what interrupt moderation counts
    EXPECT_FALSE(arm.take(STATUS_SUCCESS, [] { return true; })); // held back
    EXPECT_EQ(arm.take(STATUS_SUCCESS), STATUS_SUCCESS);
    EXPECT_EQ(arm.arrived_count(), 0u);
}

TEST(ProviderKit, ACqErrorIsReportedOnceToWhicheverArm)
{
    CqArm arm;
    EXPECT_FALSE(arm.take(STATUS_BUFFER_OVERFLOW)); // unarmed: kept for the next arm
    arm.arm(NDK_CQ_NOTIFY_ERRORS);
    EXPECT_EQ(arm.take(STATUS_BUFFER_OVERFLOW), STATUS_BUFFER_OVERFLOW);
    arm.arm(NDK_CQ_NOTIFY_ANY);
    arm.arrived(false);
    EXPECT_FALSE(arm.take(STATUS_BUFFER_OVERFLOW)); // the last thing the CQ reports
}

// A Lifetime that records its last dependent's release (the close that waits for it).
class ClosingLifetime final : public Lifetime {
public:
    NTSTATUS close() { return close_or_pend(nullptr, nullptr, [] {}); }
    int finished = 0;

private:
    void on_last_dependent() override
    {
        if (claim_finish())
            ++finished;
    }
};

// The counted dependents (the soft MR's requests, MR-IN-USE) share the dependents' word: each
// is a dependent for the close, counted apart, and the close finishes at the last release of
// either kind, once.
TEST(ProviderKit, CountedDependentsAreDependentsCountedApart)
{
    ClosingLifetime object;
    object.add_dependent();
    object.add_counted_dependent();
    object.add_counted_dependent();
    EXPECT_EQ(object.dependents(), 3);
    EXPECT_EQ(object.counted_dependents(), 2);
    EXPECT_EQ(object.close(), STATUS_PENDING);
    object.release_counted_dependent();
    object.release_dependent();
    EXPECT_EQ(object.dependents(), 1);
    EXPECT_EQ(object.counted_dependents(), 1);
    EXPECT_EQ(object.finished, 0);
    object.release_counted_dependent(); // the last one: the close finishes
    EXPECT_EQ(object.dependents(), 0);
    EXPECT_EQ(object.counted_dependents(), 0);
    EXPECT_EQ(object.finished, 1);
}

// Two threads taking and dropping counted and plain dependents at once: the counts end where
// they began and the close waiting on the one held throughout has not finished.
TEST(ProviderKit, CountedDependentsTakenOnTwoThreadsAddUp)
{
    ClosingLifetime object;
    object.add_dependent();
    EXPECT_EQ(object.close(), STATUS_PENDING);
    auto churn = [&object](bool counted) {
        for (int i = 0; i < 100000; ++i) {
            if (counted) {
                object.add_counted_dependent();
                object.release_counted_dependent();
            } else {
                object.add_dependent();
                object.release_dependent();
            }
        }
    };
    std::thread a(churn, true), b(churn, false);
    a.join();
    b.join();
    EXPECT_EQ(object.dependents(), 1);
    EXPECT_EQ(object.counted_dependents(), 0);
    EXPECT_EQ(object.finished, 0);
    object.release_dependent();
    EXPECT_EQ(object.finished, 1);
}

TEST(ProviderKit, CreateChecksHoldTheAdapterLimits)
{
    NDK_ADAPTER_INFO info{};
    info.MaxCqDepth = 8;
    info.MaxSrqDepth = 8;
    info.MaxReceiveRequestSge = 2;
    auto notify = [](PVOID, NTSTATUS) {};
    NDK_CQ *cq = nullptr;
    EXPECT_EQ(check_create_cq(info, 8, notify, nullptr, &cq), STATUS_SUCCESS);
    EXPECT_EQ(check_create_cq(info, 9, notify, nullptr, &cq), STATUS_INVALID_PARAMETER);
    EXPECT_EQ(check_create_cq(info, 0, notify, nullptr, &cq), STATUS_INVALID_PARAMETER);
    GROUP_AFFINITY group1{};
    group1.Group = 1;
    group1.Mask = 1;
    EXPECT_EQ(check_create_cq(info, 8, notify, &group1, &cq), STATUS_INVALID_PARAMETER);
    EXPECT_EQ(check_resize_cq(info, 4), STATUS_NOT_SUPPORTED); // no CQ_RESIZE_SUPPORTED flag
    info.AdapterFlags = NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED;
    EXPECT_EQ(check_resize_cq(info, 4), STATUS_SUCCESS);
    auto srq_notify = [](PVOID, NTSTATUS) {};
    EXPECT_EQ(check_modify_srq(info, 4, 0, 5, srq_notify), STATUS_INVALID_PARAMETER); // > depth 4
    EXPECT_EQ(check_modify_srq(info, 4, 0, 3, nullptr), STATUS_INVALID_PARAMETER); // no callback
    EXPECT_EQ(check_modify_srq(info, 4, 6, 5, srq_notify), STATUS_SUCCESS);
}

TEST(ProviderKit, TheFunctionTableSaysWhatEachPageDocuments)
{
    const NdkFunction *create_cq = find_function("NdkCreateCq");
    ASSERT_NE(create_cq, nullptr);
    EXPECT_TRUE(create_cq->documents(STATUS_PENDING));
    EXPECT_TRUE(create_cq->documents(STATUS_INVALID_PARAMETER));
    EXPECT_FALSE(create_cq->documents(STATUS_INVALID_PARAMETER_MIX));
    const NdkFunction *reject = find_function("NdkReject"); // inline: PENDING is no answer
    ASSERT_NE(reject, nullptr);
    EXPECT_FALSE(reject->documents(STATUS_PENDING));
    EXPECT_TRUE(reject->documents(STATUS_CONNECTION_ABORTED));
    const NdkFunction *close_qp = find_function("NdkCloseQp");
    ASSERT_NE(close_qp, nullptr);
    EXPECT_TRUE(close_qp->documents(STATUS_PENDING));
    EXPECT_FALSE(close_qp->documents(STATUS_INVALID_DEVICE_STATE));
    EXPECT_EQ(find_function("NdkNoSuchFunction"), nullptr);
    // Every name once.
    for (const NdkFunction &f : kFunctions) {
        int rows = 0;
        for (const NdkFunction &g : kFunctions)
            rows += f.name == g.name ? 1 : 0;
        EXPECT_EQ(rows, 1) << f.name;
    }
}

// A provider with one connection and one listener, on iWARP.
class TwoEntries final : public OidAnswers {
public:
    bool enabled = true;
    void set_enabled(bool on) override { enabled = on; }
    bool mapped_to_tcp() override { return true; }
    NDIS_NDK_PERFORMANCE_COUNTERS counters() override { return {}; }
    void list_connections(ndk::ndis::ConnectionsTable &table) override
    {
        table.add(SOCKADDR_INET{}, SOCKADDR_INET{});
    }
    void list_local_endpoints(ndk::ndis::LocalEndpointsTable &table) override
    {
        table.add(SOCKADDR_INET{}, true);
    }
};

TEST(ProviderKit, OidRequestsFollowTheNdisConventions)
{
    TwoEntries answers;
    ULONG written = 0, needed = 0;
    BOOLEAN off = FALSE;
    EXPECT_EQ(oid_request(answers, OID_NDK_SET_STATE, false, &off, 1, &written, &needed),
              NDIS_STATUS_NOT_SUPPORTED); // set only
    EXPECT_EQ(oid_request(answers, OID_NDK_SET_STATE, true, &off, 4, &written, &needed),
              NDIS_STATUS_INVALID_LENGTH);
    EXPECT_EQ(needed, sizeof(BOOLEAN));
    EXPECT_EQ(oid_request(answers, OID_NDK_SET_STATE, true, &off, 1, &written, &needed),
              NDIS_STATUS_SUCCESS);
    EXPECT_FALSE(answers.enabled);
    EXPECT_EQ(oid_request(answers, 0x12345678, false, nullptr, 0, &written, &needed),
              NDIS_STATUS_INVALID_OID);
    // Too small a buffer: the size needed, for the ND entry and its TCP twin.
    EXPECT_EQ(oid_request(answers, OID_NDK_CONNECTIONS, false, nullptr, 0, &written, &needed),
              NDIS_STATUS_BUFFER_TOO_SHORT);
    EXPECT_EQ(written, 0u);
    std::vector<unsigned char> buffer(needed);
    ASSERT_EQ(oid_request(answers, OID_NDK_CONNECTIONS, false, buffer.data(), needed, &written,
                          &needed),
              NDIS_STATUS_SUCCESS);
    auto *table = reinterpret_cast<const NDIS_NDK_CONNECTIONS *>(buffer.data());
    EXPECT_EQ(table->Count, 2u);
    EXPECT_TRUE(table->NDConnectionsMappedtoTCPConnections);
}

// docs/semantics.md CQ-AFFINITY: inside OnNotificationCpus the thread runs on the processors
// of the CQ's mask (the kernel moves it before pthread_setaffinity_np returns), and afterwards
// on its own set again; no preference moves nothing.
TEST(ProviderKit, NotificationCpusMoveTheThreadForTheCallbackOnly)
{
    cpu_set_t own;
    ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof own, &own), 0);
    for (int cpu = 0; cpu < 64; ++cpu) {
        if (!CPU_ISSET(cpu, &own))
            continue;
        GROUP_AFFINITY affinity{};
        affinity.Mask = uint64_t{1} << cpu;
        {
            OnNotificationCpus on{NotificationCpus(&affinity)};
            EXPECT_EQ(sched_getcpu(), cpu);
        }
        cpu_set_t after;
        ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof after, &after), 0);
        EXPECT_TRUE(CPU_EQUAL(&after, &own)) << cpu;
    }
    OnNotificationCpus none{NotificationCpus()};
    cpu_set_t unchanged;
    ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof unchanged, &unchanged), 0);
    EXPECT_TRUE(CPU_EQUAL(&unchanged, &own));
}

} // namespace
