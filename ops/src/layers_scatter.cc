// Scatters, N-d gathers and Einstein sums (layers.h): ONNX ScatterElements and ScatterND as
// reductions over the update positions (each output element combines the updates whose index
// is its own), GatherND as direct indexing, and Einsum's equation parser and its one
// sum-of-products stage.
#include <algorithm>

#include "index_util.h"
#include "loom/ops/layers.h"
#include "loom/runtime/error.h"

namespace loom::ops {

using namespace loom::ir;

namespace {

// A scatter index read from an index tensor, in int64, negative values counting from the end:
// compared with an output position, so an index out of range matches none.
Expr scatter_index(Expr i, int64_t n) {
  i = cast(DataType::Int(64), i);
  return select(i < make_zero(i.type()), i + make_const(i.type(), double(n)), i);
}

Expr same_position(Expr index, Expr position) { return index == cast(DataType::Int(64), position); }

void expect_indices(const Tensor& I, const char* what) {
  if (!I.dtype().is_int()) LOOM_THROW(TypeError, what, ": indices must be int32 or int64, are ", I.dtype().str());
}

// The updates that land on an element, combined: the reduction's source, identity and kind.
Expr combine_updates(ScatterReduction r, Expr hit, Expr update, Expr position, const std::vector<IterVar>& axes) {
  switch (r) {
    case ScatterReduction::None:  // the last update position that lands here, -1 if none
      return max_reduce(select(hit, position, make_const(position.type(), -1)), axes);
    case ScatterReduction::Add:
      return sum(select(hit, update, make_zero(update.type())), axes);
    case ScatterReduction::Mul:
      return prod_reduce(select(hit, update, make_one(update.type())), axes);
    case ScatterReduction::Max:
      return max_reduce(select(hit, update, reduce_identity(ir::ReduceKind::Max, update.type())), axes);
    case ScatterReduction::Min:
      return min_reduce(select(hit, update, reduce_identity(ir::ReduceKind::Min, update.type())), axes);
  }
  return Expr();
}

// The output element from the data element and the combined updates (for None: the position
// of the last update, read by `update_at`).
Expr combined_value(ScatterReduction r, Expr data, Expr acc, const std::function<Expr(Expr)>& update_at) {
  switch (r) {
    case ScatterReduction::None:
      return select(acc >= make_zero(acc.type()), update_at(max(acc, make_zero(acc.type()))), data);
    case ScatterReduction::Add:
      return data + acc;
    case ScatterReduction::Mul:
      return data * acc;
    case ScatterReduction::Max:
      return max(data, acc);
    case ScatterReduction::Min:
      return min(data, acc);
  }
  return Expr();
}

void check_reduction_type(ScatterReduction r, DataType t, const char* what) {
  if (r != ScatterReduction::None && t.is_bool())
    LOOM_THROW(TypeError, what, ": reduction '", to_string(r), "' needs numbers, the data is bool");
}

}  // namespace

ScatterReduction scatter_reduction(const std::string& s) {
  if (s == "none") return ScatterReduction::None;
  if (s == "add") return ScatterReduction::Add;
  if (s == "mul") return ScatterReduction::Mul;
  if (s == "max") return ScatterReduction::Max;
  if (s == "min") return ScatterReduction::Min;
  LOOM_THROW(ModelError, "scatter reduction '", s, "' is not supported (none, add, mul, max, min)");
}

const char* to_string(ScatterReduction r) {
  switch (r) {
    case ScatterReduction::None:
      return "none";
    case ScatterReduction::Add:
      return "add";
    case ScatterReduction::Mul:
      return "mul";
    case ScatterReduction::Max:
      return "max";
    case ScatterReduction::Min:
      return "min";
  }
  return "?";
}

// ---- ScatterElements ----

size_t scatter_elements_check(const Shape& x, const Shape& i, const Shape& u, int64_t axis) {
  int64_t r = static_cast<int64_t>(x.size());
  if (axis < -r || axis >= r)
    LOOM_THROW(ShapeError, "scatter_elements: axis ", axis, " out of range for data ", shape_str(x));
  if (i.size() != x.size())
    LOOM_THROW(ShapeError, "scatter_elements: indices ", shape_str(i), " and data ", shape_str(x), " differ in rank");
  if (u != i)
    LOOM_THROW(ShapeError, "scatter_elements: updates ", shape_str(u), " and indices ", shape_str(i),
               " differ in shape");
  size_t a = static_cast<size_t>(axis < 0 ? axis + r : axis);
  for (size_t d = 0; d < x.size(); ++d)
    if (d != a && i[d] > x[d])
      LOOM_THROW(ShapeError, "scatter_elements: indices ", shape_str(i), " exceed data ", shape_str(x),
                 " in dimension ", d);
  return a;
}

Tensor scatter_elements(const Tensor& X, const Tensor& I, const Tensor& U, int64_t axis, ScatterReduction r,
                        const std::string& name) {
  Shape xs = shape_of(X), is = shape_of(I);
  size_t a = scatter_elements_check(xs, is, shape_of(U), axis);
  expect_indices(I, "scatter_elements");
  if (U.dtype() != X.dtype())
    LOOM_THROW(TypeError, "scatter_elements: updates (", U.dtype().str(), ") and data (", X.dtype().str(),
               ") differ in type");
  check_reduction_type(r, X.dtype(), "scatter_elements");
  // Only the update positions that agree with the output position outside `axis` can land on
  // it: the reduction runs along `axis` of the indices only. Outside I's extents nothing lands;
  // the reads there are clamped (and their hits masked).
  auto update_index = [&](const std::vector<Var>& v, Expr k) {
    std::vector<Expr> idx;
    for (size_t d = 0; d < v.size(); ++d)
      idx.push_back(d == a ? k : is[d] == xs[d] ? Expr(v[d]) : min(Expr(v[d]), Expr(int(is[d] - 1))));
    return idx;
  };
  auto inside = [&](const std::vector<Var>& v) {
    Expr in;
    for (size_t d = 0; d < v.size(); ++d)
      if (d != a && is[d] < xs[d]) in = in.defined() ? (in && v[d] < int(is[d])) : Expr(v[d] < int(is[d]));
    return in;
  };
  IterVar t = reduce_axis(int(is[a]), "r_scatter");
  Tensor acc = compute(shape_exprs(xs), ComputeFn([&](const std::vector<Var>& v) {
                         std::vector<Expr> idx = update_index(v, t->var);
                         Expr hit = same_position(scatter_index(I(idx), xs[a]), v[a]);
                         if (Expr in = inside(v); in.defined()) hit = in && hit;
                         return combine_updates(r, hit, U(idx), t->var, {t});
                       }),
                       name + "_updates", "reduce");
  return compute(shape_exprs(xs), ComputeFn([&](const std::vector<Var>& v) {
                   return combined_value(r, X(at(v)), acc(at(v)), [&](Expr k) { return U(update_index(v, k)); });
                 }),
                 name, "injective");
}

// ---- ScatterND ----

void scatter_nd_check(const Shape& x, const Shape& i, const Shape& u) {
  if (i.empty()) LOOM_THROW(ShapeError, "scatter_nd: indices must have rank 1 or more");
  int64_t k = i.back();
  if (k < 1 || k > static_cast<int64_t>(x.size()))
    LOOM_THROW(ShapeError, "scatter_nd: the last dimension of indices ", shape_str(i), " must be in [1, ", x.size(),
               "] (the rank of data ", shape_str(x), ")");
  Shape want(i.begin(), i.end() - 1);
  want.insert(want.end(), x.begin() + k, x.end());
  if (want.empty()) want = {1};  // one update of a single element: rank 0 in ONNX, [1] here
  if (u != want && !(want == Shape{1} && u.empty()))
    LOOM_THROW(ShapeError, "scatter_nd: updates are ", shape_str(u), ", must be ", shape_str(want), " for indices ",
               shape_str(i), " and data ", shape_str(x));
}

Tensor scatter_nd(const Tensor& X, const Tensor& I, const Tensor& U, ScatterReduction r, const std::string& name) {
  Shape xs = shape_of(X), is = shape_of(I), us = shape_of(U);
  scatter_nd_check(xs, is, us);
  expect_indices(I, "scatter_nd");
  if (U.dtype() != X.dtype())
    LOOM_THROW(TypeError, "scatter_nd: updates (", U.dtype().str(), ") and data (", X.dtype().str(),
               ") differ in type");
  check_reduction_type(r, X.dtype(), "scatter_nd");
  size_t k = static_cast<size_t>(is.back()), q = is.size() - 1;  // q: the update positions' rank
  Shape positions(is.begin(), is.end() - 1);
  // The update positions as reduce axes (one of extent 1 where there is a single update).
  std::vector<IterVar> p;
  for (size_t d = 0; d < q; ++d) p.push_back(reduce_axis(int(positions[d]), "r_scatter" + std::to_string(d)));
  if (p.empty()) p.push_back(reduce_axis(1, "r_scatter"));
  // U at update position `pos` (q indices) and the output's trailing dimensions.
  auto update_at = [&](const std::vector<Expr>& pos, const std::vector<Var>& v) {
    std::vector<Expr> idx(pos.begin(), pos.end());
    idx.insert(idx.end(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    if (idx.size() < us.size()) idx.push_back(Expr(0));  // a single element as [1]
    return U(idx);
  };
  Tensor acc = compute(shape_exprs(xs), ComputeFn([&](const std::vector<Var>& v) {
                         std::vector<Expr> pos;
                         for (size_t d = 0; d < q; ++d) pos.push_back(p[d]->var);
                         Expr hit, flat = Expr(0);
                         for (size_t j = 0; j < k; ++j) {
                           std::vector<Expr> ii = pos;
                           ii.push_back(Expr(int(j)));
                           Expr same = same_position(scatter_index(I(ii), xs[j]), v[j]);
                           hit = hit.defined() ? (hit && same) : same;
                         }
                         int64_t stride = 1;
                         for (size_t d = q; d-- > 0;) {
                           flat = flat + Expr(p[d]->var) * int(stride);
                           stride *= positions[d];
                         }
                         return combine_updates(r, hit, update_at(pos, v), flat, p);
                       }),
                       name + "_updates", "reduce");
  return compute(shape_exprs(xs), ComputeFn([&](const std::vector<Var>& v) {
                   auto last_update = [&](Expr flat) {
                     std::vector<Expr> pos(q);
                     int64_t stride = 1;
                     for (size_t d = q; d-- > 0;) {
                       pos[d] = (flat / int(stride)) % int(positions[d]);
                       stride *= positions[d];
                     }
                     return update_at(pos, v);
                   };
                   return combined_value(r, X(at(v)), acc(at(v)), last_update);
                 }),
                 name, "injective");
}

// ---- GatherND ----

Shape gather_nd_shape(const Shape& x, const Shape& i, int64_t batch_dims) {
  if (i.empty()) LOOM_THROW(ShapeError, "gather_nd: indices must have rank 1 or more");
  int64_t r = static_cast<int64_t>(x.size()), q = static_cast<int64_t>(i.size());
  if (batch_dims < 0 || batch_dims >= std::min(r, q))
    LOOM_THROW(ShapeError, "gather_nd: batch_dims ", batch_dims, " must be in [0, ", std::min(r, q) - 1, "] for data ",
               shape_str(x), " and indices ", shape_str(i));
  for (int64_t d = 0; d < batch_dims; ++d)
    if (x[size_t(d)] != i[size_t(d)])
      LOOM_THROW(ShapeError, "gather_nd: batch dimension ", d, " of data ", shape_str(x), " and indices ", shape_str(i),
                 " differ");
  int64_t k = i.back();
  if (k < 1 || k > r - batch_dims)
    LOOM_THROW(ShapeError, "gather_nd: the last dimension of indices ", shape_str(i), " must be in [1, ",
               r - batch_dims, "] for data ", shape_str(x), " and batch_dims ", batch_dims);
  Shape out(i.begin(), i.end() - 1);
  out.insert(out.end(), x.begin() + batch_dims + k, x.end());
  if (out.empty()) out = {1};
  return out;
}

Tensor gather_nd(const Tensor& X, const Tensor& I, int64_t batch_dims, const std::string& name) {
  Shape xs = shape_of(X), is = shape_of(I);
  Shape out = gather_nd_shape(xs, is, batch_dims);
  expect_indices(I, "gather_nd");
  size_t b = static_cast<size_t>(batch_dims), k = static_cast<size_t>(is.back()), q = is.size() - 1;
  return compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                   // v: the index position (q dimensions, its first b the batch), then X's rest;
                   // a rank-0 result has one dimension of 1 that indexes nothing.
                   std::vector<Expr> pos(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(q, v.size())));
                   std::vector<Expr> idx(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(b));
                   for (size_t j = 0; j < k; ++j) {
                     std::vector<Expr> ii = pos;
                     ii.push_back(Expr(int(j)));
                     idx.push_back(clamped_index(I(ii), xs[b + j]));
                   }
                   if (idx.size() < xs.size())
                     idx.insert(idx.end(), v.begin() + static_cast<std::ptrdiff_t>(q), v.end());
                   return X(idx);
                 }),
                 name, "injective");
}

