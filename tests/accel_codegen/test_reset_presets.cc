// ResetPresets: which GEMM resets an in-place ADD of a rounding constant may replace. Every
// condition of the rule has a case where it alone decides: the ADD must cover each reset whole,
// nothing outside the resets' untouched entries, no entry twice; a touch (ALU instruction,
// accumulator LOAD) or a later reset of an entry takes it away from its reset.
#include <gtest/gtest.h>

#include "reset_presets.h"

namespace loom::codegen::accel_backend {
namespace {

using Resets = std::vector<size_t>;

TEST(ResetPresets, AnAddOverOneWholeResetTakesItsPlaceOnce) {
  ResetPresets p;
  p.note_reset(3, {10, 11, 12, 13});
  EXPECT_EQ(p.take({13, 12, 11, 10}), Resets{3});  // any order
  // Taken: those entries hold the constant now, a second ADD is a real one.
  EXPECT_EQ(p.take({10, 11, 12, 13}), Resets{});
}

TEST(ResetPresets, AnAddOverSeveralWholeResetsTakesThemAll) {
  ResetPresets p;
  p.note_reset(7, {4, 5});
  p.note_reset(2, {0, 1});
  EXPECT_EQ(p.take({0, 1, 4, 5}), (Resets{2, 7}));
}

TEST(ResetPresets, AnAddOverPartOfAResetKeepsTheReset) {
  ResetPresets p;
  p.note_reset(1, {0, 1, 2, 3});
  EXPECT_EQ(p.take({0, 1}), Resets{});         // entries 2 and 3 would keep the constant unadded
  EXPECT_EQ(p.take({0, 1, 2, 3}), Resets{1});  // nothing was forgotten by the refusal
}

TEST(ResetPresets, AnAddBeyondTheResetsKeepsThem) {
  ResetPresets p;
  p.note_reset(1, {0, 1});
  EXPECT_EQ(p.take({0, 1, 2}), Resets{});  // entry 2 holds no reset's zero
  EXPECT_EQ(p.take({}), Resets{});
}

TEST(ResetPresets, AnEntryAddedTwiceKeepsTheReset) {
  ResetPresets p;
  p.note_reset(1, {0, 1});
  EXPECT_EQ(p.take({0, 1, 1}), Resets{});  // the ADD adds the constant to entry 1 twice
}

TEST(ResetPresets, ATouchedEntryIsNoLongerTheResetsZero) {
  ResetPresets p;
  p.note_reset(1, {0, 1, 2, 3});
  p.touch({2});  // e.g. an accumulator LOAD, or an ALU shift, of entry 2
  EXPECT_EQ(p.take({0, 1, 2, 3}), Resets{});
  EXPECT_EQ(p.take({0, 1, 3}), Resets{});  // the reset is no longer whole either way
}

TEST(ResetPresets, AnEntryZeroedAgainBelongsToTheLaterReset) {
  ResetPresets p;
  p.note_reset(1, {0, 1});
  p.note_reset(5, {1, 2});
  // Reset 1 no longer owns entry 1: it cannot be replaced, with or without it.
  EXPECT_EQ(p.take({0, 1, 2}), Resets{});
  EXPECT_EQ(p.take({0}), Resets{});
  // Reset 5 still can, alone.
  EXPECT_EQ(p.take({1, 2}), Resets{5});
}

}  // namespace
}  // namespace loom::codegen::accel_backend
