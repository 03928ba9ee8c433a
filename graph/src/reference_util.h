// Internal to loom_graph: index arithmetic that the reference implementations (reference*.cc)
// share: element counts, row-major strides, iteration over a shape, numpy broadcasting.
#pragma once
#include <cstdint>
#include <vector>

#include "loom/graph/op_registry.h"

namespace loom::graph::ref {

using Values = std::vector<double>;
using T = RefTensor;

inline int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

inline std::vector<int64_t> strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// Calls f(index vector, flat index) for every point of `shape`.
template <typename F>
void for_each_index(const Shape& shape, F f) {
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t n = count(shape);
  for (int64_t flat = 0; flat < n; ++flat) {
    f(idx, flat);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

// Flat index into `s` of an output index broadcast (numpy rules) from `out`.
inline int64_t broadcast_flat(const Shape& s, const std::vector<int64_t>& st, const std::vector<int64_t>& out_idx) {
  int64_t flat = 0;
  size_t off = out_idx.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d) flat += (s[d] == 1 ? 0 : out_idx[off + d]) * st[d];
  return flat;
}

// An index read from an index tensor, as the gather kernels read it: negative counts from the
// end, then clamped into [0, n).
inline int64_t clamped_index(double i, int64_t n) {
  auto k = static_cast<int64_t>(i);
  if (k < 0) k += n;
  return k < 0 ? 0 : k >= n ? n - 1 : k;
}

}  // namespace loom::graph::ref
