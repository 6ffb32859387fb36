// PD, MR and MW through the raw C ABI (digest 1.2, 1.4, 1.5): the privileged token,
// normal registration from an MDL chain, fast-register initialization, misuse of one kind as
// the other, pending and injected-failure requests, and object caps.
#include "support.hpp"

#include <gtest/gtest.h>

#include <sys/mman.h>

namespace {

using ndktest::kTestVa;
using ndktest::Mapping;
using ndktest::MdlChain;
using ndktest::RawAdapter;
using ndktest::Record;

constexpr ULONG kPage = NDK_PAGE_SIZE;
constexpr ULONG kRw = NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ;

NTSTATUS register_mr(RawAdapter &a, NDK_MR *mr, MDL *mdl, SIZE_T length, ULONG flags,
                     Record **record = nullptr)
{
    Record &r = a.record();
    if (record)
        *record = &r;
    return mr->Dispatch->NdkRegisterMr(mr, mdl, length, flags, Record::request, &r);
}

struct PdMr {
    explicit PdMr(RawAdapter &a)
    {
        pd = a.pd();
        if (pd) {
            mr = a.mr(pd, false);
            fast = a.mr(pd, true);
        }
    }
    NDK_PD *pd = nullptr;
    NDK_MR *mr = nullptr;   // normal registration only
    NDK_MR *fast = nullptr; // fast-register only
};

TEST(Pd, PrivilegedTokenIsStableAndNeverAnMrToken)
{
    RawAdapter a;
    PdMr f(a);
    ASSERT_TRUE(f.mr);
    UINT32 token = 0, again = 0;
    f.pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(f.pd, &token);
    f.pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(f.pd, &again);
    EXPECT_EQ(token, again);
    MdlChain chain({{kTestVa, 2 * kPage}});
    ASSERT_STATUS(STATUS_SUCCESS, register_mr(a, f.mr, chain.get(), 2 * kPage, kRw));
    UINT32 local = f.mr->Dispatch->NdkGetLocalTokenFromMr(f.mr);
    UINT32 remote = f.mr->Dispatch->NdkGetRemoteTokenFromMr(f.mr);
    EXPECT_NE(local, token);
    EXPECT_NE(remote, token);
}

TEST(Mr, RegisterGivesTokensAndDeregisterTakesThemAway)
{
    RawAdapter a;
    PdMr f(a);
    ASSERT_TRUE(f.mr);
    EXPECT_EQ(f.mr->Dispatch->NdkGetLocalTokenFromMr(f.mr), 0u) << "not registered yet";
    // Two elements, the first ending where the second begins: virtually contiguous.
    MdlChain chain({{kTestVa + 0x100, kPage - 0x100}, {kTestVa + kPage, 3 * kPage}});
    ASSERT_STATUS(STATUS_SUCCESS, register_mr(a, f.mr, chain.get(), 4 * kPage - 0x100, kRw));
    UINT32 local = f.mr->Dispatch->NdkGetLocalTokenFromMr(f.mr);
    UINT32 remote = f.mr->Dispatch->NdkGetRemoteTokenFromMr(f.mr);
    EXPECT_NE(local, 0u);
    EXPECT_NE(remote, 0u);
    EXPECT_NE(local, remote);
    // A second registration of a registered MR is refused.
    EXPECT_STATUS(STATUS_INVALID_DEVICE_STATE,
                  register_mr(a, f.mr, chain.get(), kPage - 0x100, kRw));
    Record &dr = a.record();
    ASSERT_STATUS(STATUS_SUCCESS, f.mr->Dispatch->NdkDeregisterMr(f.mr, Record::request, &dr));
    EXPECT_EQ(f.mr->Dispatch->NdkGetLocalTokenFromMr(f.mr), 0u);
    EXPECT_STATUS(STATUS_INVALID_DEVICE_STATE,
                  f.mr->Dispatch->NdkDeregisterMr(f.mr, Record::request, &dr));
    // Registered again, it gets fresh tokens.
    ASSERT_STATUS(STATUS_SUCCESS, register_mr(a, f.mr, chain.get(), kPage, kRw));
    EXPECT_NE(f.mr->Dispatch->NdkGetLocalTokenFromMr(f.mr), local);
    a.close();
    EXPECT_EQ(dr.count(), 0);
}

TEST(Mr, RegisterRejectsChainsThatDoNotDescribeOneVirtualRange)
{
    RawAdapter a("max_registration_size=0x10000");
    PdMr f(a);
    ASSERT_TRUE(f.mr);
    // A gap between the elements.
    MdlChain gap({{kTestVa, kPage}, {kTestVa + 2 * kPage, kPage}});
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, register_mr(a, f.mr, gap.get(), 2 * kPage, kRw));
    // An overlap.
    MdlChain overlap({{kTestVa, 2 * kPage}, {kTestVa + kPage, kPage}});
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, register_mr(a, f.mr, overlap.get(), 3 * kPage, kRw));
    // Shorter than Length.
    MdlChain short_chain({{kTestVa, kPage}});
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  register_mr(a, f.mr, short_chain.get(), kPage + 1, kRw));
    // A malformed element: StartVa not page aligned.
    MdlChain misaligned({{kTestVa, kPage}});
    misaligned[0].StartVa = reinterpret_cast<PVOID>(kTestVa + 8);
    misaligned[0].ByteOffset = 0;
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, register_mr(a, f.mr, misaligned.get(), kPage, kRw));
    // Zero-based virtual addresses are not allowed (digest 1.4).
    MdlChain zero({{0, kPage}});
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, register_mr(a, f.mr, zero.get(), kPage, kRw));
    // No MDL, zero length, unknown flags, beyond MaxRegistrationSize.
    MdlChain big({{kTestVa, 0x20000}});
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, register_mr(a, f.mr, nullptr, kPage, kRw));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, register_mr(a, f.mr, big.get(), 0, kRw));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, register_mr(a, f.mr, big.get(), kPage, 0x100));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, register_mr(a, f.mr, big.get(), 0x10001, kRw));
    EXPECT_STATUS(STATUS_SUCCESS, register_mr(a, f.mr, big.get(), 0x10000, kRw));
}

