// CUDA C from lowered GPU functions, compiled by NVRTC and ptxas for sm_90 in every build that has
// the CUDA toolkit (no GPU needed): the source's shape, the cubin and PTX, ptxas' resource report.
#include <filesystem>
#include <fstream>

#include "common/error_text.h"
#include "common/temp_dir.h"
#include "cuda_cases.h"
#include "loom/codegen/cuda.h"
#include "loom/ir/buffer.h"
#include "loom/ops/nn.h"

namespace loom {
namespace {

using namespace loom::ir;
using test::lower_gpu;

codegen::cuda::CudaOptions no_cache() {
  codegen::cuda::CudaOptions o;
  o.use_cache = false;
  return o;
}

LoweredFunc gemm_func(int m, int n, int k, const ops::CudaGemmTiling& t = {}) {
  auto w = test::matmul(m, n, k);
  schedule::Schedule s(w.outputs);
  ops::schedule_gemm_cuda(s, w.inputs[0], w.inputs[1], w.outputs[0], t);
  return lower_gpu(s, w, "gemm");
}

TEST(CudaCodegen, TiledGemmSourceHasSharedMemoryBarriersAndVectorMoves) {
  runtime::CudaProgram p = codegen::cuda::emit({gemm_func(128, 128, 64)}, no_cache());
  EXPECT_NE(p.source.find("__shared__ __align__(16) float A_shared"), std::string::npos) << p.source;
  EXPECT_NE(p.source.find("__syncthreads();"), std::string::npos) << p.source;
  EXPECT_NE(p.source.find("const float* __restrict__ A"), std::string::npos) << p.source;
  EXPECT_NE(p.source.find("float* __restrict__ C"), std::string::npos) << p.source;
  EXPECT_NE(p.source.find("*(float4*)"), std::string::npos) << p.source;
  ASSERT_EQ(p.functions.size(), 1u);
  ASSERT_EQ(p.functions[0].kernels.size(), 1u);
  auto& k = p.functions[0].kernels[0];
  EXPECT_EQ(k.grid, (std::array<uint32_t, 3>{2, 2, 1}));
  EXPECT_EQ(k.block, (std::array<uint32_t, 3>{16, 16, 1}));
  EXPECT_EQ(k.buffers, (std::vector<uint32_t>{0, 1, 2}));
}

TEST(CudaCodegen, NvrtcAndPtxasCompileTheGemmForSm90) {
  if (!codegen::cuda::nvrtc_enabled()) GTEST_SKIP() << "built without the CUDA toolkit";
  runtime::CudaProgram p = codegen::cuda::build({gemm_func(128, 128, 64)}, no_cache());
  EXPECT_EQ(p.arch, "sm_90");
  EXPECT_NE(p.ptx.find(".target sm_90"), std::string::npos);
  EXPECT_GT(p.cubin.size(), 1000u);
  EXPECT_EQ(p.cubin.substr(0, 4), std::string("\x7f"
                                              "ELF"));
  auto& k = p.functions[0].kernels[0];
  EXPECT_GT(k.registers, 8) << p.compile_log;
  EXPECT_LE(k.registers * 256, 65536) << p.compile_log;
  EXPECT_NE(p.compile_log.find("bytes smem"), std::string::npos) << p.compile_log;
  std::cout << "gemm_kernel0: " << k.registers << " registers, " << k.shared_bytes << " bytes shared, NVRTC "
            << codegen::cuda::last_compile_seconds() << " s\n";
}

TEST(CudaCodegen, EveryGenericWorkloadCompiles) {
  if (!codegen::cuda::nvrtc_enabled()) GTEST_SKIP() << "built without the CUDA toolkit";
  std::vector<test::Workload> ws = {test::softmax(8, 100), test::conv2d_nchw(1, 8, 14, 16, 3, 2, 1),
                                    test::max_pool2d(4, 16, 3, 2), test::relu(33, 65)};
  std::vector<LoweredFunc> fs;
  int i = 0;
  for (auto& w : ws) {
    schedule::Schedule s(w.outputs);
    ops::schedule_cuda_generic(s, 128);
    fs.push_back(lower_gpu(s, w, "f" + std::to_string(i++)));
  }
  runtime::CudaProgram p = codegen::cuda::build(fs, no_cache());  // one module for all of them
  EXPECT_EQ(p.functions.size(), ws.size());
  for (auto& f : p.functions)
    for (auto& k : f.kernels) EXPECT_GT(k.registers, 0) << k.name << "\n" << p.compile_log;
}

TEST(CudaCodegen, RegistersOverTheLimitAreAnErrorNamingTheKernel) {
  if (!codegen::cuda::nvrtc_enabled()) GTEST_SKIP() << "built without the CUDA toolkit";
  auto o = no_cache();
  o.limits.max_registers_per_block = 256 * 8;  // 8 registers per thread
  std::string err = test::error_text<LoweringError>([&] { codegen::cuda::build({gemm_func(64, 64, 16)}, o); });
  EXPECT_NE(err.find("kernel gemm_kernel0 needs"), std::string::npos) << err;
  EXPECT_NE(err.find("over the limit of 2048"), std::string::npos) << err;
}

TEST(CudaCodegen, TheDiskCacheAnswersTheSecondCompile) {
  if (!codegen::cuda::nvrtc_enabled()) GTEST_SKIP() << "built without the CUDA toolkit";
  test::TestDir dir;
  codegen::cuda::CudaOptions o;
  o.cache_dir = dir.path();
  runtime::CudaProgram a = codegen::cuda::build({gemm_func(64, 64, 16)}, o);
  EXPECT_GT(codegen::cuda::last_compile_seconds(), 0.0);
  runtime::CudaProgram b = codegen::cuda::build({gemm_func(64, 64, 16)}, o);
  EXPECT_EQ(codegen::cuda::last_compile_seconds(), 0.0);
  EXPECT_EQ(a.cubin, b.cubin);
  EXPECT_EQ(a.functions[0].kernels[0].registers, b.functions[0].kernels[0].registers);
  // A damaged entry fails its digest: compiled again and written again.
  std::vector<std::filesystem::path> entries;
  for (auto& e : std::filesystem::directory_iterator(dir.path())) entries.push_back(e.path());
  ASSERT_EQ(entries.size(), 1u);
  {
    std::fstream f(entries[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(std::filesystem::file_size(entries[0]) / 2));
    f.put('\x5a');
  }
  runtime::CudaProgram d = codegen::cuda::build({gemm_func(64, 64, 16)}, o);
  EXPECT_GT(codegen::cuda::last_compile_seconds(), 0.0);
  EXPECT_EQ(d.cubin, a.cubin);
  codegen::cuda::build({gemm_func(64, 64, 16)}, o);
  EXPECT_EQ(codegen::cuda::last_compile_seconds(), 0.0);
  o.arch = "sm_80";  // another architecture is another entry
  runtime::CudaProgram c = codegen::cuda::build({gemm_func(64, 64, 16)}, o);
  EXPECT_GT(codegen::cuda::last_compile_seconds(), 0.0);
  EXPECT_NE(c.ptx.find(".target sm_80"), std::string::npos);
}

TEST(CudaCodegen, UnsupportedElementTypeIsATypeError) {
  // Tensors cannot be float8; a buffer made directly in the loop IR can.
  Buffer a = make_buffer("A", DataType::Float(8), {Expr(64)});
  Var i("i", DataType::Int(32)), b("b", DataType::Int(32));
  Stmt body =
      for_loop(i, 0, Expr(64), ForKind::ThreadBinding, store(a, load(DataType::Float(8), a, i), i), "threadIdx.x");
  LoweredFunc f{"add8", {a}, for_loop(b, 0, Expr(1), ForKind::ThreadBinding, body, "blockIdx.x")};
  std::string err = test::error_text<TypeError>([&] { codegen::cuda::emit({f}); });
  EXPECT_NE(err.find("element type float8 is not supported (float16/32/64, integers)"), std::string::npos) << err;
}

}  // namespace
}  // namespace loom