// ---- Einsum ----

namespace {

constexpr int kLetters = 52;

int letter_id(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' : c - 'a' + 26; }

std::string label_name(int id) {
  if (id < 26) return std::string(1, char('A' + id));
  if (id < kLetters) return std::string(1, char('a' + id - 26));
  return "... dimension " + std::to_string(id - kLetters);
}

// One term of the equation: its letters' ids, and where its ellipsis is (-1: none).
struct Term {
  std::vector<int> letters;
  int ellipsis = -1;  // the number of letters before "..."
};

Term parse_term(const std::string& t, const std::string& equation) {
  Term term;
  for (size_t c = 0; c < t.size(); ++c) {
    char ch = t[c];
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
      term.letters.push_back(letter_id(ch));
    } else if (ch == '.') {
      if (t.compare(c, 3, "...") != 0)
        LOOM_THROW(ModelError, "einsum: equation '", equation, "': a '.' that is not part of '...'");
      if (term.ellipsis >= 0)
        LOOM_THROW(ModelError, "einsum: equation '", equation, "': term '", t, "' has more than one '...'");
      term.ellipsis = static_cast<int>(term.letters.size());
      c += 2;
    } else {
      LOOM_THROW(ModelError, "einsum: equation '", equation, "': unexpected character '", std::string(1, ch),
                 "' (labels are letters; terms are separated by ',', the output follows '->')");
    }
  }
  return term;
}

}  // namespace