// Memory the flags would let a peer write must be writable; read-only memory registered without
// write access stays allowed; memory that cannot be read is refused whatever the flags (MR-WRITABLE).
TEST(Mr, RegisterChecksTheMappingAgainstTheAccessFlags)
{
    RawAdapter a;
    Mapping read_only(2, PROT_READ);
    MdlChain chain({{read_only.address(), 2 * kPage}});
    for (ULONG flags : {ULONG{NDK_MR_FLAG_ALLOW_LOCAL_WRITE}, ULONG{NDK_MR_FLAG_ALLOW_REMOTE_WRITE},
                        ULONG{NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK}}) {
        PdMr f(a);
        ASSERT_TRUE(f.mr);
        EXPECT_STATUS(STATUS_ACCESS_VIOLATION,
                      register_mr(a, f.mr, chain.get(), 2 * kPage, flags))
            << "flags " << flags;
        EXPECT_EQ(f.mr->Dispatch->NdkGetLocalTokenFromMr(f.mr), 0u) << "nothing registered";
    }
    PdMr f(a);
    ASSERT_TRUE(f.mr);
    EXPECT_STATUS(STATUS_SUCCESS, register_mr(a, f.mr, chain.get(), 2 * kPage,
                                              NDK_MR_FLAG_ALLOW_REMOTE_READ));
    // Memory that cannot be read (PROT_NONE, as a guard page is), even without write access.
    Mapping no_access(1, PROT_NONE);
    PdMr g(a);
    ASSERT_TRUE(g.mr);
    MdlChain unmapped({{no_access.address(), kPage}});
    EXPECT_STATUS(STATUS_ACCESS_VIOLATION, register_mr(a, g.mr, unmapped.get(), kPage, 0));
}

TEST(Mr, FastRegisterAndNormalMrsCannotBeUsedAsEachOther)
{
    RawAdapter a;
    PdMr f(a);
    ASSERT_TRUE(f.mr && f.fast);
    MdlChain chain({{kTestVa, kPage}});
    Record &r = a.record();
    // RegisterMr / DeregisterMr only on FastRegister = FALSE (digest 1.4).
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, register_mr(a, f.fast, chain.get(), kPage, kRw));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  f.fast->Dispatch->NdkDeregisterMr(f.fast, Record::request, &r));
    // InitializeFastRegisterMr only on FastRegister = TRUE.
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, f.mr->Dispatch->NdkInitializeFastRegisterMr(
                                                f.mr, 16, FALSE, Record::request, &r));
    // Each works on its own kind.
    EXPECT_STATUS(STATUS_SUCCESS, register_mr(a, f.mr, chain.get(), kPage, kRw));
    EXPECT_STATUS(STATUS_SUCCESS, f.fast->Dispatch->NdkInitializeFastRegisterMr(
                                      f.fast, 16, TRUE, Record::request, &r));
    EXPECT_NE(f.fast->Dispatch->NdkGetRemoteTokenFromMr(f.fast), 0u);
    a.close();
    EXPECT_EQ(r.count(), 0);
}

