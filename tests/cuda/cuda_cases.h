// Scheduled GPU workloads shared by the CUDA tests.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>

#include "common/test_util.h"
#include "common/workloads.h"
#include "loom/ir/eval.h"
#include "loom/ops/cuda_schedules.h"
#include "loom/schedule/lower.h"

namespace loom::test {

// The compile cache of these tests lives in the test temp folder, not in the user's ~/.cache.
inline const bool kCudaCacheInTempDir = [] {
  setenv("LOOM_CUDA_CACHE", (::testing::TempDir() + "loom_test_cuda_cache").c_str(), 0);
  return true;
}();

inline ir::LoweredFunc lower_gpu(const schedule::Schedule& s, const Workload& w, const std::string& name) {
  schedule::LowerOptions o;
  o.target_gpu = true;
  return schedule::lower(s, w.args(), name, o);
}

// Inputs (random) and outputs (zero) for a workload, and the reference outputs.
struct CaseData {
  std::vector<NDArray> args, want;
};
inline CaseData case_data(const Workload& w, uint64_t seed = 7) {
  CaseData d;
  std::map<const ir::Operation*, NDArray> in;
  for (auto& t : w.inputs) {
    d.args.push_back(random_array(t, seed++, -1, 1));
    in[t.op().get()] = d.args.back();
  }
  d.want = ir::reference_eval(w.outputs, in);
  for (auto& t : w.outputs) d.args.push_back(empty_like(t));
  return d;
}

}  // namespace loom::test
