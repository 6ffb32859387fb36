// Data-path figures of the soft provider through the raw NDK ABI (bench/raw_support.hpp), on
// one connected QP pair of two soft adapters in this process.
//
// Automatic progress (the default) is what these measure unless the name says Manual: with it
// the soft provider moves the bytes and queues both completions inside the posting call, so a
// post + poll loop on one thread measures the provider's whole per-operation cost with no
// thread hand-off.  The *Manual* benchmarks set progress=manual and step the engine one task
// at a time, so every transfer crosses to the engine thread and back: the cost of the engine
// (deterministic: each step runs exactly the transfer just posted).
//
//   SendRecv/size     post a receive at b, a send at a, poll both CQs (one transfer: half a
//                     round trip of a ping-pong)
//   Write/size, Read/size            post one RDMA op, poll its completion (latency)
//   WriteBw/size, ReadBw/size        keep `depth` ops in flight, poll in batches (bandwidth)
//   PollBatch/batch   GetCqResultsEx in batches of `batch` from a CQ holding 16384 results;
//                     only the polling is timed (manual time): completions polled per second
//   *Manual           the same through the engine with progress=manual + step
#include "raw_support.hpp"

#include <benchmark/benchmark.h>

#include <chrono>

using namespace ndkbench;

namespace {

constexpr ULONG kDepth = 1024;

void SizeArgs(benchmark::internal::Benchmark *b)
{
    for (long size : {8L, 64L, 512L, 4096L, 65536L, 1L << 20})
        b->Arg(size);
}

// One receive + send of `size` bytes, both completions polled, per iteration.
void send_recv_rounds(benchmark::State &state, Pair &pair, ULONG size)
{
    Region src(pair.client(), pair.a().pd, size), dst(pair.server(), pair.b().pd, size);
    NDK_QP *qa = pair.a().qp, *qb = pair.b().qp;
    NDK_SGE s = src.sge(0, size), r = dst.sge(0, size);
    NDK_RESULT_EX out[2];
    for (auto _ : state) {
        if (NTSTATUS st = qb->Dispatch->NdkReceive(qb, nullptr, &r, 1); st != STATUS_SUCCESS)
            fail("NdkReceive", st);
        if (NTSTATUS st = qa->Dispatch->NdkSend(qa, nullptr, &s, 1, 0); st != STATUS_SUCCESS)
            fail("NdkSend", st);
        poll_n(pair.b().cq, out, 1);
        poll_n(pair.a().cq, out + 1, 1);
    }
    state.SetItemsProcessed(state.iterations());
}

void BM_SendRecv(benchmark::State &state)
{
    auto size = static_cast<ULONG>(state.range(0));
    Pair pair(4096, kDepth);
    send_recv_rounds(state, pair, size);
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * size);
}
BENCHMARK(BM_SendRecv)->Apply(SizeArgs);

template <bool Read>
void rdma_latency(benchmark::State &state)
{
    auto size = static_cast<ULONG>(state.range(0));
    Pair pair(4096, kDepth);
    Region local(pair.client(), pair.a().pd, size), remote(pair.server(), pair.b().pd, size);
    NDK_QP *qa = pair.a().qp;
    NDK_SGE s = local.sge(0, size);
    NDK_RESULT_EX out[1];
    for (auto _ : state) {
        NTSTATUS st = Read ? qa->Dispatch->NdkRead(qa, nullptr, &s, 1, remote.address(),
                                                   remote.remote, 0)
                           : qa->Dispatch->NdkWrite(qa, nullptr, &s, 1, remote.address(),
                                                    remote.remote, 0);
        if (st != STATUS_SUCCESS)
            fail("post", st);
        poll_n(pair.a().cq, out, 1);
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * size);
    state.SetItemsProcessed(state.iterations());
}
void BM_Write(benchmark::State &state) { rdma_latency<false>(state); }
void BM_Read(benchmark::State &state) { rdma_latency<true>(state); }
BENCHMARK(BM_Write)->Apply(SizeArgs);
BENCHMARK(BM_Read)->Apply(SizeArgs);

// Bandwidth: `inflight` requests posted, then polled in batches of up to 64.
template <bool Read>
void rdma_bandwidth(benchmark::State &state)
{
    auto size = static_cast<ULONG>(state.range(0));
    const ULONG inflight = 64;
    Pair pair(4096, kDepth);
    Region local(pair.client(), pair.a().pd, size), remote(pair.server(), pair.b().pd, size);
    NDK_QP *qa = pair.a().qp;
    NDK_SGE s = local.sge(0, size);
    NDK_RESULT_EX out[inflight];
    for (auto _ : state) {
        for (ULONG i = 0; i < inflight; ++i) {
            NTSTATUS st = Read ? qa->Dispatch->NdkRead(qa, nullptr, &s, 1, remote.address(),
                                                       remote.remote, 0)
                               : qa->Dispatch->NdkWrite(qa, nullptr, &s, 1, remote.address(),
                                                        remote.remote, 0);
            if (st != STATUS_SUCCESS)
                fail("post", st);
        }
        poll_n(pair.a().cq, out, inflight);
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * size * inflight);
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * inflight);
}
void BM_WriteBw(benchmark::State &state) { rdma_bandwidth<false>(state); }
void BM_ReadBw(benchmark::State &state) { rdma_bandwidth<true>(state); }
BENCHMARK(BM_WriteBw)->Apply(SizeArgs);
BENCHMARK(BM_ReadBw)->Apply(SizeArgs);