TEST(Mr, FastRegisterPageCountBeyondTheAdapterIsImplementationLimit)
{
    // 16 pages is the most one registration may cover here.
    RawAdapter a("max_registration_size=0x10000;frmr_page_count=16");
    NDK_PD *pd = a.pd();
    ASSERT_NE(pd, nullptr);
    auto init = [&](NDK_MR *mr, ULONG pages) {
        Record &r = a.record();
        return mr->Dispatch->NdkInitializeFastRegisterMr(mr, pages, FALSE, Record::request, &r);
    };
    NDK_MR *mr = a.mr(pd, true);
    ASSERT_NE(mr, nullptr);
    EXPECT_STATUS(STATUS_IMPLEMENTATION_LIMIT, init(mr, 17));
    EXPECT_STATUS(STATUS_IMPLEMENTATION_LIMIT, init(mr, MAXULONG));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, init(mr, 0));
    EXPECT_STATUS(STATUS_SUCCESS, init(mr, 16));
    EXPECT_STATUS(STATUS_INVALID_DEVICE_STATE, init(mr, 16)) << "initialized twice";
    // FRMRPageCount is the best-concurrency size, not a maximum (digest 2.1).
    RawAdapter b("frmr_page_count=16");
    NDK_PD *pd_b = b.pd();
    ASSERT_NE(pd_b, nullptr);
    NDK_MR *big = b.mr(pd_b, true);
    ASSERT_NE(big, nullptr);
    Record &r = b.record();
    EXPECT_STATUS(STATUS_SUCCESS,
                  big->Dispatch->NdkInitializeFastRegisterMr(big, 64, TRUE, Record::request, &r));
}

TEST(Mr, PendingRegistrationCompletesOnceOnAnotherThread)
{
    RawAdapter a("request_mode=pending");
    PdMr f(a);
    ASSERT_TRUE(f.mr);
    MdlChain chain({{kTestVa, kPage}});
    Record *r = nullptr;
    ASSERT_STATUS(STATUS_PENDING, register_mr(a, f.mr, chain.get(), kPage, kRw, &r));
    ASSERT_TRUE(r->wait());
    EXPECT_STATUS(STATUS_SUCCESS, r->status());
    EXPECT_NE(r->thread(), std::this_thread::get_id());
    EXPECT_NE(f.mr->Dispatch->NdkGetLocalTokenFromMr(f.mr), 0u);
    // Inline checks stay inline even in pending mode: no completion for them.
    Record *bad = nullptr;
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, register_mr(a, f.fast, chain.get(), kPage, kRw, &bad));
    a.close();
    EXPECT_EQ(r->count(), 1);
    EXPECT_EQ(bad->count(), 0);
}

TEST(Mr, InjectedRequestFailuresInlineAndAsync)
{
    RawAdapter a("fail=NdkRegisterMr STATUS_INSUFFICIENT_RESOURCES inline 1");
    PdMr f(a);
    ASSERT_TRUE(f.mr);
    MdlChain chain({{kTestVa, kPage}});
    Record *inline_r = nullptr;
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES,
                  register_mr(a, f.mr, chain.get(), kPage, kRw, &inline_r));
    ASSERT_STATUS(STATUS_SUCCESS,
                  a.set("fail", "NdkRegisterMr STATUS_INSUFFICIENT_RESOURCES async 1"));
    Record *async_r = nullptr;
    ASSERT_STATUS(STATUS_PENDING, register_mr(a, f.mr, chain.get(), kPage, kRw, &async_r));
    ASSERT_TRUE(async_r->wait());
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, async_r->status());
    EXPECT_EQ(f.mr->Dispatch->NdkGetLocalTokenFromMr(f.mr), 0u) << "a failed register registered";
    // Both failures are used up: the MR registers normally now.
    EXPECT_STATUS(STATUS_SUCCESS, register_mr(a, f.mr, chain.get(), kPage, kRw));
    a.close();
    EXPECT_EQ(inline_r->count(), 0);
    EXPECT_EQ(async_r->count(), 1);
}

TEST(Mw, CreateTokenAndCaps)
{
    RawAdapter a("max_mw_count=1;max_mr_count=1");
    NDK_PD *pd = a.pd();
    ASSERT_NE(pd, nullptr);
    NDK_MW *mw = a.mw(pd);
    ASSERT_NE(mw, nullptr);
    EXPECT_EQ(mw->Dispatch->NdkGetRemoteTokenFromMw(mw), 0u) << "no token before a bind";
    Record &r = a.record();
    NDK_MW *second = nullptr;
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES,
                  pd->Dispatch->NdkCreateMw(pd, Record::create, &r, &second));
    ASSERT_NE(a.mr(pd, false), nullptr);
    NDK_MR *mr = nullptr;
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES,
                  pd->Dispatch->NdkCreateMr(pd, FALSE, Record::create, &r, &mr));
    a.close_now(mw);
    EXPECT_NE(a.mw(pd), nullptr);
    a.close();
    EXPECT_EQ(r.count(), 0);
}

} // namespace
