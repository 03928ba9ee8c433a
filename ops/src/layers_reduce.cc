// Reductions over a set of axes (layers.h): one reduction stage over the reduced axes, then an
// element-wise stage where the kind needs one (mean, L2, log-sum, log-sum-exp).
#include <algorithm>

#include "innermost_reduction.h"
#include "loom/ir/simplify.h"
#include "loom/ops/layers.h"
#include "loom/ops/nn.h"
#include "loom/runtime/error.h"

namespace loom::ops {

using namespace loom::ir;

namespace {

// The axes in [0, rank), sorted; every axis when empty.
std::vector<int64_t> normalized_axes(const Shape& x, const std::vector<int64_t>& axes) {
  int64_t r = static_cast<int64_t>(x.size());
  std::vector<int64_t> out;
  if (axes.empty())
    for (int64_t d = 0; d < r; ++d) out.push_back(d);
  for (int64_t a : axes) {
    if (a < -r || a >= r) LOOM_THROW(ShapeError, "reduction axis ", a, " out of range for rank ", r);
    int64_t d = a < 0 ? a + r : a;
    if (std::find(out.begin(), out.end(), d) != out.end()) LOOM_THROW(ShapeError, "reduction axis ", a, " given twice");
    out.push_back(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

enum class Combine { Sum, Max, Min, Prod };

}  // namespace

bool reduce_needs_float(ReduceKind k) {
  return k == ReduceKind::Mean || k == ReduceKind::L2 || k == ReduceKind::LogSum || k == ReduceKind::LogSumExp;
}

const char* to_string(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::Sum:
      return "sum";
    case ReduceKind::Mean:
      return "mean";
    case ReduceKind::Max:
      return "max";
    case ReduceKind::Min:
      return "min";
    case ReduceKind::SumSquare:
      return "sum_square";
    case ReduceKind::L1:
      return "l1";
    case ReduceKind::L2:
      return "l2";
    case ReduceKind::LogSum:
      return "log_sum";
    case ReduceKind::LogSumExp:
      return "log_sum_exp";
    case ReduceKind::Prod:
      return "prod";
  }
  return "?";
}

Shape reduce_shape(const Shape& x, const std::vector<int64_t>& axes, bool keepdims) {
  std::vector<int64_t> red = normalized_axes(x, axes);
  Shape out;
  for (size_t d = 0; d < x.size(); ++d) {
    bool reduced = std::binary_search(red.begin(), red.end(), int64_t(d));
    if (!reduced)
      out.push_back(x[d]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

Tensor reduce(const Tensor& X, ReduceKind kind, const std::vector<int64_t>& axes, bool keepdims,
              const std::string& name) {
  if (reduce_needs_float(kind) && !X.dtype().is_float())
    LOOM_THROW(TypeError, "reduce_", to_string(kind), " '", name, "': input must be floating point, is ",
               X.dtype().str());
  // Extents may be symbolic (layers.h): the rank alone decides the axes.
  const std::vector<Expr>& xs = X.shape();
  std::vector<int64_t> red = normalized_axes(Shape(xs.size(), 1), axes);
  std::vector<Expr> out;
  Expr count = Expr(1);
  for (size_t d = 0; d < xs.size(); ++d) {
    bool reduced = std::binary_search(red.begin(), red.end(), int64_t(d));
    if (!reduced) out.push_back(xs[d]);
    if (reduced && keepdims) out.push_back(Expr(1));
    if (reduced) count = ir::simplify(count * xs[d]);
  }
  if (is_zero(count)) LOOM_THROW(ShapeError, "reduce_", to_string(kind), " '", name, "': reduces an empty axis");
  // One reduction stage: f of every input element that maps to the output index, combined; each
  // stage gets reduce axes of its own (as softmax's stages do).
  int stages = 0;
  auto reduction = [&](const std::string& stage, Combine combine,
                       const std::function<Expr(Expr, const std::vector<Expr>&)>& f) {
    auto combined = [combine](Expr e, std::vector<IterVar> raxes) {
      return combine == Combine::Max    ? max_reduce(e, std::move(raxes))
             : combine == Combine::Min  ? min_reduce(e, std::move(raxes))
             : combine == Combine::Prod ? prod_reduce(e, std::move(raxes))
                                        : sum(e, std::move(raxes));
    };
    ++stages;
    // Over the innermost axis alone: rows, in two steps (detail::reduce_innermost).
    if (red.size() == 1 && red[0] == int64_t(xs.size()) - 1)
      return detail::reduce_innermost(
          out, keepdims, xs.back(), combined,
          [&](const std::vector<Var>& row, Expr k) {
            std::vector<Expr> idx(row.begin(), row.end()), at = idx;
            idx.push_back(k);
            if (keepdims) at.push_back(Expr(0));
            return f(X(idx), at);
          },
          stage, "reduce");
    std::vector<IterVar> raxes;
    for (int64_t d : red)
      raxes.push_back(reduce_axis(xs[size_t(d)], "r" + std::to_string(d) + "_" + std::to_string(stages)));
    return compute(out, ComputeFn([&](const std::vector<Var>& v) {
                     // The input index of output index v: the reduced axes at raxes.
                     std::vector<Expr> idx;
                     size_t o = 0, k = 0;
                     for (size_t d = 0; d < xs.size(); ++d) {
                       if (k < red.size() && red[k] == int64_t(d)) {
                         idx.push_back(raxes[k++]->var);
                         if (keepdims) ++o;
                       } else {
                         idx.push_back(v[o++]);
                       }
                     }
                     return combined(f(X(idx), std::vector<Expr>(v.begin(), v.end())), raxes);
                   }),
                   stage, "reduce");
  };
  auto element = [](Expr e, const std::vector<Expr>&) { return e; };
  auto square = [](Expr e, const std::vector<Expr>&) { return e * e; };
  auto at = [](const std::vector<Var>& v) { return std::vector<Expr>(v.begin(), v.end()); };
  // An element-wise stage after the reduction.
  auto then = [&](const Tensor& t, const std::function<Expr(Expr)>& f) {
    return compute(out, ComputeFn([&](const std::vector<Var>& v) { return f(t(at(v))); }), name, "elemwise");
  };
  switch (kind) {
    case ReduceKind::Sum:
      return reduction(name, Combine::Sum, element);
    case ReduceKind::Max:
      return reduction(name, Combine::Max, element);
    case ReduceKind::Min:
      return reduction(name, Combine::Min, element);
    case ReduceKind::SumSquare:
      return reduction(name, Combine::Sum, square);
    case ReduceKind::Prod:
      return reduction(name, Combine::Prod, element);
    case ReduceKind::L1:
      return reduction(name, Combine::Sum, [](Expr e, const std::vector<Expr>&) { return ir::abs(e); });
    case ReduceKind::Mean:
      return then(reduction(name + "_sum", Combine::Sum, element), [&](Expr e) {
        const int64_t* c = ir::as_const_int(count);
        return e / (c ? make_const(e.type(), double(*c)) : ir::cast(e.type(), count));
      });
    case ReduceKind::L2:
      return then(reduction(name + "_sum_square", Combine::Sum, square), [](Expr e) { return ir::sqrt(e); });
    case ReduceKind::LogSum:
      return then(reduction(name + "_sum", Combine::Sum, element), [](Expr e) { return ir::log(e); });
    case ReduceKind::LogSumExp: {
      // log(sum(exp(x - max))) + max: no overflow for large inputs.
      Tensor m = reduction(name + "_max", Combine::Max, element);
      Tensor s = reduction(name + "_sum_exp", Combine::Sum,
                           [&](Expr e, const std::vector<Expr>& at_out) { return ir::exp(e - m(at_out)); });
      return compute(out, ComputeFn([&](const std::vector<Var>& v) { return ir::log(s(at(v))) + m(at(v)); }), name,
                     "elemwise");
    }
  }
  LOOM_THROW(InternalError, "unknown reduction kind");
}

Tensor arg_reduce(const Tensor& X, bool max, int64_t axis, bool keepdims, bool last, const std::string& name) {
  Shape xs = shape_of(X);
  size_t a = static_cast<size_t>(normalized_axes(xs, {axis})[0]);
  Shape out = reduce_shape(xs, {axis}, keepdims);
  int len = static_cast<int>(xs[a]);
  // The input index of output index v with the reduced axis at k.
  auto input_at = [&](const std::vector<Var>& v, Expr k) {
    std::vector<Expr> idx(v.begin(), v.end());
    if (keepdims)
      idx[a] = k;
    else
      idx.insert(idx.begin() + static_cast<std::ptrdiff_t>(a), k);
    return idx;
  };
  IterVar r0 = reduce_axis(len, "r_extreme");
  Tensor extreme = compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                             Expr x = X(input_at(v, r0->var));
                             return max ? max_reduce(x, {r0}) : min_reduce(x, {r0});
                           }),
                           name + "_extreme", "reduce");
  // The first (or last) position holding the extreme: the least (greatest) index where it is.
  IterVar r1 = reduce_axis(len, "r_index");
  return compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                   Expr k = cast(DataType::Int(64), r1->var);
                   Expr hit = X(input_at(v, r1->var)) == extreme(std::vector<Expr>(v.begin(), v.end()));
                   return last ? max_reduce(select(hit, k, make_const(k.type(), -1)), {r1})
                               : min_reduce(select(hit, k, make_const(k.type(), len)), {r1});
                 }),
                 name, "reduce");
}

}  // namespace loom::ops
