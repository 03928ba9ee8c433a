// Comparing a backend's outputs with a reference, bit for bit (the accelerator backends must agree
// exactly), and the accelerator's totals of a model run. Shared by the regression runner and the
// benches (accel_model_bench, perf_model_bench).
#pragma once
#include <cstdint>
#include <string>

#include "loom/runtime/graph_executor.h"
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

// What a model's accelerator kernels did in the executor's last run: the sum of their cycles and
// GEMM work, and how many ran.
struct AccelTotals {
  uint64_t cycles = 0;
  double macs = 0;
  int kernels = 0;
};
AccelTotals accel_totals(const runtime::GraphExecutor& ex);

}  // namespace loom::regress
