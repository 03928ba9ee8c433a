// Shared helpers for Loom's tests: random inputs and comparisons against the naive reference.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "common/error_text.h"
#include "loom/ir/eval.h"
#include "loom/ir/tensor.h"
#include "loom/runtime/ndarray.h"

namespace loom::test {

// How often `what` occurs in `text` (IR or assembly checks).
inline size_t count_occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

inline NDArray random_array(const ir::Tensor& t, uint64_t seed, double lo = -2, double hi = 2) {
  std::vector<int64_t> shape;
  for (auto& e : t.shape()) shape.push_back(*ir::as_const_int(e));
  NDArray a = NDArray::empty(shape, t.dtype());
  a.fill_random(seed, lo, hi);
  return a;
}

// float32 array of `shape`, uniform in [lo, hi), deterministic per seed.
inline NDArray random_float32(std::vector<int64_t> shape, uint64_t seed, double lo = -1, double hi = 1) {
  NDArray a = NDArray::empty(std::move(shape), DataType::Float(32));
  a.fill_random(seed, lo, hi);
  return a;
}

inline NDArray empty_like(const ir::Tensor& t) {
  std::vector<int64_t> shape;
  for (auto& e : t.shape()) shape.push_back(*ir::as_const_int(e));
  return NDArray::zeros(shape, t.dtype());
}

// The largest |got - want| and the largest |want|: model outputs are compared with a tolerance
// relative to their largest magnitude (err <= tol x scale).
struct MaxError {
  double err = 0, scale = 0;
};
inline MaxError max_error(const NDArray& got, const NDArray& want) {
  MaxError m;
  for (int64_t i = 0; i < want.numel(); ++i) {
    m.scale = std::max(m.scale, std::fabs(want.get_as_double(i)));
    m.err = std::max(m.err, std::fabs(want.get_as_double(i) - got.get_as_double(i)));
  }
  return m;
}

// Element-wise comparison: exact for integers, relative+absolute tolerance for floats.
inline ::testing::AssertionResult arrays_close(const NDArray& got, const NDArray& want, double rtol = 1e-5,
                                               double atol = 1e-5) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << "got " << got.describe() << ", want " << want.describe();
  int bad = 0;
  std::ostringstream msg;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.get_as_double(i), w = want.get_as_double(i);
    bool ok = want.dtype().is_float() ? std::fabs(g - w) <= atol + rtol * std::fabs(w) : g == w;
    if (!ok && bad++ < 5) msg << " [" << i << "] got " << g << " want " << w << ";";
  }
  if (bad) return ::testing::AssertionFailure() << bad << " of " << got.numel() << " elements differ:" << msg.str();
  return ::testing::AssertionSuccess();
}

// arrays_close for every output of a model.
inline ::testing::AssertionResult all_arrays_close(const std::vector<NDArray>& got, const std::vector<NDArray>& want,
                                                   double rtol = 1e-5, double atol = 1e-5) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << got.size() << " outputs, want " << want.size();
  for (size_t k = 0; k < want.size(); ++k)
    if (auto r = arrays_close(got[k], want[k], rtol, atol); !r)
      return ::testing::AssertionFailure() << "output " << k << ": " << r.message();
  return ::testing::AssertionSuccess();
}

}  // namespace loom::test
