// The soft adapter's token table (core/src/providers/soft/soft_token_table.hpp): a token names
// its owner while enabled, as the kind it was enabled as, and nothing once revoked, once its
// owner is gone, or when forged from a real token's neighbours.
#include "providers/soft/soft_token_table.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace {

using Table = ndk::soft::TokenTable<int>;

TEST(TokenTable, AnEnabledTokenNamesItsOwnerAsItsKindOnly)
{
    Table table;
    int mr = 0;
    uint32_t slot = table.open(mr).value();
    UINT32 local = table.issue(slot), remote = table.issue(slot);
    EXPECT_EQ(table.owner(local, false), nullptr); // issued, not yet enabled
    table.enable(local, false);
    table.enable(remote, true);
    EXPECT_EQ(table.owner(local, false), &mr);
    EXPECT_EQ(table.owner(remote, true), &mr);
    EXPECT_EQ(table.owner(local, true), nullptr);
    EXPECT_EQ(table.owner(remote, false), nullptr);
    EXPECT_NE(local, remote);
}

TEST(TokenTable, TokensAreNeverZeroNorThePrivilegedToken)
{
    Table table;
    std::vector<int> owners(64);
    for (int &owner : owners) {
        uint32_t slot = table.open(owner).value();
        for (int i = 0; i < 100; ++i) {
            UINT32 token = table.issue(slot);
            EXPECT_NE(token, 0u);
            EXPECT_NE(token, 1u);
        }
    }
    EXPECT_EQ(table.owner(0, false), nullptr);
    EXPECT_EQ(table.owner(0, true), nullptr);
}

TEST(TokenTable, ARevokedTokenNamesNothingAndANewOneWorks)
{
    Table table;
    int mr = 0;
    uint32_t slot = table.open(mr).value();
    UINT32 first = table.issue(slot);
    table.enable(first, true);
    table.revoke(first);
    EXPECT_EQ(table.owner(first, true), nullptr);
    UINT32 second = table.issue(slot); // a FastRegister after an Invalidate
    table.enable(second, true);
    EXPECT_NE(second, first);
    EXPECT_EQ(table.owner(second, true), &mr);
    EXPECT_EQ(table.owner(first, true), nullptr);
}

TEST(TokenTable, AClosedOwnersTokensStayDeadWhenItsSlotServesAnother)
{
    Table table;
    int old_mr = 0, new_mr = 0;
    uint32_t slot = table.open(old_mr).value();
    UINT32 stale = table.issue(slot);
    table.enable(stale, true);
    table.close(slot);
    EXPECT_EQ(table.owner(stale, true), nullptr);
    uint32_t reused = table.open(new_mr).value();
    EXPECT_EQ(reused, slot);
    UINT32 fresh = table.issue(reused);
    table.enable(fresh, true);
    EXPECT_EQ(table.owner(fresh, true), &new_mr);
    EXPECT_EQ(table.owner(stale, true), nullptr);
}

TEST(TokenTable, TokensForgedFromRealOnesNameNothing)
{
    Table table;
    std::vector<int> owners(32);
    std::set<UINT32> real;
    for (int &owner : owners) {
        uint32_t slot = table.open(owner).value();
        for (bool remote : {false, true}) {
            UINT32 token = table.issue(slot);
            table.enable(token, remote);
            real.insert(token);
        }
    }
    for (UINT32 token : real)
        for (UINT32 forged : {token + 1, token - 1, token ^ 0x100u, token + 0x100000u})
            if (!real.contains(forged)) {
                EXPECT_EQ(table.owner(forged, false), nullptr) << std::hex << forged;
                EXPECT_EQ(table.owner(forged, true), nullptr) << std::hex << forged;
            }
}

} // namespace
