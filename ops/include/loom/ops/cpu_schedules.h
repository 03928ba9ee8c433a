// Tuned CPU schedules for the operators in nn.h, written with the public schedule primitives.
#pragma once
#include <optional>
#include "loom/ops/nn.h"
#include "loom/schedule/schedule.h"

namespace loom::ops {

// How a GEMM reads B: packed into column panels first (matmul_packed), in place (matmul; for a
// few rows of A packing costs as much as the product), or, for one column (N = 1), as dot
// products vectorized along K (matmul_dot_k; a tile of 8 columns would waste 7 lanes).
// docs/cpu_backend.md ("Measurements behind the schedules") has the figures behind this file's
// choices.
enum class GemmForm { Packed, Unpacked, DotK };
const char* to_string(GemmForm f);

struct GemmTiling {
  int mr = 8;                        // rows of C kept in registers
  int nr = 32;                       // columns of C kept in registers (a multiple of the vector width)
  int kc = 256;                      // reduction block kept hot in cache
  int k_unroll = 4;                  // reduction steps unrolled around the register tile (divides K, else 1)
  GemmForm form = GemmForm::Packed;  // DotK: nr is the vector width of the partial sums
};

// The register tile for a target with `float32_lanes` per vector and `vector_registers`
// registers: two vectors of columns (nr = 2 x lanes) and as many rows as leave room for the two B
// vectors and the broadcast A element: mr = min(8, (registers - 3) / 2). AVX2 (8 lanes, 16
// registers): 6 x 16; AVX-512 (16, 32): 8 x 32; NEON (4, 32): 8 x 8. An mr x nr tile of 8 x 32 on
// AVX2 needs 32 accumulators in 16 registers and spills.
GemmTiling gemm_tiling_for(int float32_lanes, int vector_registers);
// For a shape: mr at most M; N = 1 with K a multiple of the lanes: DotK, 4 rows per tile; M <= 4:
// Unpacked, the tile M rows x up to 4 vectors of columns (all of A's rows in registers, B
// streamed once); otherwise Packed.
GemmTiling gemm_tiling_for(int float32_lanes, int vector_registers, int64_t M, int64_t N, int64_t K);

// C = A x B in the tiling's form, and its schedule (any form): what callers should use.
Tensor gemm(const Tensor& A, const Tensor& B, const GemmTiling& t, const std::string& name = "C");
void schedule_gemm_cpu(schedule::Schedule& s, const Tensor& C, const GemmTiling& t);

// Schedules C = matmul_packed(A, B, nr): packs B in parallel, then computes C in mr x nr register
// tiles accumulated in a local cache across the whole reduction, over a parallel outer loop. Any
// M and N: partial tiles at the edges are guarded.
void schedule_matmul_packed_cpu(schedule::Schedule& s, const Tensor& C, const GemmTiling& t = {});

// The register tile of schedule_conv2d_nchw_cpu for a target: oc_block output channels (v =
// oc_block / lanes vectors) x x_block output columns of accumulators, within the registers left
// for the v weight vectors and one broadcast (x_block * v <= registers - v - 1), minimizing loads
// per multiply-add ((v + x_block) / (v * x_block)) times the columns wasted by a last partial
// tile, more accumulators and then larger oc_block on ties; oc_block divides the channels, x_block need not divide the
// row (the lowering's loop partitioning keeps guards out of the full tiles). The reduction runs with the window outside
// the input channels (window_outer), so no broadcast is reused across kernel columns: reuse kept x_block + kw - 1
// broadcasts live and spilled the accumulators. On AVX2, 64 -> 64 channels at 56 columns: 16 x 6. The knobs beyond the
// register tile are what `loom tune` searches (tune/): the order of the reduction loops around the tile, and whether
// rows join the parallel loop (more, smaller tasks).
struct ConvNchwTiling {
  int oc_block = 16, x_block = 16;
  bool window_outer = false;   // reduction order ky, kx, ic (true) or ic, ky, kx (false)
  bool parallel_rows = false;  // parallel over (batch, channel blocks, rows) instead of (batch, channel blocks)
};
ConvNchwTiling conv_nchw_tiling_for(int float32_lanes, int vector_registers, int out_channels, int out_w);

// Schedules Y = conv2d_nchw(...): output channels blocked by `oc_block`, output rows in
// registers along x (vectorized), padding computed per output row block.
void schedule_conv2d_nchw_cpu(schedule::Schedule& s, const Tensor& Y, const ConvNchwTiling& t);
void schedule_conv2d_nchw_cpu(schedule::Schedule& s, const Tensor& Y, int oc_block = 16, int x_block = 16);

}  // namespace loom::ops

