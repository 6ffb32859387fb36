// NdkBuildLAM / NdkReleaseLAM (digest 1.1, 2.4; core/src/providers/soft/soft_lam.cpp):
// sizing, MDL validation, page count and first-byte offset, page-aligned distinct logical
// addresses, pending and failing builds.
#include "support.hpp"

#include <gtest/gtest.h>

#include <set>

#include <sys/mman.h>

namespace {

using ndktest::kTestVa;
using ndktest::Mapping;
using ndktest::MdlChain;
using ndktest::RawAdapter;
using ndktest::Record;

constexpr ULONG kPage = NDK_PAGE_SIZE;

// Room for a mapping of up to 62 pages, suitably aligned.
struct LamBuffer {
    LamBuffer() { std::fill(std::begin(storage), std::end(storage), 0xA5A5A5A5A5A5A5A5ull); }
    NDK_LOGICAL_ADDRESS_MAPPING *get()
    {
        return reinterpret_cast<NDK_LOGICAL_ADDRESS_MAPPING *>(storage);
    }
    ULONG size() const { return sizeof storage; }
    uint64_t storage[64];
};

constexpr ULONG lam_size(ULONG pages)
{
    return offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) +
           pages * sizeof(NDK_LOGICAL_ADDRESS);
}

NTSTATUS build(RawAdapter &a, MDL *mdl, SIZE_T length, NDK_LOGICAL_ADDRESS_MAPPING *lam,
               ULONG *size, ULONG *fbo, Record **record = nullptr)
{
    Record &r = a.record();
    if (record)
        *record = &r;
    return a.d().NdkBuildLAM(a.get(), mdl, length, Record::request, &r, lam, size, fbo);
}

TEST(Lam, BufferTooSmallReportsTheRequiredSize)
{
    RawAdapter a;
    MdlChain chain({{kTestVa, 3 * kPage}});
    ULONG size = 0, fbo = 77;
    EXPECT_STATUS(STATUS_BUFFER_TOO_SMALL, build(a, chain.get(), 3 * kPage, nullptr, &size, &fbo));
    EXPECT_EQ(size, lam_size(3));
    LamBuffer buffer;
    size = lam_size(3) - 1;
    EXPECT_STATUS(STATUS_BUFFER_TOO_SMALL,
                  build(a, chain.get(), 3 * kPage, buffer.get(), &size, &fbo));
    EXPECT_EQ(size, lam_size(3));
    EXPECT_EQ(buffer.storage[1], 0xA5A5A5A5A5A5A5A5ull) << "a too-small buffer was written";
    size = lam_size(3);
    ASSERT_STATUS(STATUS_SUCCESS, build(a, chain.get(), 3 * kPage, buffer.get(), &size, &fbo));
    EXPECT_EQ(size, lam_size(3));
    EXPECT_EQ(buffer.get()->AdapterPageCount, 3u);
    EXPECT_EQ(fbo, 0u);
    // The two out-parameters are required.
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  build(a, chain.get(), kPage, buffer.get(), nullptr, &fbo));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  build(a, chain.get(), kPage, buffer.get(), &size, nullptr));
    a.d().NdkReleaseLAM(a.get(), buffer.get());
}

TEST(Lam, ANonContiguousChainIsInvalidParameter)
{
    RawAdapter a;
    LamBuffer buffer;
    ULONG size = buffer.size(), fbo = 0;
    MdlChain gap({{kTestVa, kPage}, {kTestVa + 2 * kPage, kPage}});
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  build(a, gap.get(), 2 * kPage, buffer.get(), &size, &fbo));
    MdlChain zero_based({{0, kPage}});
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  build(a, zero_based.get(), kPage, buffer.get(), &size, &fbo));
    MdlChain fine({{kTestVa, kPage}});
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, build(a, fine.get(), 0, buffer.get(), &size, &fbo));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER, build(a, nullptr, kPage, buffer.get(), &size, &fbo));
    EXPECT_STATUS(STATUS_INVALID_PARAMETER,
                  build(a, fine.get(), kPage + 1, buffer.get(), &size, &fbo))
        << "chain too short";
}

// The privileged token allows local writes to what BuildLAM maps (digest 1.3): read-only memory
// is STATUS_ACCESS_VIOLATION, and no mapping is made (MR-WRITABLE).
TEST(Lam, ReadOnlyMemoryIsAccessViolation)
{
    RawAdapter a;
    Mapping read_only(2, PROT_READ);
    MdlChain chain({{read_only.address(), 2 * kPage}});
    LamBuffer buffer;
    ULONG size = buffer.size(), fbo = 0;
    EXPECT_STATUS(STATUS_ACCESS_VIOLATION,
                  build(a, chain.get(), 2 * kPage, buffer.get(), &size, &fbo));
    EXPECT_EQ(buffer.storage[1], 0xA5A5A5A5A5A5A5A5ull) << "a refused build wrote the mapping";
}

