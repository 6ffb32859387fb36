// Which requests may travel behind others in flight (soft_pipeline.hpp): the rules a pipelining
// channel (transport=shm) relies on to keep NDK's order, each checked on a queue of requests.
#include "providers/soft/soft_pipeline.hpp"

#include <gtest/gtest.h>

#include <deque>

namespace {

using namespace ndk::soft;

WorkRequest request(NDK_OPERATION_TYPE type, ULONG flags = 0)
{
    WorkRequest wr;
    wr.type = type;
    wr.flags = flags;
    return wr;
}

const WorkRequest kWrite = request(NdkOperationTypeWrite);
const WorkRequest kSend = request(NdkOperationTypeSend);
const WorkRequest kRead = request(NdkOperationTypeRead);

// `next` behind every request of `in_flight`, with room for 16 requests and `reads` Reads.
bool follows(std::deque<WorkRequest> in_flight, const WorkRequest &next, std::size_t reads = 4)
{
    return may_follow(in_flight, in_flight.size(), false, next, PipelineLimits{16, reads});
}

TEST(SoftPipeline, AnythingStartsWhenNothingIsInFlight)
{
    std::deque<WorkRequest> none;
    WorkRequest bind = request(NdkOperationTypeBind);
    EXPECT_TRUE(may_follow(none, 0, false, bind, PipelineLimits{}));
    EXPECT_TRUE(may_follow(none, 0, false, kRead, PipelineLimits{1, 1}));
}

TEST(SoftPipeline, ReadsWritesAndSendsFollowEachOther)
{
    EXPECT_TRUE(follows({kWrite, kSend}, kRead));
    EXPECT_TRUE(follows({kRead}, kWrite));
    EXPECT_TRUE(follows({kRead}, kSend));
    EXPECT_TRUE(follows({kRead, kWrite}, kRead));
}

TEST(SoftPipeline, ReadsInFlightStayWithinTheOutboundReadLimit)
{
    EXPECT_TRUE(follows({kRead, kWrite, kRead, kRead}, kRead, 4));
    EXPECT_FALSE(follows({kRead, kWrite, kRead, kRead, kRead}, kRead, 4));
    EXPECT_TRUE(follows({kRead, kRead, kRead, kRead}, kWrite, 4)); // only Reads are limited
    EXPECT_FALSE(follows({kRead}, kRead, 1));
}

TEST(SoftPipeline, NoMoreThanTheDepthIsInFlight)
{
    std::deque<WorkRequest> two{kWrite, kWrite};
    EXPECT_FALSE(may_follow(two, 2, false, kWrite, PipelineLimits{2, 2}));
    EXPECT_TRUE(may_follow(two, 2, false, kWrite, PipelineLimits{3, 2}));
}

TEST(SoftPipeline, AReadFenceWaitsForEveryReadInFlight)
{
    const WorkRequest fenced_write = request(NdkOperationTypeWrite, NDK_OP_FLAG_READ_FENCE);
    const WorkRequest fenced_read = request(NdkOperationTypeRead, NDK_OP_FLAG_READ_FENCE);
    EXPECT_FALSE(follows({kRead}, fenced_write));
    EXPECT_FALSE(follows({kWrite, kRead, kSend}, fenced_write));
    EXPECT_FALSE(follows({kRead}, fenced_read));
    EXPECT_TRUE(follows({kWrite, kSend}, fenced_write)); // no Read before it
    EXPECT_TRUE(follows({kWrite}, fenced_read));
}

TEST(SoftPipeline, WhatChangesMemoryAccessNeitherFollowsNorIsFollowed)
{
    WorkRequest send_invalidate = kSend;
    send_invalidate.invalidate_remote = true;
    const WorkRequest read_invalidate =
        request(NdkOperationTypeRead, NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE);
    for (const WorkRequest &local :
         {request(NdkOperationTypeBind), request(NdkOperationTypeFastRegister),
          request(NdkOperationTypeInvalidate), send_invalidate, read_invalidate}) {
        EXPECT_FALSE(follows({kWrite}, local)) << local.type;
        EXPECT_FALSE(follows({local}, kWrite)) << local.type;
        EXPECT_FALSE(follows({local}, kRead)) << local.type;
    }
}

TEST(SoftPipeline, ARequestThatCompletesAtExecutionStartsAlone)
{
    WorkRequest refused = kWrite;
    refused.refused = STATUS_INVALID_PARAMETER;
    EXPECT_FALSE(follows({kWrite}, refused));
    EXPECT_FALSE(follows({refused}, kWrite));
}

TEST(SoftPipeline, NothingFollowsARequestThatSettledBehindOthers)
{
    std::deque<WorkRequest> settled{kWrite, kWrite};
    EXPECT_FALSE(may_follow(settled, 2, true, kWrite, PipelineLimits{16, 4}));
}

} // namespace
