// The float32 GEMM for the GPU built as loop IR directly, in the structure of CUTLASS's SIMT
// kernels: warp tiles whose lanes each compute a tile of C in registers from float4 fragments read
// conflict-free out of shared memory, and the next K step's tiles copied while this one computes
// (B's through cp.async, A's through registers, transposed into shared memory k-major). Compiled,
// interpreted and checked like any lowered function (cuda.md).
#pragma once
#include <cstdint>
#include <string>

#include "loom/ir/stmt.h"

namespace loom::ops {

// Each block computes block_m x block_n of C with (block_m / warp_m) x (block_n / warp_n) warps.
// A warp's 32 lanes stand lanes_m along M and 32 / lanes_m along N; each lane computes
// (warp_m / lanes_m) x (warp_n / lanes_n) elements of C in groups of 4 x 4, its groups 4 lanes
// apart, so a warp's fragment reads are one broadcast float4 per lane row and contiguous float4s
// along N. block_k columns of A and rows of B pass through shared memory per step; each shared row
// of A's k-major copy has `pad` floats more.
struct CudaWarpGemmTiling {
  int block_m = 128, block_n = 128, block_k = 8;
  int warp_m = 32, warp_n = 64;
  int lanes_m = 4;
  int pad = 4;
  // 2: the next step's tiles copied while this one computes, one barrier per step; 1: copy, barrier,
  // compute, barrier.
  int stages = 2;
};

// C [M, N] = A [M, K] x B [K, N], float32, row-major. ScheduleError naming the constraint when a
// tile does not divide its extent, a lane's tile is not whole 4 x 4 groups, the copies do not
// share evenly over the block's threads, or the block needs more than 1024 threads or 48 KiB of
// shared memory.
ir::LoweredFunc gemm_f32_warp_tiled_cuda(int64_t M, int64_t N, int64_t K, const CudaWarpGemmTiling& t = {},
                                         const std::string& name = "gemm_f32");

}  // namespace loom::ops