// GetCqResultsEx rate: the CQ is filled with 16384 write completions (untimed), then drained
// in batches of `batch` (timed by hand).
void BM_PollBatch(benchmark::State &state)
{
    auto batch = static_cast<ULONG>(state.range(0));
    const ULONG fill = 16384;
    Pair pair(fill, kDepth);
    Region local(pair.client(), pair.a().pd, 8), remote(pair.server(), pair.b().pd, 8);
    NDK_QP *qa = pair.a().qp;
    NDK_SGE s = local.sge(0, 8);
    std::vector<NDK_RESULT_EX> out(batch);
    for (auto _ : state) {
        for (ULONG i = 0; i < fill; ++i)
            if (NTSTATUS st = qa->Dispatch->NdkWrite(qa, nullptr, &s, 1, remote.address(),
                                                     remote.remote, 0);
                st != STATUS_SUCCESS)
                fail("NdkWrite", st);
        auto start = std::chrono::steady_clock::now();
        ULONG got = 0;
        while (got < fill) {
            ULONG k = pair.a().cq->Dispatch->NdkGetCqResultsEx(pair.a().cq, out.data(), batch);
            if (k == 0)
                fail("PollBatch: CQ ran dry", STATUS_UNSUCCESSFUL);
            got += k;
        }
        auto end = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(out.data());
        state.SetIterationTime(std::chrono::duration<double>(end - start).count());
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * fill);
    state.counters["completions_per_s"] = benchmark::Counter(
        static_cast<double>(state.iterations()) * fill, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PollBatch)->Arg(1)->Arg(4)->Arg(16)->Arg(64)->Arg(256)->Arg(1024)->UseManualTime();

// Post + poll of 8-byte writes in batches of `batch` (post `batch`, then poll them all): the
// whole per-completion cost on one core, posting included.
// `batch` 8-byte writes posted, then all polled, per iteration.
void post_poll_rounds(benchmark::State &state, Pair &pair, ULONG batch)
{
    Region local(pair.client(), pair.a().pd, 8), remote(pair.server(), pair.b().pd, 8);
    NDK_QP *qa = pair.a().qp;
    NDK_SGE s = local.sge(0, 8);
    std::vector<NDK_RESULT_EX> out(batch);
    for (auto _ : state) {
        for (ULONG i = 0; i < batch; ++i)
            if (NTSTATUS st = qa->Dispatch->NdkWrite(qa, nullptr, &s, 1, remote.address(),
                                                     remote.remote, 0);
                st != STATUS_SUCCESS)
                fail("NdkWrite", st);
        poll_n(pair.a().cq, out.data(), batch);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * batch);
}

void BM_PostPollBatch(benchmark::State &state)
{
    Pair pair(4096, kDepth);
    post_poll_rounds(state, pair, static_cast<ULONG>(state.range(0)));
}
BENCHMARK(BM_PostPollBatch)->Arg(1)->Arg(16)->Arg(256);

// The validation layer's cost on the data path: the same 64-byte send/receive round and the
// same 16-write post+poll batch, bare (arg 0) and behind the layer (arg 1).  The ratio of the
// two is the layer's overhead per post+poll (docs/performance.md).
void BM_SendRecv64Validation(benchmark::State &state)
{
    Pair pair(4096, kDepth, AdapterOptions(""), 0, state.range(0) != 0);
    send_recv_rounds(state, pair, 64);
}
BENCHMARK(BM_SendRecv64Validation)->Arg(0)->Arg(1);

void BM_PostPoll16Validation(benchmark::State &state)
{
    Pair pair(4096, kDepth, AdapterOptions(""), 0, state.range(0) != 0);
    post_poll_rounds(state, pair, 16);
}
BENCHMARK(BM_PostPoll16Validation)->Arg(0)->Arg(1);

// Through the engine: progress=manual, each post's transfer is one engine task run by step(1)
// (a round trip to the engine thread), then the completion is polled.
void BM_WriteManual(benchmark::State &state)
{
    auto size = static_cast<ULONG>(state.range(0));
    Pair pair(4096, kDepth, AdapterOptions("progress=manual"));
    Region local(pair.client(), pair.a().pd, size), remote(pair.server(), pair.b().pd, size);
    NDK_QP *qa = pair.a().qp;
    NDK_SGE s = local.sge(0, size);
    NDK_RESULT_EX out[1];
    for (auto _ : state) {
        if (NTSTATUS st = qa->Dispatch->NdkWrite(qa, nullptr, &s, 1, remote.address(),
                                                 remote.remote, 0);
            st != STATUS_SUCCESS)
            fail("NdkWrite", st);
        if (pair.client().step(1) != 1)
            fail("step", STATUS_UNSUCCESSFUL);
        poll_n(pair.a().cq, out, 1);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_WriteManual)->Arg(8)->Arg(4096);

void BM_SendRecvManual(benchmark::State &state)
{
    auto size = static_cast<ULONG>(state.range(0));
    Pair pair(4096, kDepth, AdapterOptions("progress=manual"));
    Region src(pair.client(), pair.a().pd, size), dst(pair.server(), pair.b().pd, size);
    NDK_QP *qa = pair.a().qp, *qb = pair.b().qp;
    NDK_SGE s = src.sge(0, size), r = dst.sge(0, size);
    NDK_RESULT_EX out[2];
    for (auto _ : state) {
        if (NTSTATUS st = qb->Dispatch->NdkReceive(qb, nullptr, &r, 1); st != STATUS_SUCCESS)
            fail("NdkReceive", st);
        if (NTSTATUS st = qa->Dispatch->NdkSend(qa, nullptr, &s, 1, 0); st != STATUS_SUCCESS)
            fail("NdkSend", st);
        pair.client().step(1);
        poll_n(pair.b().cq, out, 1);
        poll_n(pair.a().cq, out + 1, 1);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SendRecvManual)->Arg(8)->Arg(4096);

} // namespace

BENCHMARK_MAIN();
