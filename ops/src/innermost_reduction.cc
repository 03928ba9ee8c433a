#include "innermost_reduction.h"

#include "loom/ir/simplify.h"

namespace loom::ops::detail {

using namespace loom::ir;

int innermost_partials(int64_t m) { return m >= 16 && m % 8 == 0 ? (m % 16 == 0 ? 16 : 8) : 0; }

Tensor reduce_innermost(const std::vector<Expr>& out, bool unit_kept, const Expr& m_extent, const CombineFn& combine,
                        const RowValueFn& value, const std::string& name, const std::string& tag,
                        const Expr& identity) {
  auto row_of = [&](const std::vector<Var>& v) { return std::vector<Var>(v.begin(), v.end() - (unit_kept ? 1 : 0)); };
  const int64_t* m_const = as_const_int(m_extent);
  // A row that is no whole number of vectors (a ViT's 197 tokens, a Swin window's 49) takes the
  // padded form below when the combination has a neutral value: 16 partials, not one serial chain.
  int L = m_const ? innermost_partials(*m_const) : 0;
  if (L == 0 && identity.defined() && (!m_const || *m_const >= 32)) L = 16;
  if (L == 0) {
    IterVar k = reduce_axis(m_extent, name + "_k");
    return compute(out, ComputeFn([&](const std::vector<Var>& v) { return combine(value(row_of(v), k->var), {k}); }),
                   name, tag);
  }
  const bool padded = !m_const || *m_const % L != 0;
  std::vector<Expr> partial_shape = out;
  if (unit_kept)
    partial_shape.back() = Expr(L);
  else
    partial_shape.push_back(Expr(L));
  // A symbolic or padded row: ceil(m / L) steps, the last one's elements past m neutral.
  IterVar ko =
      reduce_axis(padded ? simplify((m_extent + (L - 1)) / L) : Expr(static_cast<int>(*m_const / L)), name + "_ko");
  Tensor partial = compute(partial_shape, ComputeFn([&](const std::vector<Var>& v) {
                             std::vector<Var> row(v.begin(), v.end() - 1);
                             Expr k = ko->var * L + v.back();
                             Expr x = padded ? if_then_else(k < m_extent, value(row, k), identity) : value(row, k);
                             return combine(x, {ko});
                           }),
                           name + "_partial", tag);
  IterVar l = reduce_axis(L, name + "_l");
  return compute(out, ComputeFn([&](const std::vector<Var>& v) {
                   std::vector<Var> row = row_of(v);
                   std::vector<Expr> at(row.begin(), row.end());
                   at.push_back(l->var);
                   return combine(partial(at), {l});
                 }),
                 name, tag);
}

}  // namespace loom::ops::detail
