// Arithmetic simplifier: constant folding, canonical linear forms for integer index arithmetic
// (so x*4 + 3 - x*4 becomes 3), floor div/mod of linear forms by constants when the remainder's
// range is known, and removal of comparisons and min/max decided by known variable ranges.
#pragma once
#include <map>
#include <optional>

#include "loom/ir/expr.h"
#include "loom/ir/stmt.h"

namespace loom::ir {

// Constant lower/upper bounds of integer variables (inclusive).
struct IntBounds {
  std::optional<int64_t> min, max;
  bool is_point() const { return min && max && *min == *max; }
};
using VarBounds = std::map<const VarNode*, IntBounds>;

// Integer division and remainder with the IR's Div/Mod semantics: the quotient rounds towards
// negative infinity, the remainder takes the divisor's sign (b != 0).
int64_t floor_div(int64_t a, int64_t b);
int64_t floor_mod(int64_t a, int64_t b);

Expr simplify(const Expr& e, const VarBounds& bounds = {});
// Also simplifies loop bodies under the ranges of their loops, folds constant ifs and drops
// empty loops.
Stmt simplify(const Stmt& s, const VarBounds& bounds = {});
// Constant bounds of an integer expression under `bounds` (unknown sides are nullopt).
IntBounds const_bounds(const Expr& e, const VarBounds& bounds = {});
// True if the simplifier can prove `cond` under `bounds`.
bool can_prove(const Expr& cond, const VarBounds& bounds = {});

}  // namespace loom::ir
