// Internal to loom_ops: index expressions that the data-movement builders share (layers_data.cc,
// layers_scatter.cc).
#pragma once
#include <vector>

#include "loom/ir/expr.h"

namespace loom::ops {

// The loop variables of a compute as index expressions.
inline std::vector<ir::Expr> at(const std::vector<ir::Var>& v) { return std::vector<ir::Expr>(v.begin(), v.end()); }

// An index read from an index tensor, as gathers use it: negative values count from the end,
// then clamped into [0, n) so that an out-of-range index cannot read outside the tensor.
inline ir::Expr clamped_index(ir::Expr i, const ir::Expr& n) {  // n may be a symbolic extent
  i = ir::cast(DataType::Int(32), i);
  i = ir::select(i < 0, i + n, i);
  return ir::min(ir::max(i, ir::Expr(0)), n - 1);
}
inline ir::Expr clamped_index(ir::Expr i, int64_t n) { return clamped_index(std::move(i), ir::Expr(int(n))); }

}  // namespace loom::ops
