// The warp-tiled float32 GEMM (ops/cuda_gemm_warp_tiled.h) without a GPU: on the grid interpreter
// against float64 products of the same inputs, with one and two shared stages; through NVRTC and
// ptxas for sm_90; its tiling errors. On a GPU (skipped elsewhere) against the same products.
#include <cmath>
#include <cstring>
#include <functional>

#include "common/error_text.h"
#include "cuda_cases.h"
#include "loom/codegen/cuda.h"
#include "loom/ops/cuda_gemm_warp_tiled.h"
#include "loom/runtime/cuda.h"

namespace loom {
namespace {

using namespace loom::ir;

// The warp-tiled GEMM's worst error against float64 (cuda_cases.h), run by `run`.
double warp_gemm_error(int64_t M, int64_t N, int64_t K, const ops::CudaWarpGemmTiling& t,
                       const std::function<void(const LoweredFunc&, const std::vector<NDArray>&)>& run) {
  return test::gemm_error(ops::gemm_f32_warp_tiled_cuda(M, N, K, t), DataType::Float(32), run);
}

ops::CudaWarpGemmTiling small(int stages) {
  ops::CudaWarpGemmTiling t;
  t.block_m = 64, t.block_n = 64, t.warp_m = 32, t.warp_n = 32, t.stages = stages;
  return t;
}

TEST(CudaWarpGemm, MatchesFloat64OnTheGridInterpreter) {
  // Two blocks down M, four K steps; four warps of 32 x 32, lanes of 8 x 4.
  EXPECT_LT(warp_gemm_error(128, 64, 32, small(1), test::run_on_grid), 1e-6);
  EXPECT_LT(warp_gemm_error(128, 64, 32, small(2), test::run_on_grid), 1e-6);
  // The default tiling: eight warps of 32 x 64, lanes of 8 x 8, two K steps.
  EXPECT_LT(warp_gemm_error(128, 128, 16, {}, test::run_on_grid), 1e-6);
}

TEST(CudaWarpGemm, CompilesWithNvrtcAndPtxas) {
  codegen::cuda::CudaOptions o;
  o.use_cache = false;
  LoweredFunc f = ops::gemm_f32_warp_tiled_cuda(256, 256, 256);
  const std::string src = codegen::cuda::emit({f}, o).source;
  for (const char* want : {"*(float4*)(A_frag + ", "*(float4*)(B_frag + ", "*(float4*)(A_next + ",
                           "loom_cp_async16(&B_shared[", "*(float4*)(C + "})
    EXPECT_NE(src.find(want), std::string::npos) << want << "\n" << src;
  if (!codegen::cuda::nvrtc_enabled()) GTEST_SKIP() << "built without the CUDA toolkit";
  runtime::CudaProgram p = codegen::cuda::build({f}, o);
  EXPECT_NE(p.ptx.find("ld.shared.v4.f32"), std::string::npos);
  EXPECT_NE(p.ptx.find("cp.async.cg.shared.global"), std::string::npos);
  auto& k = p.functions[0].kernels[0];
  EXPECT_GT(k.registers, 64) << p.compile_log;  // the 64 accumulators stay in registers
  EXPECT_LE(k.registers * 256, 65536) << p.compile_log;
  EXPECT_NE(p.compile_log.find("0 bytes spill stores"), std::string::npos) << p.compile_log;
}

TEST(CudaWarpGemm, TilingErrorsNameTheConstraint) {
  std::string err = test::error_text<ScheduleError>([] { ops::gemm_f32_warp_tiled_cuda(100, 128, 128); });
  EXPECT_NE(err.find("block_m (128) must divide M (100)"), std::string::npos) << err;
  ops::CudaWarpGemmTiling t;
  t.lanes_m = 8;  // lanes_n 4: warp_m 32 is one group of 4 x 8 lanes, warp_n 64 four of 4 x 4
  EXPECT_NO_THROW(ops::gemm_f32_warp_tiled_cuda(128, 128, 128, t));
  t.warp_m = 16;  // 16 is not a multiple of 4 x 8 lanes
  err = test::error_text<ScheduleError>([&] { ops::gemm_f32_warp_tiled_cuda(128, 128, 128, t); });
  EXPECT_NE(err.find("a lane's tile is whole 4 x 4 groups: warp_m (16) a multiple of 4 x 8 lanes"), std::string::npos)
      << err;
  t = {};
  t.stages = 3;
  err = test::error_text<ScheduleError>([&] { ops::gemm_f32_warp_tiled_cuda(128, 128, 128, t); });
  EXPECT_NE(err.find("stages 1 or 2"), std::string::npos) << err;
  t = {};
  t.block_k = 64;  // 2 x (64 x 132 + 64 x 128) floats
  err = test::error_text<ScheduleError>([&] { ops::gemm_f32_warp_tiled_cuda(128, 128, 128, t); });
  EXPECT_NE(err.find("2 stages need 133120 bytes of shared memory (more than 48 KiB)"), std::string::npos) << err;
}

TEST(CudaWarpGemm, OnTheGpuMatchesFloat64) {
  std::string why;
  if (!runtime::cuda_available(&why)) GTEST_SKIP() << why;
  if (!codegen::cuda::nvrtc_enabled()) GTEST_SKIP() << "built without the CUDA toolkit";
  for (const ops::CudaWarpGemmTiling& t : {small(1), small(2), ops::CudaWarpGemmTiling{}})
    EXPECT_LT(warp_gemm_error(256, 256, 256, t, test::run_func_on_gpu), 1e-5) << "stages " << t.stages;
}

}  // namespace
}  // namespace loom
