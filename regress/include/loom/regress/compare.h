// Comparing a backend's outputs with a reference: bit-exact for integer results (the accelerator
// backends must agree exactly), relative error for float ones. Shared by the regression runner,
// the tests and the benches.
#pragma once
#include <cstdint>
#include <string>

#include "loom/runtime/ndarray.h"

namespace loom::regress {

struct ArrayDiff {
  int64_t mismatches = 0;  // elements whose bits differ (shape or dtype mismatch: every element)
  int64_t first = -1;      // the first such element (flat index)
  double max_abs_error = 0, max_abs_reference = 0;
  std::string detail;  // "" when equal, else what differs first: "element 17: 3 vs 5", "shape 1x10 vs 1x12"
  bool equal() const { return mismatches == 0; }
};
ArrayDiff compare_arrays(const NDArray& got, const NDArray& want);

// The index of the largest element of a batch-1 output (its top-1 class).
int64_t argmax(const NDArray& a);

}  // namespace loom::regress