EinsumSpec einsum_spec(const std::string& equation, const std::vector<Shape>& shapes) {
  std::string eq;
  for (char c : equation)
    if (c != ' ' && c != '\t') eq += c;
  std::string lhs = eq, rhs;
  bool explicit_output = false;
  if (size_t arrow = eq.find("->"); arrow != std::string::npos) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
    explicit_output = true;
    if (rhs.find("->") != std::string::npos)
      LOOM_THROW(ModelError, "einsum: equation '", equation, "' has more than one '->'");
  }
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::vector<Term> parsed;
  for (const std::string& t : terms) parsed.push_back(parse_term(t, equation));
  if (terms.size() != shapes.size())
    LOOM_THROW(ModelError, "einsum: equation '", equation, "' has ", terms.size(), " operand terms, the node ",
               shapes.size(), " inputs");
  size_t ellipsis_rank = 0;  // the widest ellipsis
  for (size_t o = 0; o < terms.size(); ++o) {
    const Term& t = parsed[o];
    size_t rank = shapes[o].size();
    if (t.ellipsis < 0 ? t.letters.size() != rank : t.letters.size() > rank)
      LOOM_THROW(ShapeError, "einsum: equation '", equation, "': term '", terms[o], "' has ", t.letters.size(),
                 " labels", t.ellipsis >= 0 ? " and '...'" : "", ", operand ", o, " is ", shape_str(shapes[o]));
    if (t.ellipsis >= 0) ellipsis_rank = std::max(ellipsis_rank, rank - t.letters.size());
  }
  EinsumSpec s;
  s.extent.assign(kLetters + ellipsis_rank, 0);
  std::vector<int> uses(s.extent.size(), 0);
  for (size_t o = 0; o < parsed.size(); ++o) {
    const Term& t = parsed[o];
    std::vector<int> labels = t.letters;
    if (t.ellipsis >= 0) {
      size_t e = shapes[o].size() - t.letters.size();  // aligned with the widest ellipsis' end
      std::vector<int> dots;
      for (size_t d = 0; d < e; ++d) dots.push_back(static_cast<int>(kLetters + ellipsis_rank - e + d));
      labels.insert(labels.begin() + t.ellipsis, dots.begin(), dots.end());
    }
    std::vector<int64_t> own(s.extent.size(), 0);  // this operand's extents (diagonals agree exactly)
    for (size_t d = 0; d < labels.size(); ++d) {
      int l = labels[d];
      int64_t n = shapes[o][d];
      ++uses[size_t(l)];
      if (own[size_t(l)] && own[size_t(l)] != n)
        LOOM_THROW(ShapeError, "einsum: equation '", equation, "': label '", label_name(l), "' is repeated in operand ",
                   o, " ", shape_str(shapes[o]), " over dimensions of different extents");
      own[size_t(l)] = n;
      int64_t& ext = s.extent[size_t(l)];
      if (ext != 0 && ext != n && ext != 1 && n != 1)
        LOOM_THROW(ShapeError, "einsum: equation '", equation, "': label '", label_name(l), "' is ", ext,
                   " in an earlier operand and ", n, " in operand ", o, " ", shape_str(shapes[o]));
      ext = std::max(ext, n);
    }
    s.inputs.push_back(labels);
  }
  if (explicit_output) {
    Term out = parse_term(rhs, equation);
    std::vector<bool> seen(s.extent.size(), false);
    for (size_t c = 0; c <= out.letters.size(); ++c) {
      if (static_cast<int>(c) == out.ellipsis)
        for (size_t e = 0; e < ellipsis_rank; ++e) s.output.push_back(static_cast<int>(kLetters + e));
      if (c == out.letters.size()) break;
      int l = out.letters[c];
      if (!uses[size_t(l)])
        LOOM_THROW(ModelError, "einsum: equation '", equation, "': output label '", label_name(l),
                   "' is in no operand");
      if (seen[size_t(l)])
        LOOM_THROW(ModelError, "einsum: equation '", equation, "': output label '", label_name(l), "' is repeated");
      seen[size_t(l)] = true;
      s.output.push_back(l);
    }
    if (out.ellipsis < 0 && ellipsis_rank > 0)
      LOOM_THROW(ShapeError, "einsum: equation '", equation, "': the operands' '...' cover ", ellipsis_rank,
                 " dimensions, but the output has no '...'");
  } else {
    for (size_t e = 0; e < ellipsis_rank; ++e) s.output.push_back(static_cast<int>(kLetters + e));
    for (int l = 0; l < kLetters; ++l)
      if (uses[size_t(l)] == 1) s.output.push_back(l);
  }
  for (int l = 0; l < static_cast<int>(s.extent.size()); ++l)
    if (uses[size_t(l)] && std::find(s.output.begin(), s.output.end(), l) == s.output.end()) s.reduced.push_back(l);
  return s;
}

