// ir::constant_lane_offsets: vector indices split into a scalar base and constant per-lane
// offsets, as the LLVM backend loads them (a few contiguous pieces and a shuffle, not a gather).
#include <gtest/gtest.h>

#include "loom/ir/lane_offsets.h"
#include "loom/ir/printer.h"

namespace loom::ir {
namespace {

std::vector<int64_t> iota(int n, int64_t step = 1) {
  std::vector<int64_t> v;
  for (int i = 0; i < n; ++i) v.push_back(step * i);
  return v;
}

TEST(LaneOffsets, RampsAndBroadcasts) {
  Var x("x", DataType::Int(32));
  auto d = constant_lane_offsets(ramp(x * 4, 3, 8));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->offsets, iota(8, 3));
  EXPECT_EQ(to_string(d->base), to_string(x * 4));
  d = constant_lane_offsets(broadcast(x, 4));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->offsets, std::vector<int64_t>(4, 0));
  EXPECT_FALSE(constant_lane_offsets(ramp(0, x, 8)));  // a stride that is not a constant
  // Widening casts keep the offsets; narrowing or sign-changing ones wrap lanes around (250..265
  // as uint8 is 250..255, 0..9), which offsets cannot express.
  d = constant_lane_offsets(cast(DataType::Int(64, 8), ramp(x, 2, 8)));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->offsets, iota(8, 2));
  EXPECT_FALSE(constant_lane_offsets(cast(DataType::UInt(8, 16), ramp(250, 1, 16))));
  EXPECT_FALSE(constant_lane_offsets(cast(DataType::Int(8, 16), ramp(x, 1, 16))));
  EXPECT_FALSE(constant_lane_offsets(cast(DataType::UInt(32, 8), ramp(x, 1, 8))));
}

// Two columns of an 8-channel block in one 16-lane vector: lane f is column f / 8, channel f % 8.
TEST(LaneOffsets, HalfVectorBlocks) {
  Var x("x", DataType::Int(32));
  Expr f = ramp(0, 1, 16);
  Expr column = broadcast(x, 16) + f / broadcast(8, 16);
  Expr channel = f % broadcast(8, 16);
  // An input element per column (16 channels a pixel): two values, each broadcast to 8 lanes.
  auto in = constant_lane_offsets(column * broadcast(16, 16) + broadcast(5, 16));
  ASSERT_TRUE(in);
  EXPECT_EQ(to_string(in->base), to_string(x * 16 + 5));
  std::vector<int64_t> want(8, 0);
  want.insert(want.end(), 8, 16);
  EXPECT_EQ(in->offsets, want);
  std::vector<OffsetRun> runs = offset_runs(in->offsets);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].start, 0);
  EXPECT_EQ(runs[0].length, 1);
  EXPECT_EQ(runs[1].start, 16);
  // A weight per channel: the same 8 elements in both halves, one run.
  auto w = constant_lane_offsets(broadcast(x * 64, 16) + channel);
  ASSERT_TRUE(w);
  runs = offset_runs(w->offsets);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].length, 8);
  // The output (NCHW8c): column * 8 + channel covers 16 consecutive elements.
  auto out = constant_lane_offsets(column * broadcast(8, 16) + channel);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->offsets, iota(16));
  // Division of lanes that are not all constant is not of the form.
  EXPECT_FALSE(constant_lane_offsets(ramp(x, 1, 16) / broadcast(8, 16)));
  EXPECT_FALSE(constant_lane_offsets(ramp(0, 1, 16) / broadcast(x, 16)));
}

TEST(LaneOffsets, FloorSemanticsAndRuns) {
  auto d = constant_lane_offsets(ramp(-4, 1, 8) / broadcast(3, 8));  // -2 -1 -1 -1 0 0 0 1
  ASSERT_TRUE(d);
  EXPECT_EQ(to_string(d->base), "-2");
  EXPECT_EQ(d->offsets, (std::vector<int64_t>{0, 1, 1, 1, 2, 2, 2, 3}));
  d = constant_lane_offsets(ramp(-4, 1, 4) % broadcast(3, 4));  // 2 0 1 2
  ASSERT_TRUE(d);
  EXPECT_EQ(d->offsets, (std::vector<int64_t>{0, -2, -1, 0}));
  std::vector<OffsetRun> runs = offset_runs({5, 0, 1, 7, 2, 6});
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].start, 0);
  EXPECT_EQ(runs[0].length, 3);
  EXPECT_EQ(runs[1].start, 5);
  EXPECT_EQ(runs[1].length, 3);
}

}  // namespace
}  // namespace loom::ir
