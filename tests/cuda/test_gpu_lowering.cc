// GPU lowering checked without a GPU: thread bindings, shared and local memory, barriers and the
// host/device split, run on the grid interpreter (blocks and threads in barrier-separated phases,
// every global and shared access checked for races) against the naive reference.
#include "common/error_text.h"
#include "cuda_cases.h"
#include "loom/ir/functor.h"
#include "loom/ir/gpu.h"
#include "loom/ir/printer.h"
#include "loom/ops/layers.h"
#include "loom/ops/nn.h"

namespace loom {
namespace {

using namespace loom::ir;
using test::case_data;
using test::lower_gpu;

ops::CudaGemmTiling small_tiling() {
  ops::CudaGemmTiling t;
  t.block_m = 16;
  t.block_n = 16;
  t.block_k = 4;
  t.thread_m = 4;
  t.thread_n = 4;
  return t;
}

LoweredFunc lowered_gemm(const test::Workload& w, const ops::CudaGemmTiling& t) {
  schedule::Schedule s(w.outputs);
  ops::schedule_gemm_cuda(s, w.inputs[0], w.inputs[1], w.outputs[0], t);
  return lower_gpu(s, w, "gemm");
}

TEST(GpuLowering, TiledGemmMatchesTheReferenceOnTheGridInterpreter) {
  auto w = test::matmul(32, 48, 16);
  LoweredFunc f = lowered_gemm(w, small_tiling());
  std::string ir = to_string(f);
  EXPECT_NE(ir.find("in shared"), std::string::npos) << ir;
  EXPECT_NE(ir.find("in local"), std::string::npos) << ir;
  // One barrier after the cooperative loads, one at the end of the reduction loop's body.
  EXPECT_EQ(test::count_occurrences(ir, kSyncThreads), 2u) << ir;
  GpuSplit split = split_gpu_kernels(f);
  ASSERT_EQ(split.kernels.size(), 1u);
  EXPECT_EQ(split.kernels[0].grid, (std::array<int64_t, 3>{3, 2, 1}));
  EXPECT_EQ(split.kernels[0].block, (std::array<int64_t, 3>{4, 4, 1}));
  // The shared copies cover the whole block tile (thread indices relaxed), not one thread's rows.
  EXPECT_EQ(split.kernels[0].shared_bytes, (16 * 4 + 4 * 16) * 4);
  auto d = case_data(w);
  interpret_grid(f, d.args);
  EXPECT_TRUE(test::arrays_close(d.args[2], d.want[0], 1e-5, 1e-5));
}

TEST(GpuLowering, PrefetchedTilesMatchAndKeepTheirBarriers) {
  auto w = test::matmul(32, 32, 16);  // four reduction steps of 4
  ops::CudaGemmTiling t = small_tiling();
  t.prefetch = true;
  LoweredFunc f = lowered_gemm(w, t);
  std::string ir = to_string(f);
  EXPECT_NE(ir.find("k.c.outer.prefetch"), std::string::npos) << ir;
  // Before the loop (after the first commit), between compute and commit, at the end of the body.
  EXPECT_EQ(test::count_occurrences(ir, kSyncThreads), 3u) << ir;
  auto d = case_data(w);
  interpret_grid(f, d.args);
  EXPECT_TRUE(test::arrays_close(d.args[2], d.want[0], 1e-5, 1e-5));
}

TEST(GpuLowering, TransposedSharedCopyOfAMatchesToo) {
  auto w = test::matmul(32, 32, 16);
  ops::CudaGemmTiling t = small_tiling();
  t.transpose_a = true;
  LoweredFunc f = lowered_gemm(w, t);
  auto d = case_data(w);
  interpret_grid(f, d.args);
  EXPECT_TRUE(test::arrays_close(d.args[2], d.want[0], 1e-5, 1e-5));
}

// Drops every barrier: the grid interpreter must see the race it opens.
Stmt without_barriers(const Stmt& s) {
  struct M : IRMutator {
    Stmt mutate_evaluate(const Stmt& st, const EvaluateNode* op) override {
      return is_sync_threads(st) ? no_op() : IRMutator::mutate_evaluate(st, op);
    }
  } m;
  return m.mutate(s);
}

TEST(GpuLowering, AMissingBarrierIsARaceOnTheGridInterpreter) {
  auto w = test::matmul(16, 16, 8);
  LoweredFunc f = lowered_gemm(w, small_tiling());
  f.body = without_barriers(f.body);
  auto d = case_data(w);
  std::string err = test::error_text<RuntimeError>([&] { interpret_grid(f, d.args); });
  EXPECT_NE(err.find("race on shared buffer"), std::string::npos) << err;
  EXPECT_NE(err.find("__syncthreads is missing"), std::string::npos) << err;
  // The plain interpreter, which runs threads one after another, cannot tell.
  interpret(f, d.args);
}

TEST(GpuLowering, OnlyTheEndOfLoopBarrierMissingIsAlsoARace) {
  auto w = test::matmul(16, 16, 8);  // two reduction steps of 4
  LoweredFunc f = lowered_gemm(w, small_tiling());
  // Keep the barrier between load and compute, drop the one that guards the next iteration's load.
  struct M : IRMutator {
    Stmt mutate_for(const Stmt& st, const ForNode* op) override {
      Stmt body = mutate(op->body);
      if (auto* q = body.as<SeqNode>(); q && op->for_kind == ForKind::Serial && is_sync_threads(q->seq.back())) {
        std::vector<Stmt> kids(q->seq.begin(), q->seq.end() - 1);
        body = seq(kids);
      }
      return for_loop(op->var, op->min, op->extent, op->for_kind, body, op->thread_tag);
    }
  } m;
  f.body = m.mutate(f.body);
  auto d = case_data(w);
  std::string err = test::error_text<RuntimeError>([&] { interpret_grid(f, d.args); });
  EXPECT_NE(err.find("race on shared buffer"), std::string::npos) << err;
}

TEST(GpuLowering, GenericScheduleRunsSoftmaxAsSeveralKernels) {
  auto w = test::softmax(5, 37);
  schedule::Schedule s(w.outputs);
  ops::schedule_cuda_generic(s, 32);
  LoweredFunc f = lower_gpu(s, w, "softmax");
  GpuSplit split = split_gpu_kernels(f);
  EXPECT_GE(split.kernels.size(), 3u);  // max, sum of exp, normalise
  EXPECT_GE(split.workspaces.size(), 2u);
  auto d = case_data(w);
  interpret_grid(f, d.args);
  EXPECT_TRUE(test::arrays_close(d.args[1], d.want[0], 1e-5, 1e-6));
}

TEST(GpuLowering, BlockReductionSoftmaxIsOneKernelWithBarriers) {
  Tensor X = placeholder({3, 45}, DataType::Float(32), "X");
  Tensor Y = ops::softmax_cuda(X, 16, "Y");
  test::Workload w{{X}, {Y}};
  schedule::Schedule s(w.outputs);
  ops::schedule_softmax_cuda(s, Y);
  LoweredFunc f = lower_gpu(s, w, "softmax");
  GpuSplit split = split_gpu_kernels(f);
  ASSERT_EQ(split.kernels.size(), 1u);
  EXPECT_EQ(split.kernels[0].grid, (std::array<int64_t, 3>{3, 1, 1}));
  EXPECT_EQ(split.kernels[0].block, (std::array<int64_t, 3>{16, 1, 1}));
  EXPECT_GE(test::count_occurrences(to_string(f), kSyncThreads), 4u) << to_string(f);
  auto d = case_data(w);
  // The two-level form against the plain softmax's reference.
  auto plain = test::softmax(3, 45);
  std::map<const Operation*, NDArray> in{{plain.inputs[0].op().get(), d.args[0]}};
  NDArray want = reference_eval(plain.outputs, in)[0];
  interpret_grid(f, d.args);
  EXPECT_TRUE(test::arrays_close(d.args[1], want, 1e-5, 1e-6));
}

TEST(GpuLowering, GenericScheduleRunsAPaddedConvolution) {
  auto w = test::conv2d_nchw(1, 3, 6, 4, 3, 1, 1);
  schedule::Schedule s(w.outputs);
  ops::schedule_cuda_generic(s, 64);
  LoweredFunc f = lower_gpu(s, w, "conv");
  auto d = case_data(w);
  interpret_grid(f, d.args);
  EXPECT_TRUE(test::arrays_close(d.args[2], d.want[0], 1e-5, 1e-5));
}

TEST(GpuLowering, RegisterTiledConvolutionMatchesWithAndWithoutAnEpilogue) {
  for (bool epilogue : {false, true}) {
    auto w = test::conv2d_nchw(1, 3, 7, 8, 3, 1, 1);
    Tensor conv = w.outputs[0];
    if (epilogue) {
      Tensor y = compute(
          {1, 8, 7, 7}, [&](Var n, Var f, Var a, Var b) { return max(conv(n, f, a, b), 0.0f); }, "relu");
      w.outputs = {y};
    }
    schedule::Schedule s(w.outputs);
    ops::schedule_conv2d_cuda(s, conv, w.outputs[0], 4, 32);
    LoweredFunc f = lower_gpu(s, w, "conv");
    EXPECT_NE(to_string(f).find("in local"), std::string::npos);
    auto d = case_data(w);
    interpret_grid(f, d.args);
    EXPECT_TRUE(test::arrays_close(d.args[2], d.want[0], 1e-5, 1e-5)) << (epilogue ? "with" : "without");
  }
}

TEST(GpuLowering, DepthwiseConvolutionWithBiasMatches) {
  // MobileNet's depthwise layer: groups = channels, stride 2, bias, ReLU6-style clip.
  Tensor X = placeholder({1, 8, 9, 9}, DataType::Float(32), "X");
  Tensor W = placeholder({8, 1, 3, 3}, DataType::Float(32), "W");
  Tensor B = placeholder({8}, DataType::Float(32), "B");
  ops::Conv2dParams p;
  p.strides = {2, 2};
  p.pads = {1, 1, 1, 1};
  p.groups = 8;
  Tensor biased = ops::conv2d(X, W, B, p, "dw");
  Tensor Y = compute(
      {1, 8, 5, 5}, [&](Var n, Var c, Var y, Var x) { return min(max(biased(n, c, y, x), 0.0f), 6.0f); }, "clip");
  Tensor conv;
  for (auto& op : topo_sort({Y}))
    if (op->tag == "conv2d") conv = Tensor(op);
  ASSERT_TRUE(conv.defined());
  test::Workload w{{X, W, B}, {Y}};
  schedule::Schedule s(w.outputs);
  ops::schedule_conv2d_cuda(s, conv, Y, 4, 32);
  LoweredFunc f = lower_gpu(s, w, "depthwise");
  EXPECT_EQ(split_gpu_kernels(f).kernels.size(), 1u);
  auto d = case_data(w);
  interpret_grid(f, d.args);
  EXPECT_TRUE(test::arrays_close(d.args[3], d.want[0], 1e-5, 1e-5));
}

TEST(GpuLowering, BlocksWritingOneElementRace) {
  // Every block's thread 0 writes C[0]: blocks are not ordered within a kernel.
  Tensor A = placeholder({64}, DataType::Float(32), "A");
  Tensor C = compute(
      {64}, [&](Var i) { return A(i) * 2.0f; }, "C");
  test::Workload w{{A}, {C}};
  schedule::Schedule s(w.outputs);
  ops::schedule_cuda_generic(s, 16);
  LoweredFunc f = lower_gpu(s, w, "scale");
  auto d = case_data(w);
  interpret_grid(f, d.args);  // the correct function passes
  // Index C by the thread alone: each block's threads write elements 0..15, which every block writes.
  struct M : IRMutator {
    Expr tx;
    Stmt mutate_for(const Stmt& st, const ForNode* op) override {
      if (op->thread_tag == "threadIdx.x") tx = op->var;
      return IRMutator::mutate_for(st, op);
    }
    Stmt mutate_store(const Stmt& st, const StoreNode* op) override { return store(op->buffer, op->value, tx); }
  } m;
  f.body = m.mutate(f.body);
  std::string err = test::error_text<RuntimeError>([&] { interpret_grid(f, d.args); });
  EXPECT_NE(err.find("in the same kernel (blocks are not ordered)"), std::string::npos) << err;
}

TEST(GpuLowering, AStageBindingOnlyThreadIdxXStoresOncePerElement) {
  // C (4 x 16) on a 16 x 4 block; A's shared copy binds threadIdx.x alone, so only the threads with
  // threadIdx.y == 0 store it (the other three would write the same elements at the same time).
  Tensor A = placeholder({16}, DataType::Float(32), "A");
  Tensor C = compute(
      {4, 16}, [&](Var i, Var j) { return A(j) * cast(DataType::Float(32), i + 1); }, "C");
  test::Workload w{{A}, {C}};
  schedule::Schedule s(w.outputs);
  Tensor AS = s.cache_read(A, scope::kShared, {C});
  auto [io, ii] = s[C].split(s[C].axis(0), 4);
  s[C].bind(io, "blockIdx.x");
  s[C].bind(ii, "threadIdx.y");
  s[C].bind(s[C].axis(1), "threadIdx.x");
  s[AS].compute_at(s[C], io);
  s[AS].bind(s[AS].axis(0), "threadIdx.x");
  LoweredFunc f = lower_gpu(s, w, "scale_rows");
  auto d = case_data(w);
  interpret_grid(f, d.args);
  EXPECT_TRUE(test::arrays_close(d.args[1], d.want[0], 1e-6, 1e-6));
  std::string src = to_string(f);
  EXPECT_EQ(test::count_occurrences(src, kSyncThreads), 1u) << src;
}

TEST(GpuLowering, UnboundStageIsAnErrorNamingIt) {
  auto w = test::vector_add(64);
  schedule::Schedule s(w.outputs);
  std::string err = test::error_text<LoweringError>([&] { lower_gpu(s, w, "add"); });
  EXPECT_NE(err.find("'C'"), std::string::npos) << err;
  EXPECT_NE(err.find("bind"), std::string::npos) << err;
}

TEST(GpuLowering, TooManyThreadsPerBlockIsAnErrorNamingTheLimit) {
  auto w = test::vector_add(4096);
  schedule::Schedule s(w.outputs);
  ops::schedule_cuda_generic(s, 2048);
  std::string err = test::error_text<LoweringError>([&] { lower_gpu(s, w, "add"); });
  EXPECT_NE(err.find("add_kernel0 (writes C)"), std::string::npos) << err;
  EXPECT_NE(err.find("limit of 1024 threads per block"), std::string::npos) << err;
}

TEST(GpuLowering, TooMuchSharedMemoryIsAnErrorNamingTheLimit) {
  auto w = test::matmul(256, 256, 64);
  ops::CudaGemmTiling t;
  t.block_m = 128;
  t.block_n = 128;
  t.block_k = 64;  // (128 + 128) x 64 floats = 64 KiB
  t.thread_m = 8;
  t.thread_n = 8;
  std::string err = test::error_text<LoweringError>([&] { lowered_gemm(w, t); });
  EXPECT_NE(err.find("65536 bytes of shared memory exceed the limit of 49152"), std::string::npos) << err;
}

}  // namespace
}  // namespace loom
