// Helpers the CPU benches share to check Loom's result against a baseline's before timing:
// channel-blocked layouts (NCHW{b}c, as compiled models keep activations) and the relative error.
#pragma once
#include <algorithm>
#include <cmath>

#include "loom/runtime/ndarray.h"

namespace loom::bench {

// float32 NCHW -> [N, C/b, H, W, b] (C a multiple of b).
inline NDArray to_blocked(const NDArray& x, int64_t b) {
  const auto& s = x.shape();
  int64_t n = s[0], c = s[1], hw = s[2] * s[3];
  NDArray out = NDArray::empty({n, c / b, s[2], s[3], b}, DataType::Float(32));
  for (int64_t img = 0; img < n; ++img)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p)
        out.data<float>()[(((img * (c / b) + ch / b) * hw + p) * b) + ch % b] =
            x.data<float>()[(img * c + ch) * hw + p];
  return out;
}

// float32 [N, C/b, H, W, b] -> NCHW.
inline NDArray from_blocked(const NDArray& x) {
  const auto& s = x.shape();
  int64_t n = s[0], cb = s[1], hw = s[2] * s[3], b = s[4];
  NDArray out = NDArray::empty({n, cb * b, s[2], s[3]}, DataType::Float(32));
  for (int64_t img = 0; img < n; ++img)
    for (int64_t ch = 0; ch < cb * b; ++ch)
      for (int64_t p = 0; p < hw; ++p)
        out.data<float>()[(img * cb * b + ch) * hw + p] =
            x.data<float>()[(((img * cb + ch / b) * hw + p) * b) + ch % b];
  return out;
}

// max |got - want| / max |want| over two float32 arrays of one shape (the absolute error if
// `want` is all zeros).
inline double max_relative_error(const NDArray& got, const NDArray& want) {
  double err = 0, scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    scale = std::max(scale, std::fabs(double(want.data<float>()[i])));
    err = std::max(err, std::fabs(double(got.data<float>()[i]) - want.data<float>()[i]));
  }
  return scale > 0 ? err / scale : err;
}

}  // namespace loom::bench
