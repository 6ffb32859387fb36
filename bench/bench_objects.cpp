// Control-plane rates of the soft provider through the raw NDK ABI: create + close of every
// object type, and MR register + deregister in the manner of ndmrrate (buffer sizes 4 KiB to
// 16 MiB; one MR re-registered, and many MRs registered then deregistered).  Inline creation
// and closes (the default knobs): the figures are the provider's cost of one call pair.
// bench_control.cpp measures the same through the C++ consumer API.
#include "raw_support.hpp"

#include <benchmark/benchmark.h>

using namespace ndkbench;

namespace {

Done g_done; // inline creates and closes never call it; a pending one would (and is waited)

template <class T>
void close_now(T *object, NDK_FN_CLOSE_OBJECT fn)
{
    NTSTATUS s = fn(&object->Header, Done::close, &g_done);
    if (s == STATUS_PENDING)
        fail("close pended (a knob or a dependent?)", s);
    if (s != STATUS_SUCCESS)
        fail("close", s);
}

template <class T>
T *created(NTSTATUS s, T *out)
{
    if (s != STATUS_SUCCESS)
        fail("create (not inline)", s);
    return out;
}

void BM_RawCreateCloseCq(benchmark::State &state)
{
    RawAdapter a;
    for (auto _ : state) {
        NDK_CQ *cq = nullptr;
        created(a.d().NdkCreateCq(a.get(), static_cast<ULONG>(state.range(0)), ignore_cq, nullptr,
                                  nullptr, Done::create, &g_done, &cq),
                cq);
        close_now(cq, cq->Dispatch->NdkCloseCq);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RawCreateCloseCq)->Arg(64)->Arg(1 << 22);

void BM_RawCreateClosePd(benchmark::State &state)
{
    RawAdapter a;
    for (auto _ : state) {
        NDK_PD *pd = nullptr;
        created(a.d().NdkCreatePd(a.get(), Done::create, &g_done, &pd), pd);
        close_now(pd, pd->Dispatch->NdkClosePd);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RawCreateClosePd);

void BM_RawCreateCloseMr(benchmark::State &state)
{
    RawAdapter a;
    NDK_PD *pd = a.pd();
    for (auto _ : state) {
        NDK_MR *mr = nullptr;
        created(pd->Dispatch->NdkCreateMr(pd, state.range(0) != 0, Done::create, &g_done, &mr),
                mr);
        close_now(mr, mr->Dispatch->NdkCloseMr);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RawCreateCloseMr)->ArgName("fast_register")->Arg(0)->Arg(1);

void BM_RawCreateCloseMw(benchmark::State &state)
{
    RawAdapter a;
    NDK_PD *pd = a.pd();
    for (auto _ : state) {
        NDK_MW *mw = nullptr;
        created(pd->Dispatch->NdkCreateMw(pd, Done::create, &g_done, &mw), mw);
        close_now(mw, mw->Dispatch->NdkCloseMw);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RawCreateCloseMw);

void BM_RawCreateCloseSrq(benchmark::State &state)
{
    RawAdapter a;
    NDK_PD *pd = a.pd();
    for (auto _ : state) {
        NDK_SRQ *srq = nullptr;
        created(pd->Dispatch->NdkCreateSrq(pd, 64, 4, 0, ignore_srq, nullptr, nullptr,
                                           Done::create, &g_done, &srq),
                srq);
        close_now(srq, srq->Dispatch->NdkCloseSrq);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RawCreateCloseSrq);

void BM_RawCreateCloseQp(benchmark::State &state)
{
    RawAdapter a;
    NDK_PD *pd = a.pd();
    NDK_CQ *cq = a.cq(1024);
    for (auto _ : state) {
        NDK_QP *qp = nullptr;
        created(pd->Dispatch->NdkCreateQp(pd, cq, cq, nullptr, 64, 64, 4, 4, 0, Done::create,
                                          &g_done, &qp),
                qp);
        close_now(qp, qp->Dispatch->NdkCloseQp);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RawCreateCloseQp);

void BM_RawCreateCloseConnector(benchmark::State &state)
{
    RawAdapter a;
    for (auto _ : state) {
        NDK_CONNECTOR *c = nullptr;
        created(a.d().NdkCreateConnector(a.get(), Done::create, &g_done, &c), c);
        close_now(c, c->Dispatch->NdkCloseConnector);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RawCreateCloseConnector);

void BM_RawCreateCloseListener(benchmark::State &state)
{
    RawAdapter a;
    for (auto _ : state) {
        NDK_LISTENER *l = nullptr;
        created(a.d().NdkCreateListener(a.get(), [](PVOID, NDK_CONNECTOR *) {}, nullptr,
                                        Done::create, &g_done, &l),
                l);
        close_now(l, l->Dispatch->NdkCloseListener);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RawCreateCloseListener);

void BM_RawCreateCloseSharedEndpoint(benchmark::State &state)
{
    RawAdapter a("address=192.0.2.77\n");
    sockaddr_in any = ipv4("192.0.2.77", 0);
    for (auto _ : state) {
        NDK_SHARED_ENDPOINT *e = nullptr;
        created(a.d().NdkCreateSharedEndpoint(a.get(), reinterpret_cast<PSOCKADDR>(&any),
                                              sizeof any, Done::create, &g_done, &e),
                e);
        close_now(e, e->Dispatch->NdkCloseSharedEndpoint);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RawCreateCloseSharedEndpoint);

// ndmrrate: register + deregister one MR over a buffer of `size` bytes, repeatedly.
void BM_RawRegisterDeregister(benchmark::State &state)
{
    auto size = static_cast<size_t>(state.range(0));
    RawAdapter a;
    NDK_PD *pd = a.pd();
    NDK_MR *mr = a.mr(pd);
    void *buffer = std::aligned_alloc(4096, size);
    std::memset(buffer, 0, size);
    MDL mdl{};
    NdkInitializeMdl(&mdl, buffer, static_cast<ULONG>(size));
    for (auto _ : state) {
        NTSTATUS s = mr->Dispatch->NdkRegisterMr(mr, &mdl, size, NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
                                                 Done::request, &g_done);
        if (s != STATUS_SUCCESS)
            fail("NdkRegisterMr (not inline)", s);
        s = mr->Dispatch->NdkDeregisterMr(mr, Done::request, &g_done);
        if (s != STATUS_SUCCESS)
            fail("NdkDeregisterMr (not inline)", s);
    }
    std::free(buffer);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RawRegisterDeregister)->Arg(4096)->Arg(65536)->Arg(1 << 20)->Arg(16 << 20);

// ndmrrate's other shape: create + register `n` MRs over one 64 KiB buffer each, then
// deregister + close them all.  Items: MRs.
void BM_RawRegisterMany(benchmark::State &state)
{
    auto n = static_cast<size_t>(state.range(0));
    const size_t size = 65536;
    RawAdapter a;
    NDK_PD *pd = a.pd();
    void *buffer = std::aligned_alloc(4096, size);
    std::memset(buffer, 0, size);
    std::vector<NDK_MR *> mrs(n);
    std::vector<MDL> mdls(n);
    for (auto _ : state) {
        for (size_t i = 0; i < n; ++i) {
            created(pd->Dispatch->NdkCreateMr(pd, FALSE, Done::create, &g_done, &mrs[i]), mrs[i]);
            NdkInitializeMdl(&mdls[i], buffer, static_cast<ULONG>(size));
            NTSTATUS s = mrs[i]->Dispatch->NdkRegisterMr(mrs[i], &mdls[i], size,
                                                         NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
                                                         Done::request, &g_done);
            if (s != STATUS_SUCCESS)
                fail("NdkRegisterMr", s);
        }
        for (size_t i = 0; i < n; ++i) {
            NTSTATUS s = mrs[i]->Dispatch->NdkDeregisterMr(mrs[i], Done::request, &g_done);
            if (s != STATUS_SUCCESS)
                fail("NdkDeregisterMr", s);
            close_now(mrs[i], mrs[i]->Dispatch->NdkCloseMr);
        }
    }
    std::free(buffer);
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}
BENCHMARK(BM_RawRegisterMany)->Arg(1000)->Arg(10000);

} // namespace

BENCHMARK_MAIN();
