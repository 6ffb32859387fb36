// Placeholder replaced by the GoogleTest suites.
#include "ndk/objects.hpp"

#include <gtest/gtest.h>

TEST(Smoke, OpensSoftAdapter)
{
    auto adapter = ndk::Adapter::open("soft", "");
    EXPECT_EQ(adapter->query_info().Version.Major, 2);
}