Shape einsum_shape(const EinsumSpec& s) {
  Shape out;
  for (int l : s.output) out.push_back(s.extent[size_t(l)]);
  if (out.empty()) out = {1};
  return out;
}

Tensor einsum(const std::vector<Tensor>& operands, const std::string& equation, const std::string& name) {
  if (operands.empty()) LOOM_THROW(ShapeError, "einsum: needs at least one operand");
  std::vector<Shape> shapes;
  for (const Tensor& t : operands) {
    shapes.push_back(shape_of(t));
    if (t.dtype() != operands[0].dtype())
      LOOM_THROW(TypeError, "einsum: operands differ in type (", operands[0].dtype().str(), ", ", t.dtype().str(), ")");
  }
  EinsumSpec s = einsum_spec(equation, shapes);
  std::vector<IterVar> axes;
  for (int l : s.reduced) axes.push_back(reduce_axis(int(s.extent[size_t(l)]), "r_einsum_" + std::to_string(l)));
  return compute(shape_exprs(einsum_shape(s)), ComputeFn([&](const std::vector<Var>& v) {
                   std::vector<Expr> label(s.extent.size());
                   for (size_t d = 0; d < s.output.size(); ++d) label[size_t(s.output[d])] = v[d];
                   for (size_t j = 0; j < axes.size(); ++j) label[size_t(s.reduced[j])] = axes[j]->var;
                   Expr product;
                   for (size_t o = 0; o < operands.size(); ++o) {
                     std::vector<Expr> idx;
                     for (size_t d = 0; d < shapes[o].size(); ++d) {
                       int l = s.inputs[o][d];
                       // A dimension of 1 against a wider label broadcasts.
                       idx.push_back(shapes[o][d] == 1 && s.extent[size_t(l)] != 1 ? Expr(0) : label[size_t(l)]);
                     }
                     Expr x = operands[o](idx);
                     product = product.defined() ? product * x : x;
                   }
                   return axes.empty() ? product : sum(product, axes);
                 }),
                 name, axes.empty() ? "injective" : "reduce");
}

}  // namespace loom::ops