TEST(Lam, UnalignedBufferPageCountAndFirstByteOffset)
{
    RawAdapter a;
    // 2 pages starting 100 bytes into a page, described by two contiguous elements: 3 pages.
    MdlChain chain({{kTestVa + 100, kPage - 100}, {kTestVa + kPage, kPage + 100}});
    LamBuffer buffer;
    ULONG size = buffer.size(), fbo = 0;
    ASSERT_STATUS(STATUS_SUCCESS, build(a, chain.get(), 2 * kPage, buffer.get(), &size, &fbo));
    EXPECT_EQ(fbo, 100u);
    EXPECT_EQ(size, lam_size(3));
    const NDK_LOGICAL_ADDRESS_MAPPING *lam = buffer.get();
    ASSERT_EQ(lam->AdapterPageCount, 3u);
    std::set<LONGLONG> pages;
    for (ULONG i = 0; i < lam->AdapterPageCount; ++i) {
        LONGLONG page = lam->AdapterPageArray[i].QuadPart;
        EXPECT_EQ(page % kPage, 0) << "page " << i << " is not page aligned";
        EXPECT_NE(page, 0) << "page " << i;
        pages.insert(page);
    }
    EXPECT_EQ(pages.size(), 3u) << "logical pages must be distinct";
    // A range ending exactly on a page boundary needs no extra page.
    MdlChain exact({{kTestVa + 2048, 2048}});
    LamBuffer second;
    size = second.size();
    ASSERT_STATUS(STATUS_SUCCESS, build(a, exact.get(), 2048, second.get(), &size, &fbo));
    EXPECT_EQ(second.get()->AdapterPageCount, 1u);
    EXPECT_EQ(fbo, 2048u);
    a.d().NdkReleaseLAM(a.get(), buffer.get());
    a.d().NdkReleaseLAM(a.get(), second.get());
}

TEST(Lam, MappingsGetDistinctPagesAndCanBeReleased)
{
    RawAdapter a;
    MdlChain chain({{kTestVa, 4 * kPage}});
    LamBuffer one, two;
    ULONG size = one.size(), fbo = 0;
    ASSERT_STATUS(STATUS_SUCCESS, build(a, chain.get(), 4 * kPage, one.get(), &size, &fbo));
    size = two.size();
    // The same memory mapped twice still gets its own logical pages.
    ASSERT_STATUS(STATUS_SUCCESS, build(a, chain.get(), 4 * kPage, two.get(), &size, &fbo));
    std::set<LONGLONG> pages;
    for (auto *lam : {one.get(), two.get()})
        for (ULONG i = 0; i < lam->AdapterPageCount; ++i)
            pages.insert(lam->AdapterPageArray[i].QuadPart);
    EXPECT_EQ(pages.size(), 8u);
    a.d().NdkReleaseLAM(a.get(), one.get());
    a.d().NdkReleaseLAM(a.get(), two.get());
    a.d().NdkReleaseLAM(a.get(), nullptr); // tolerated
    size = one.size();
    EXPECT_STATUS(STATUS_SUCCESS, build(a, chain.get(), kPage, one.get(), &size, &fbo));
    a.d().NdkReleaseLAM(a.get(), one.get());
}

TEST(Lam, PendingBuildFillsTheMappingBeforeItsCompletion)
{
    RawAdapter a("request_mode=pending");
    MdlChain chain({{kTestVa + 8, 2 * kPage}});
    LamBuffer buffer;
    ULONG size = buffer.size(), fbo = 0;
    Record *r = nullptr;
    ASSERT_STATUS(STATUS_PENDING, build(a, chain.get(), 2 * kPage, buffer.get(), &size, &fbo, &r));
    ASSERT_TRUE(r->wait());
    EXPECT_STATUS(STATUS_SUCCESS, r->status());
    EXPECT_NE(r->thread(), std::this_thread::get_id());
    EXPECT_EQ(buffer.get()->AdapterPageCount, 3u);
    EXPECT_EQ(fbo, 8u);
    EXPECT_EQ(size, lam_size(3));
    // Sizing is decided inline even in pending mode.
    ULONG small = 0;
    Record *sizing = nullptr;
    EXPECT_STATUS(STATUS_BUFFER_TOO_SMALL,
                  build(a, chain.get(), 2 * kPage, nullptr, &small, &fbo, &sizing));
    a.d().NdkReleaseLAM(a.get(), buffer.get());
    a.close();
    EXPECT_EQ(r->count(), 1);
    EXPECT_EQ(sizing->count(), 0);
}

TEST(Lam, InjectedFailuresInlineAndAsync)
{
    RawAdapter a("fail=NdkBuildLAM STATUS_INSUFFICIENT_RESOURCES inline 1");
    MdlChain chain({{kTestVa, kPage}});
    LamBuffer buffer;
    ULONG size = buffer.size(), fbo = 0;
    Record *inline_r = nullptr;
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES,
                  build(a, chain.get(), kPage, buffer.get(), &size, &fbo, &inline_r));
    ASSERT_STATUS(STATUS_SUCCESS,
                  a.set("fail", "NdkBuildLAM STATUS_INSUFFICIENT_RESOURCES async 1"));
    Record *async_r = nullptr;
    ASSERT_STATUS(STATUS_PENDING,
                  build(a, chain.get(), kPage, buffer.get(), &size, &fbo, &async_r));
    ASSERT_TRUE(async_r->wait());
    EXPECT_STATUS(STATUS_INSUFFICIENT_RESOURCES, async_r->status());
    EXPECT_STATUS(STATUS_SUCCESS, build(a, chain.get(), kPage, buffer.get(), &size, &fbo));
    a.d().NdkReleaseLAM(a.get(), buffer.get());
    a.close();
    EXPECT_EQ(inline_r->count(), 0);
    EXPECT_EQ(async_r->count(), 1);
}

} // namespace
