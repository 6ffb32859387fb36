// Control-plane rates of the soft provider through the C++ consumer API: create + close of a
// CQ, PD and MR, and MR register + deregister, inline.  The baseline in the same run is an
// operation of known cost: a heap allocation + free of the object's size.
#include "ndk/objects.hpp"

#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

namespace {

std::shared_ptr<ndk::Adapter> soft_adapter() { return ndk::Adapter::open("soft", ""); }

void BM_Baseline_HeapAllocFree(benchmark::State &state)
{
    for (auto _ : state) {
        auto p = std::make_unique<std::array<char, 256>>();
        benchmark::DoNotOptimize(p.get());
    }
}
BENCHMARK(BM_Baseline_HeapAllocFree);

void BM_CreateCloseCq(benchmark::State &state)
{
    auto adapter = soft_adapter();
    for (auto _ : state) {
        auto cq = adapter->create_cq(64).object();
        cq->close();
    }
}
BENCHMARK(BM_CreateCloseCq);

void BM_CreateClosePd(benchmark::State &state)
{
    auto adapter = soft_adapter();
    for (auto _ : state) {
        auto pd = adapter->create_pd().object();
        pd->close();
    }
}
BENCHMARK(BM_CreateClosePd);

void BM_CreateCloseMr(benchmark::State &state)
{
    auto adapter = soft_adapter();
    auto pd = std::static_pointer_cast<ndk::Pd>(adapter->create_pd().object());
    for (auto _ : state) {
        auto mr = pd->create_mr(false).object();
        mr->close();
    }
}
BENCHMARK(BM_CreateCloseMr);

void BM_RegisterDeregisterMr(benchmark::State &state)
{
    auto adapter = soft_adapter();
    auto pd = std::static_pointer_cast<ndk::Pd>(adapter->create_pd().object());
    auto mr = std::static_pointer_cast<ndk::Mr>(pd->create_mr(false).object());
    std::vector<char> buffer(static_cast<size_t>(state.range(0)));
    for (auto _ : state) {
        mr->register_buffer(buffer.data(), buffer.size(), NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr);
        mr->deregister();
    }
}
BENCHMARK(BM_RegisterDeregisterMr)->Arg(4096)->Arg(1 << 20);

} // namespace

BENCHMARK_MAIN();
