// A soft receive's SGL (core/src/providers/soft/soft_objects.hpp, ReceiveRequest): one entry
// kept in the request's own cache line, none or several in its vector; what was posted is what
// the target resolves, whatever the slot held before it was reused.
#include "providers/soft/soft_objects.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using ndk::soft::ReceiveRequest;

NDK_SGE sge(uintptr_t address, ULONG length, UINT32 token)
{
    NDK_SGE s{};
    s.VirtualAddress = reinterpret_cast<PVOID>(address);
    s.Length = length;
    s.MemoryRegionToken = token;
    return s;
}

std::vector<NDK_SGE> posted(const ReceiveRequest &rr)
{
    return {rr.sgl().begin(), rr.sgl().end()};
}

bool same(const std::vector<NDK_SGE> &a, const std::vector<NDK_SGE> &b)
{
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].VirtualAddress != b[i].VirtualAddress || a[i].Length != b[i].Length ||
            a[i].MemoryRegionToken != b[i].MemoryRegionToken)
            return false;
    return true;
}

TEST(ReceiveRequest, HandsBackTheSglItWasPostedWithAcrossReuse)
{
    const std::vector<NDK_SGE> three{sge(0x1000, 8, 1), sge(0x2000, 16, 2), sge(0x3000, 32, 3)};
    const std::vector<NDK_SGE> one{sge(0x4000, 64, 4)};
    ReceiveRequest rr;
    rr.assign_sgl(three.data(), 3);
    EXPECT_TRUE(same(posted(rr), three));
    rr.clear(); // the slot is reused by the next receive
    rr.assign_sgl(one.data(), 1);
    EXPECT_TRUE(same(posted(rr), one));
    rr.clear();
    rr.assign_sgl(nullptr, 0); // a receive with no SGE
    EXPECT_TRUE(rr.sgl().empty());
    rr.clear();
    rr.assign_sgl(three.data(), 2);
    EXPECT_TRUE(same(posted(rr), std::vector<NDK_SGE>(three.begin(), three.begin() + 2)));
}

} // namespace