namespace loom::ops {

// Schedules for the kernels of whole models (one output tensor, any number of fused stages).
// `lanes` is the target's float32 vector width. Every stage between the main stage and `out`
// that is element-wise or injective is computed inline into `out`.
//
// conv2d (tag "conv2d", weights packed by output-channel blocks): register tiles of output
// channels x a row segment, the reduction around them; fused ops are applied as the tile is
// written.
void schedule_conv2d_fused_cpu(schedule::Schedule& s, const Tensor& conv, const Tensor& out, int lanes);
// Depthwise conv2d (groups = channels, OIHW weights [C, 1, kh, kw]): parallel over channels, the
// padded channel computed once per channel, rows of outputs vectorized along x.
void schedule_depthwise_conv2d_cpu(schedule::Schedule& s, const Tensor& conv, const Tensor& out, int lanes);
// conv2d on NCHWc activations (conv2d_nchwc): register tiles of a row segment x one output-channel
// block, the reduction over input-channel blocks, window and lanes around them; stores of whole
// contiguous vectors. Depthwise: vectors over the channel block, rows in registers, padding
// inline (a select per input read; a padded copy cost as much as the convolution).
// Its register tile: `channel_blocks` output-channel blocks x `x_block` columns (need not divide
// the row: the lowering partitions the loop), chosen like conv_nchw_tiling_for (fewest loads per
// multiply-add times the columns wasted by a partial last tile, within the registers left for
// the weight vectors and a broadcast). AVX2, blocks of 8, 56 columns: 2 blocks x 6 columns.
struct NchwcConvTile {
  int channel_blocks = 1, x_block = 1;
  // For the products of a Winograd convolution (columns are tiles there):
  // schedule_conv2d_winograd_cpu's fused_rows (-1: its default). The direct kernel ignores it.
  int fused_rows = -1;
};
NchwcConvTile nchwc_conv_tile(int lanes, int vector_registers, int64_t channel_blocks, int64_t block, int64_t out_w);
// Blocks of half a vector (8 channels on AVX-512) over rows of an even width: the float kernel of
// schedule_conv2d_nchwc_cpu holds two neighbouring columns of a block in each vector. Its tile
// then counts columns in whole pairs that divide the row: nchwc_paired_columns rounds `x_block`
// columns (a tuning log's) down to such pairs (at least one); the default tile is nchwc_conv_tile's
// over pairs, rounded so.
bool nchwc_pairs_columns(int lanes, int64_t block, int64_t out_w);
int nchwc_paired_columns(int64_t out_w, int x_block);
NchwcConvTile nchwc_paired_conv_tile(int lanes, int vector_registers, int64_t channel_blocks, int64_t out_w);
// Vector registers a grouped int8 conv (layers.h, groups of `group` input channels; 0: float)
// keeps outside its register tile: one for the product and, for byte groups, one for the int16
// ones. Only targets without an accumulating dot product (VNNI) need them; the schedules do not
// know the target's features, so they are kept on every target.
int int8_conv_spare_registers(int group);
// Whether schedule_conv2d_nchwc_cpu runs the input-channel blocks outermost around a block group's
// whole output map (kept in a local buffer): where the group's weights would not stay in L2 and
// its output map fits L1-L2 (wide layers over small maps).
bool nchwc_input_blocks_outer(const Tensor& conv, const Tensor& out, const NchwcConvTile& tile);
// Whether schedule_conv2d_nchwc_cpu's parallel loop takes the output rows outside the block groups,
// as the model's other kernels do (the pool gives each thread the same part of every loop, so a
// thread then reads the rows it wrote): where the conv's weights are no larger than its input map.
// Heavier weights go by block groups, each thread reading only its groups' weights.
bool nchwc_rows_first(const Tensor& conv);
// `tile` (e.g. from a tuning log) replaces nchwc_conv_tile's choice; ScheduleError if its blocks
// do not divide the output's channel blocks or it is not positive.
void schedule_conv2d_nchwc_cpu(schedule::Schedule& s, const Tensor& conv, const Tensor& out, int lanes,
                               int vector_registers, std::optional<NchwcConvTile> tile = std::nullopt);
void schedule_depthwise_nchwc_cpu(schedule::Schedule& s, const Tensor& conv, const Tensor& out, int lanes);
// A conv of interleaved narrow groups (weights [O/b, Cg, kh, kw, b], layers.h): tiles of columns of
// one output block, lane-wise multiply-adds over its Cg input blocks and the taps.
void schedule_interleaved_groups_nchwc_cpu(schedule::Schedule& s, const Tensor& conv, const Tensor& out, int lanes);
// The stages of a Winograd convolution (layers.h, conv2d_winograd_nchwc) in a schedule; undefined
// tensors where they are not there.
struct WinogradStages {
  Tensor pad, in_rows, in, gemm, out_cols, output;
};
WinogradStages winograd_stages(const schedule::Schedule& s);
// The Winograd convolution whose output stage (possibly inlined into `out` with what follows it)
// is in `s`: parallel over tile rows; per tile row the input transform, the alpha^2 products in
// register tiles of `tile` (output blocks x tiles; default nchwc_conv_tile's choice for the tile
// row) and the output transform per output block.
// `fused_rows` > 0: the input transform and the products computed per chunk of that many tile
// rows inside the output's loop (the transformed weights are read once per chunk); 0: each over
// the whole map in its own parallel loop; -1: `tile`'s fused_rows if it has one (>= 0), else
// chunks of one row from 14 tile rows on and 0 below.
void schedule_conv2d_winograd_cpu(schedule::Schedule& s, const Tensor& out, int lanes, int vector_registers,
                                  std::optional<NchwcConvTile> tile = std::nullopt, int fused_rows = -1);
// dense (tag "dense", weights packed [N/b, K, b]): vectors over output blocks; with 4 or more
// rows, gemm_tiling_for's register tile of rows x blocks, parallel over block groups x row tiles;
// with fewer, groups of up to 8 blocks whose accumulators are independent chains.
void schedule_dense_fused_cpu(schedule::Schedule& s, const Tensor& dense, const Tensor& out, int lanes,
                              int vector_registers);
// A product of matrices with batch axes (batch_matmul, tag "matmul"; attention's QKᵀ and AV):
// register tiles of gemm_tiling_for's mr rows x nr columns, the reduction around them, parallel
// over the batch and row tiles; fused element-wise ops are applied as the tile is written.
void schedule_batch_matmul_cpu(schedule::Schedule& s, const Tensor& mm, const Tensor& out, int lanes,
                               int vector_registers);
// Anything else: injective stages inlined, reductions computed at the root, each remaining loop
// nest parallel over its outer axes and vectorized on its innermost axis when that divides.
void schedule_generic_cpu(schedule::Schedule& s, const Tensor& out, int lanes);

}  // namespace loom::ops
