// The ledger behind the soft provider's knob `quiescent` (core/src/providers/soft/
// soft_quiet.hpp): an open end whose peer was not seen in this process (the peer elsewhere
// may send at any time) makes the answer "not quiescent", and so does a peer here that has not
// taken in everything the open end sent; ends seen on both sides, or an end no open end talks
// to, do not; one end seen cannot stand for two ends that need it.
#include "providers/soft/soft_quiet.hpp"

#include <gtest/gtest.h>

namespace {

using ndk::soft::QuietLedger;

TEST(QuietLedger, NoConnectionMeetsAtOnce) { EXPECT_TRUE(QuietLedger{}.ends_meet()); }

TEST(QuietLedger, AnOpenEndWhosePeerIsElsewhereDoesNotMeet)
{
    QuietLedger ledger;
    ledger.end_here("tcp 127.0.0.1:5000 127.0.0.2:6000");
    ledger.needs("tcp 127.0.0.2:6000 127.0.0.1:5000");
    EXPECT_FALSE(ledger.ends_meet());
}

TEST(QuietLedger, BothEndsHereMeetInWhicheverOrderTheyAreSeen)
{
    QuietLedger ledger;
    ledger.needs("shm 1:2 passive");
    ledger.end_here("shm 1:2 active");
    EXPECT_FALSE(ledger.ends_meet());
    ledger.end_here("shm 1:2 passive");
    ledger.needs("shm 1:2 active");
    EXPECT_TRUE(ledger.ends_meet());
}

TEST(QuietLedger, AnEndedEndNeedsNothingAndCountsAsHere)
{
    QuietLedger ledger;
    ledger.end_here("a"); // ended: talks to nobody any more
    ledger.end_here("b");
    ledger.needs("a"); // b is still open
    EXPECT_TRUE(ledger.ends_meet());
}

TEST(QuietLedger, OneEndHereCannotStandForTwoThatNeedIt)
{
    QuietLedger ledger;
    ledger.end_here("peer");
    ledger.needs("peer");
    ledger.needs("peer");
    EXPECT_FALSE(ledger.ends_meet());
}

TEST(QuietLedger, APeerThatHasNotTakenInWhatWasSentDoesNotMeet)
{
    QuietLedger ledger;
    ledger.end_here("tcp a b", {100});
    ledger.needs("tcp b a", {40});
    ledger.end_here("tcp b a", {36}); // 4 of the 40 bytes a wrote are still on their way
    ledger.needs("tcp a b", {100});
    EXPECT_FALSE(ledger.ends_meet());
}

TEST(QuietLedger, APeerThatHasNotTakenInTheEndDoesNotMeet)
{
    QuietLedger ledger;
    ledger.end_here("tcp a b", {40, true});
    ledger.end_here("tcp b a", {40, false}); // every byte read, the FIN not yet
    ledger.needs("tcp b a", {40, true});
    EXPECT_FALSE(ledger.ends_meet());
}

TEST(QuietLedger, TwoEndsOfOneNameDoNotMeet)
{
    QuietLedger ledger;
    ledger.end_here("peer");
    ledger.end_here("peer"); // which of the two is the one that talks to us?
    ledger.needs("peer");
    EXPECT_FALSE(ledger.ends_meet());
}

} // namespace
