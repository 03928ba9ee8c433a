// Reference implementations of the scatters, N-d gathers and Einstein sums
// (op_registry_scatter.cc): plain loops over doubles, independent of the tensor expressions
// (reference_ops.h). Scatters apply their updates in row-major order, so with reduction none the
// last update that lands on an element wins, as in the kernels.
#include <algorithm>

#include "reference_ops.h"
#include "reference_util.h"

namespace loom::graph::ref {

namespace {

// A scatter index: negative counts from the end; -1 where it is out of range (no update).
int64_t scatter_target(double i, int64_t n) {
  auto k = static_cast<int64_t>(i);
  if (k < 0) k += n;
  return k >= 0 && k < n ? k : -1;
}

void combine(double& y, double u, ops::ScatterReduction r) {
  switch (r) {
    case ops::ScatterReduction::None:
      y = u;
      break;
    case ops::ScatterReduction::Add:
      y += u;
      break;
    case ops::ScatterReduction::Mul:
      y *= u;
      break;
    case ops::ScatterReduction::Max:
      y = std::max(y, u);
      break;
    case ops::ScatterReduction::Min:
      y = std::min(y, u);
      break;
  }
}

ops::ScatterReduction reduction_of(const Node& n) {
  return ops::scatter_reduction(n.attrs.get_string("reduction", "none"));
}

}  // namespace

RefTensor scatter_elements(const Node& n, const Inputs& in) {
  const T &ix = *in[1], &u = *in[2];
  T y = *in[0];
  size_t a = ops::scatter_elements_check(y.shape, ix.shape, u.shape, n.attrs.get_int("axis", 0));
  ops::ScatterReduction r = reduction_of(n);
  auto st = strides(y.shape);
  for_each_index(ix.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    int64_t k = scatter_target(ix.v[size_t(flat)], y.shape[a]);
    if (k < 0) return;
    int64_t dst = 0;
    for (size_t d = 0; d < idx.size(); ++d) dst += (d == a ? k : idx[d]) * st[d];
    combine(y.v[size_t(dst)], u.v[size_t(flat)], r);
  });
  return y;
}

RefTensor scatter_nd(const Node& n, const Inputs& in) {
  const T &ix = *in[1], &u = *in[2];
  T y = *in[0];
  ops::scatter_nd_check(y.shape, ix.shape, u.shape);
  ops::ScatterReduction r = reduction_of(n);
  auto st = strides(y.shape);
  size_t k = static_cast<size_t>(ix.shape.back());
  int64_t updates = count(Shape(ix.shape.begin(), ix.shape.end() - 1));
  int64_t slice = count(Shape(y.shape.begin() + static_cast<std::ptrdiff_t>(k), y.shape.end()));
  for (int64_t p = 0; p < updates; ++p) {
    int64_t dst = 0;
    bool inside = true;
    for (size_t j = 0; j < k; ++j) {
      int64_t t = scatter_target(ix.v[size_t(p) * k + j], y.shape[j]);
      inside &= t >= 0;
      dst += t * st[j];
    }
    if (!inside) continue;
    for (int64_t e = 0; e < slice; ++e) combine(y.v[size_t(dst + e)], u.v[size_t(p * slice + e)], r);
  }
  return y;
}

RefTensor gather_nd(const Node& n, const Inputs& in) {
  const T &x = *in[0], &ix = *in[1];
  int64_t b = n.attrs.get_int("batch_dims", 0);
  Shape out = ops::gather_nd_shape(x.shape, ix.shape, b);
  auto st = strides(x.shape);
  size_t k = static_cast<size_t>(ix.shape.back()), bd = static_cast<size_t>(b);
  Shape positions(ix.shape.begin(), ix.shape.end() - 1);
  int64_t per_batch = count(Shape(positions.begin() + b, positions.end()));
  int64_t batch_stride = bd > 0 ? st[bd - 1] : 0;
  int64_t slice = count(Shape(x.shape.begin() + b + static_cast<std::ptrdiff_t>(k), x.shape.end()));
  T y{out, Values(size_t(count(out)))};
  for (int64_t p = 0; p < count(positions); ++p) {
    int64_t src = (p / per_batch) * batch_stride;
    for (size_t j = 0; j < k; ++j) src += clamped_index(ix.v[size_t(p) * k + j], x.shape[bd + j]) * st[bd + j];
    for (int64_t e = 0; e < slice; ++e) y.v[size_t(p * slice + e)] = x.v[size_t(src + e)];
  }
  return y;
}

RefTensor einsum(const Node& n, const Inputs& in) {
  std::vector<Shape> shapes;
  for (const T* t : in) shapes.push_back(t->shape);
  ops::EinsumSpec s = ops::einsum_spec(n.attrs.get_string("equation"), shapes);
  Shape out = ops::einsum_shape(s), reduced;
  for (int l : s.reduced) reduced.push_back(s.extent[size_t(l)]);
  std::vector<std::vector<int64_t>> st;
  for (const T* t : in) st.push_back(strides(t->shape));
  T y{out, Values(size_t(count(out)))};
  std::vector<int64_t> label(s.extent.size(), 0);
  for_each_index(out, [&](const std::vector<int64_t>& o, int64_t flat) {
    for (size_t d = 0; d < s.output.size(); ++d) label[size_t(s.output[d])] = o[d];
    double acc = 0;
    for_each_index(reduced, [&](const std::vector<int64_t>& r, int64_t) {
      for (size_t j = 0; j < r.size(); ++j) label[size_t(s.reduced[j])] = r[j];
      double product = 1;
      for (size_t i = 0; i < in.size(); ++i) {
        int64_t at = 0;
        for (size_t d = 0; d < shapes[i].size(); ++d)
          at += (shapes[i][d] == 1 ? 0 : label[size_t(s.inputs[i][d])]) * st[i][d];
        product *= in[i]->v[size_t(at)];
      }
      acc += product;
    });
    y.v[size_t(flat)] = acc;
  });
  return y;
}

}  // namespace loom::graph::ref
