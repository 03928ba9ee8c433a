// Scheduled GPU workloads shared by the CUDA tests.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "common/test_util.h"
#include "common/workloads.h"
#include "loom/codegen/cuda.h"
#include "loom/ir/eval.h"
#include "loom/ops/cuda_schedules.h"
#include "loom/runtime/cuda.h"
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

// Runs a lowered GPU function on the GPU (compiled by NVRTC) with host arrays: each copied to the
// device, the last (the output) copied back into its host array.
inline void run_func_on_gpu(const ir::LoweredFunc& f, const std::vector<NDArray>& args) {
  auto m = runtime::CudaModule::load(codegen::cuda::build({f}));
  std::vector<NDArray> dev;
  std::vector<void*> raw;
  for (auto& a : args) dev.push_back(a.to_device(runtime::cuda_device())), raw.push_back(dev.back().raw_data());
  runtime::CudaStream stream;
  m.launch(f.name, raw, stream.handle());
  stream.synchronize();
  NDArray out = dev.back().to_device({kDLCPU, 0});
  std::memcpy(args.back().raw_data(), out.raw_data(), out.nbytes());
}

// Runs C = A B (a lowered GEMM taking A [M, K], B [K, N] of `in_type` and C [M, N] float32) with
// `run` (the grid interpreter, or run_func_on_gpu) on inputs uniform in [-1, 1], and returns the
// worst error against float64 products of the same inputs, relative to the element's sum of
// |products| (the scale of the float32 accumulation's rounding).
inline double gemm_error(const ir::LoweredFunc& f, DataType in_type,
                         const std::function<void(const ir::LoweredFunc&, const std::vector<NDArray>&)>& run) {
  const int64_t M = *ir::as_const_int(f.args[0]->shape[0]), K = *ir::as_const_int(f.args[0]->shape[1]),
                N = *ir::as_const_int(f.args[1]->shape[1]);
  NDArray A = NDArray::empty({M, K}, in_type), B = NDArray::empty({K, N}, in_type);
  A.fill_random(1, -1, 1);
  B.fill_random(2, -1, 1);
  NDArray C = NDArray::zeros({M, N}, DataType::Float(32));
  run(f, {A, B, C});
  double worst = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double want = 0, scale = 0;
      for (int64_t k = 0; k < K; ++k) {
        double p = A.get_as_double(m * K + k) * B.get_as_double(k * N + n);
        want += p;
        scale += std::fabs(p);
      }
      worst = std::max(worst, std::fabs(C.get_as_double(m * N + n) - want) / std::max(scale, 1e-30));
    }
  return worst;
}
inline void run_on_grid(const ir::LoweredFunc& f, const std::vector<NDArray>& args) { ir::interpret_grid(f, args); }

}  // namespace loom::test
