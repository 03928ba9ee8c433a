// Vector indices whose lanes differ by constants: base + offsets[lane]. The LLVM backend loads
// such an index as a few contiguous pieces and a shuffle instead of a gather (an output block of 8
// channels in two 16-lane halves reads its weights as one 8-vector twice and its inputs as two
// broadcasts).
#pragma once
#include <optional>
#include <vector>

#include "loom/ir/expr.h"

namespace loom::ir {

struct LaneOffsets {
  Expr base;                     // scalar: lane 0's index
  std::vector<int64_t> offsets;  // lane i's index minus lane 0's (offsets[0] == 0)
};

// The decomposition of integer vector `index` built from Ramp (constant stride), Broadcast, Add,
// Sub, Mul by a constant, integer casts, and Div / Mod / Min / Max of vectors whose every lane is
// a constant; nullopt for anything else (a lane that depends on data or on a non-constant stride).
std::optional<LaneOffsets> constant_lane_offsets(const Expr& index);

// A contiguous run of lane offsets: `length` consecutive elements from `start`.
struct OffsetRun {
  int64_t start, length;
};
// The distinct offsets, sorted, as maximal runs of consecutive values.
std::vector<OffsetRun> offset_runs(const std::vector<int64_t>& offsets);

}  // namespace loom::ir
