// Matrix products on the GPU's tensor cores (ir::kMmaM16N8K16), built as loop IR directly: the
// warp-level fragments and their lane-by-lane layout are below what the schedule language
// expresses. The function goes through the same host/device split, printer, NVRTC and grid
// interpreter as scheduled kernels.
#pragma once
#include <cstdint>
#include <string>

#include "loom/ir/stmt.h"

namespace loom::ops {

// Each block computes block_m x block_n of C with (block_m / warp_m) x (block_n / warp_n) warps;
// each warp a warp_m x warp_n tile as (warp_m / 16) x (warp_n / 8) mma tiles accumulated in
// registers. A and B pass through shared memory block_k columns / rows at a time, copied by all
// the block's threads in 16-byte pieces; each shared row has `pad` float16 elements more, so the
// eight rows a fragment load touches at once fall in different banks.
struct CudaMmaTiling {
  int block_m = 128, block_n = 128, block_k = 32;
  int warp_m = 64, warp_n = 32;
  int pad = 8;
  // Shared buffers for A's and B's tiles: 1 copies each tile with plain loads between two
  // barriers; 2 or more copy with cp.async, stages - 1 tiles ahead of the one being multiplied.
  int stages = 2;
  // Fragments loaded by the warp with ldmatrix (B's transposed, two 8-column tiles at once: warp_n
  // a multiple of 16), else lane by lane (A's in column pairs).
  bool ldmatrix = true;
};

// C [M, N] float32 = A [M, K] float16 x B [K, N] float16, row-major, products accumulated in
// float32. ScheduleError naming the constraint when a tile does not divide its extent, a warp tile
// is not made of whole 16 x 8 tiles (16 x 16 with ldmatrix), block_k is not a multiple of 16, the
// block's copies do not share evenly over its threads, the block needs more than 1024 threads, or
// its stages need more than 48 KiB of shared memory.
ir::LoweredFunc gemm_f16_tensor_core_cuda(int64_t M, int64_t N, int64_t K, const CudaMmaTiling& t = {},
                                          const std::string& name = "gemm_f16");

}  // namespace loom::ops
