// Schedules that map the blocked int8 operators of quantized.h onto a GEMM-block accelerator:
// operands are copied into the accelerator's scratchpads with DMA (pragma dma_copy), the
// innermost block product is tensorized onto the GEMM intrinsic, requantization runs as ALU
// operations in the accumulator scope (pragma alu), and an outer loop is split into virtual
// threads so loads of one context overlap compute of the other.
#pragma once
#include "loom/ops/quantized.h"
#include "loom/schedule/schedule.h"

namespace loom::ops {

// The accelerator's GEMM block: out[b, o] += int32(inp[b, k]) * int32(wgt[o, k]).
schedule::TensorIntrin accel_gemm_intrin(const Blocking& blocking);

struct AccelConvTiling {
  int h_block = 7;          // output rows per tile
  int w_block = 14;         // output columns per tile
  int oc_blocks = 1;        // output-channel blocks per tile (per virtual thread)
  int virtual_threads = 2;  // contexts interleaved over output-channel tiles (1 = off)
};

// A tiling for an out_h x out_w output with `oc_blocks` output-channel blocks: rows of 7 (or
// the whole height), 14-wide columns where they divide, virtual threads over output-channel
// tiles when there are enough, and as many output-channel blocks per tile as the accumulator
// scratchpad (acc_depth entries) holds for every context — each one reuses the tile's input.
AccelConvTiling choose_conv_tiling(int out_h, int out_w, int oc_blocks, int virtual_threads, int64_t acc_depth);

void schedule_conv2d_int8_accel(schedule::Schedule& s, const QuantizedStages& q, const Blocking& blocking,
                                const AccelConvTiling& tiling = {});

// Scratchpad capacities in entries (AccelConfig::*_depth()), for choosing tilings.
struct AccelLimits {
  int64_t inp = 0, wgt = 0, acc = 0;
};

// What a convolution tiling must fit: its output, blocks and window.
struct ConvShape {
  int out_h = 1, out_w = 1, oc_blocks = 1, ic_blocks = 1;
  int kernel_h = 3, kernel_w = 3, stride = 1;
  bool bias = false;  // the tile's bias entries live in the accumulator scratchpad too
};
// Throws ScheduleError naming what does not divide or which scratchpad overflows (entries needed,
// entries there) and what to change.
void check_conv_tiling(const ConvShape& shape, const AccelConvTiling& tiling, const AccelLimits& limits);
// A legal tiling: the default heuristic above when it fits, else the legal tiling (factors that
// divide, every context within every scratchpad) with the least estimated load traffic and
// instruction overhead. Throws ScheduleError naming the scratchpad when not even a 1x1 tile of
// one block fits.
AccelConvTiling choose_conv_tiling(const ConvShape& shape, int virtual_threads, const AccelLimits& limits);
// The tiling of schedule_add_int8_accel: one channel block per tile, sized so both operands'
// input tiles and the widened operands with the stages between them fit (half the input, a
// quarter of the accumulator scratchpad per tile).
AccelConvTiling choose_add_tiling(int out_h, int out_w, int channel_blocks, int virtual_threads,
                                  const AccelLimits& limits);
// add_int8_widening on activations [N/b, C/bi, H, W, b, bi]: per output tile (h_block x w_block
// of one channel block) both operands and the identity block are loaded, widened by a GEMM each,
// added and requantized on the ALU in place, and stored; channel blocks split over virtual threads.
void schedule_add_int8_accel(schedule::Schedule& s, const AddWidenStages& add, const Blocking& blocking,
                             const AccelConvTiling& tiling = {});

// One output-channel block at a time, its input and weights loaded per input-channel block (the
// simple form; each GEMM instruction does one block product).
void schedule_dense_int8_accel(schedule::Schedule& s, const QuantizedStages& q, const Blocking& blocking,
                               int virtual_threads = 1);

// Dense layers are matrix-vector products at small batch: every weight entry is used once, so the
// layer is bound by loading weights. Chunks of oc_blocks output-channel blocks load their
// weights for ic_blocks input-channel blocks in one DMA, and one GEMM instruction runs the chunk.
struct AccelDenseTiling {
  int oc_blocks = 1;        // output-channel blocks per chunk (per virtual thread)
  int ic_blocks = 1;        // input-channel blocks per load (a divisor of the layer's)
  int virtual_threads = 1;  // contexts interleaved over chunks
};
// The largest chunks that fit the scratchpads for every context: all input blocks per load if they
// fit, then as many output blocks as fit; virtual threads where they divide the chunks. Throws
// ScheduleError naming the scratchpad when not even one block fits.
AccelDenseTiling choose_dense_tiling(int batch_blocks, int ic_blocks, int oc_blocks, int virtual_threads,
                                     const AccelLimits& limits);
void schedule_dense_int8_accel(schedule::Schedule& s, const QuantizedStages& q, const Blocking& blocking,
                               const AccelDenseTiling& tiling);

}  // namespace loom::ops
