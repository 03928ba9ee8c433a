// Internal to loom_ops: a reduction along the innermost axis (a row), as softmax and reduce build it.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "loom/ir/tensor.h"
#include "loom/ops/layers.h"

namespace loom::ops::detail {

// How many partial results per row a reduction over an innermost axis of m elements keeps: 16 or
// 8 (each over every 16th or 8th element: contiguous, so they vectorize), or 0 for one step. A
// single chain per row was a serial dependency, several times slower.
int innermost_partials(int64_t m);

// combine(e, axes): the reduction of e over axes (ir::sum, ir::max_reduce, ...).
using CombineFn = std::function<ir::Expr(ir::Expr, std::vector<ir::IterVar>)>;
// value(row, k): the element at position k of the row that output index `row` reads (the output's
// indices without its kept unit axis).
using RowValueFn = std::function<ir::Expr(const std::vector<ir::Var>& row, ir::Expr k)>;

// A reduction of shape `out` over rows of m elements; `unit_kept`: out ends in the reduced axis, of
// extent 1. With innermost_partials(m) partials, in two stages (an rfactor written out): the
// partials ("<name>_partial"), then the row's result from them. Both stages are tagged `tag`.
// Extents may be symbolic. A symbolic m takes 16 partials over ceil(m / 16) steps, the elements
// past the row's end counted as `identity` (the combination's neutral value: 0 for a sum, the
// lowest value for a maximum); without an identity, one step.
ir::Tensor reduce_innermost(const std::vector<ir::Expr>& out, bool unit_kept, const ir::Expr& m,
                            const CombineFn& combine, const RowValueFn& value, const std::string& name,
                            const std::string& tag, const ir::Expr& identity = ir::Expr());

}  // namespace loom::ops::detail
