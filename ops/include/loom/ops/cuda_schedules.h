// GPU schedules (lowered with schedule::LowerOptions::target_gpu, compiled by codegen/cuda).
#pragma once
#include "loom/schedule/schedule.h"

namespace loom::ops {

// Any computation: every injective intermediate is inlined; every other stage (the outputs and
// the reductions) gets its data-parallel axes fused and split across blocks of `threads` threads
// (blockIdx.x, threadIdx.x), reductions serial inside each thread. Correct for every operator,
// fast for element-wise ones; intermediate reductions are kernels of their own.
void schedule_cuda_generic(schedule::Schedule& s, int threads = 256);

// Direct NCHW convolution `conv` (a reduction over input channels and the kernel window) with an
// element-wise epilogue ending in `out` (bias, ReLU, a residual add; `out` may be `conv` itself):
// each thread computes `channels` output channels of one output pixel in registers (the conv
// stage in local scope, computed inside the output's thread loop), so every input element it loads
// serves all of them; neighbouring threads take neighbouring pixels (coalesced input reads, one
// weight address per warp). Other injective stages are inlined. `channels` must divide the output
// channels (ScheduleError otherwise).
void schedule_conv2d_cuda(schedule::Schedule& s, const ir::Tensor& conv, const ir::Tensor& out, int channels = 8,
                          int threads = 128);

// Row softmax of X [N, M] with block reductions: one block of `threads` threads per row; the row
// max and the sum of exponentials are each reduced in two levels (thread t folds the elements
// t, t + threads, ... into a shared partial, coalesced; thread 0 folds the partials), barriers
// from thread_sync, one kernel for the whole softmax. softmax_cuda builds the tensor expressions,
// schedule_softmax_cuda (on its output) the schedule.
ir::Tensor softmax_cuda(const ir::Tensor& X, int threads = 128, const std::string& name = "softmax");
void schedule_softmax_cuda(schedule::Schedule& s, const ir::Tensor& out);

// C = matmul(A, B) tiled for the GPU: each block computes block_m x block_n of C with
// (block_m / thread_m) x (block_n / thread_n) threads, each a thread_m x thread_n register tile
// (cache_write local); A and B pass through shared memory block_k columns / rows at a time
// (cache_read shared, loaded cooperatively with vector loads of `vector` elements). M, N and K
// must be multiples of the block tile (ScheduleError otherwise).
struct CudaGemmTiling {
  int block_m = 64, block_n = 64, block_k = 8;
  int thread_m = 4, thread_n = 4;
  int vector = 4;
  // A's shared copy stored k-major ([block_k][block_m], storage_order), so a thread's rows of A
  // are contiguous for vector shared loads, as B's columns are.
  bool transpose_a = false;
  // The next block_k step's tiles loaded into registers while this one computes
  // (pragma "prefetch_shared" on the reduction loop; the lowering pass of the same name).
  bool prefetch = false;
};
void schedule_gemm_cuda(schedule::Schedule& s, const ir::Tensor& A, const ir::Tensor& B, const ir::Tensor& C,
                        const CudaGemmTiling& t = {});

}  // namespace loom::ops
