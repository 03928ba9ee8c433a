// Reference implementations of the data-movement operators (op_registry_data.cc): plain loops
// over doubles, independent of the tensor expressions (reference_ops.h).
#include <algorithm>
#include <cmath>

#include "reference_ops.h"
#include "reference_util.h"

namespace loom::graph::ref {

namespace {

int64_t axis_attr(const Node& n, size_t rank, const char* key = "axis", int64_t def = 0) {
  int64_t a = n.attrs.get_int(key, def);
  return a < 0 ? a + static_cast<int64_t>(rank) : a;
}

}  // namespace

RefTensor cast(const Node& n, const Inputs& in) {
  DataType to = DataType::parse(n.attrs.get_string("to"));
  T y{in[0]->shape, in[0]->v};
  for (double& v : y.v) {
    if (to.is_bool())
      v = v != 0;
    else if (to.is_integer())
      v = std::trunc(v);
    else if (to.bits() == 32)
      v = static_cast<float>(v);
  }
  return y;
}

RefTensor slice(const Node& n, const Inputs& in) {
  const T& x = *in[0];
  ops::SliceAxes s = ops::slice_axes(x.shape, n.attrs.get_ints("starts"), n.attrs.get_ints("ends"),
                                     n.attrs.get_ints("axes"), n.attrs.get_ints("steps"));
  T y{s.count, Values(size_t(count(s.count)))};
  auto st = strides(x.shape);
  for_each_index(y.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) src += (s.begin[d] + idx[d] * s.step[d]) * st[d];
    y.v[size_t(flat)] = x.v[size_t(src)];
  });
  return y;
}

RefTensor gather(const Node& n, const Inputs& in) {
  const T &x = *in[0], &ix = *in[1];
  size_t a = size_t(axis_attr(n, x.shape.size()));
  auto st = strides(x.shape);
  T y{n.type.shape, Values(size_t(count(n.type.shape)))};
  size_t ir = ix.shape.size();
  for_each_index(y.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    int64_t k = 0;
    auto ist = strides(ix.shape);
    for (size_t d = 0; d < ir; ++d) k += idx[a + d] * ist[d];
    int64_t src = clamped_index(ix.v[size_t(k)], x.shape[a]) * st[a];
    for (size_t d = 0; d < a; ++d) src += idx[d] * st[d];
    for (size_t d = a + 1; d < x.shape.size(); ++d) src += idx[d - 1 + ir] * st[d];
    y.v[size_t(flat)] = x.v[size_t(src)];
  });
  return y;
}

RefTensor gather_elements(const Node& n, const Inputs& in) {
  const T &x = *in[0], &ix = *in[1];
  size_t a = size_t(axis_attr(n, x.shape.size()));
  auto st = strides(x.shape);
  T y{ix.shape, Values(ix.v.size())};
  for_each_index(y.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      src += (d == a ? clamped_index(ix.v[size_t(flat)], x.shape[a]) : idx[d]) * st[d];
    y.v[size_t(flat)] = x.v[size_t(src)];
  });
  return y;
}

RefTensor tile(const Node& n, const Inputs& in) {
  const T& x = *in[0];
  auto st = strides(x.shape);
  T y{n.type.shape, Values(size_t(count(n.type.shape)))};
  for_each_index(y.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) src += (idx[d] % x.shape[d]) * st[d];
    y.v[size_t(flat)] = x.v[size_t(src)];
  });
  return y;
}

RefTensor trilu(const Node& n, const Inputs& in) {
  T y = *in[0];
  int64_t k = n.attrs.get_int("k", 0);
  bool upper = n.attrs.get_int("upper", 1) != 0;
  for_each_index(y.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    int64_t col_minus_row = idx[idx.size() - 1] - idx[idx.size() - 2];
    if (upper ? col_minus_row < k : col_minus_row > k) y.v[size_t(flat)] = 0;
  });
  return y;
}

RefTensor cumsum(const Node& n, const Inputs& in) {
  const T& x = *in[0];
  size_t a = size_t(axis_attr(n, x.shape.size()));
  bool exclusive = n.attrs.get_int("exclusive", 0) != 0, reverse = n.attrs.get_int("reverse", 0) != 0;
  int64_t len = x.shape[a], inner = strides(x.shape)[a], outer = count(x.shape) / (len * inner);
  T y{x.shape, Values(x.v.size())};
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = 0;
      for (int64_t j = 0; j < len; ++j) {
        int64_t k = reverse ? len - 1 - j : j;
        size_t at = size_t((o * len + k) * inner + i);
        if (exclusive) {
          y.v[at] = acc;
          acc += x.v[at];
        } else {
          acc += x.v[at];
          y.v[at] = acc;
        }
      }
    }
  return y;
}

RefTensor one_hot(const Node& n, const Inputs& in) {
  const T &ix = *in[0], &values = *in[1];
  int64_t depth = n.attrs.get_int("depth");
  size_t a = size_t(axis_attr(n, ix.shape.size() + 1, "axis", -1));
  T y{n.type.shape, Values(size_t(count(n.type.shape)))};
  auto ist = strides(ix.shape);
  for_each_index(y.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    int64_t k = 0;
    for (size_t d = 0, e = 0; d < idx.size(); ++d)
      if (d != a) k += idx[d] * ist[e++];
    auto i = static_cast<int64_t>(ix.v[size_t(k)]);
    if (i < 0) i += depth;
    y.v[size_t(flat)] = i == idx[a] ? values.v[1] : values.v[0];
  });
  return y;
}

RefTensor top_k(const Node& n, const Inputs& in) {
  const T& x = *in[0];
  size_t a = size_t(axis_attr(n, x.shape.size(), "axis", -1));
  int64_t k = n.attrs.get_int("k"), len = x.shape[a], inner = strides(x.shape)[a],
          outer = count(x.shape) / (len * inner);
  bool largest = n.attrs.get_int("largest", 1) != 0, indices = n.attrs.get_string("output") == "indices";
  T y{n.type.shape, Values(size_t(outer * k * inner))};
  std::vector<int64_t> order(size_t(len), 0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return x.v[size_t((o * len + j) * inner + i)]; };
      for (int64_t j = 0; j < len; ++j) order[size_t(j)] = j;
      // NaN orders above every number, as the kernels order it.
      auto above = [&](double a, double b) { return a > b || (std::isnan(a) && !std::isnan(b)); };
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t p, int64_t q) { return largest ? above(at(p), at(q)) : above(at(q), at(p)); });
      for (int64_t p = 0; p < k; ++p)
        y.v[size_t((o * k + p) * inner + i)] = indices ? double(order[size_t(p)]) : at(order[size_t(p)]);
    }
  return y;
}

RefTensor resample_axis(const Node& n, const Inputs& in) {
  const T &x = *in[0], &index = *in[1], &weight = *in[2];
  size_t a = size_t(n.attrs.get_int("axis"));
  int64_t taps = index.shape[0], outs = index.shape[1];
  auto st = strides(x.shape);
  T y{n.type.shape, Values(size_t(count(n.type.shape)))};
  for_each_index(y.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    int64_t o = idx[a], base = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      if (d != a) base += idx[d] * st[d];
    double acc = in.size() > 3 ? in[3]->v[size_t(o)] : 0.0;
    for (int64_t t = 0; t < taps; ++t)
      acc += weight.v[size_t(t * outs + o)] * x.v[size_t(base + int64_t(index.v[size_t(t * outs + o)]) * st[a])];
    y.v[size_t(flat)] = acc;
  });
  return y;
}

}  // namespace loom::graph::ref
