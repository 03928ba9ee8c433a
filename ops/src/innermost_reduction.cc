#include "innermost_reduction.h"

namespace loom::ops::detail {

using namespace loom::ir;

int innermost_partials(int64_t m) { return m >= 16 && m % 8 == 0 ? (m % 16 == 0 ? 16 : 8) : 0; }

Tensor reduce_innermost(const Shape& out, bool unit_kept, int64_t m, const CombineFn& combine, const RowValueFn& value,
                        const std::string& name, const std::string& tag) {
  auto row_of = [&](const std::vector<Var>& v) { return std::vector<Var>(v.begin(), v.end() - (unit_kept ? 1 : 0)); };
  const int L = innermost_partials(m);
  if (L == 0) {
    IterVar k = reduce_axis(int(m), name + "_k");
    return compute(shape_exprs(out),
                   ComputeFn([&](const std::vector<Var>& v) { return combine(value(row_of(v), k->var), {k}); }), name,
                   tag);
  }
  Shape partial_shape = out;
  if (unit_kept)
    partial_shape.back() = L;
  else
    partial_shape.push_back(L);
  IterVar ko = reduce_axis(int(m / L), name + "_ko");
  Tensor partial = compute(shape_exprs(partial_shape), ComputeFn([&](const std::vector<Var>& v) {
                             std::vector<Var> row(v.begin(), v.end() - 1);
                             return combine(value(row, ko->var * L + v.back()), {ko});
                           }),
                           name + "_partial", tag);
  IterVar l = reduce_axis(L, name + "_l");
  return compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                   std::vector<Var> row = row_of(v);
                   std::vector<Expr> at(row.begin(), row.end());
                   at.push_back(l->var);
                   return combine(partial(at), {l});
                 }),
                 name, tag);
}

}  // namespace loom::ops::detail
