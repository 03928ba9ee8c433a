// Schedules that map the blocked int8 operators of quantized.h onto a GEMM-block accelerator:
// operands are copied into the accelerator's scratchpads with DMA (pragma dma_copy), the
// innermost block product is tensorized onto the GEMM intrinsic, requantization runs as ALU
// operations in the accumulator scope (pragma alu), and an outer loop is split into virtual
// threads so loads of one context overlap compute of the other.
//
// One chooser per operator picks a legal tiling for any legal shape (choose_conv_tiling,
// choose_add_tiling, choose_dense_tiling), one checker says why a hand-made tiling is not
// (check_conv_tiling, check_dense_tiling), and the schedules take the tiling explicitly. Tiling
// factors must divide what they tile (no tails are emitted), and every virtual-thread context
// must fit every scratchpad.
#pragma once
#include "loom/ops/quantized.h"
#include "loom/schedule/schedule.h"

namespace loom::ops {

// The accelerator's GEMM block: out[b, o] += int32(inp[b, k]) * int32(wgt[o, k]).
schedule::TensorIntrin accel_gemm_intrin(const Blocking& blocking);

// A tile of a blocked activation output [N/b, C/bo, H, W, b, bo]. The factors must divide:
// h_block the output rows, w_block the output columns, oc_blocks x virtual_threads the
// output-channel blocks.
struct AccelConvTiling {
  int h_block = 7;          // output rows per tile
  int w_block = 14;         // output columns per tile
  int oc_blocks = 1;        // output-channel blocks per tile (per virtual thread)
  int virtual_threads = 2;  // contexts interleaved over output-channel tiles (1 = off)
};

// conv2d_int8_blocked on the accelerator with `tiling` (from choose_conv_tiling, or checked with
// check_conv_tiling): per tile, the input window and the weights are loaded per input-channel
// block, the GEMM block is tensorized, requantization runs on the ALU and the int8 tile is stored.
// Throws ScheduleError when a factor does not divide (the scratchpads are check_conv_tiling's).
void schedule_conv2d_int8_accel(schedule::Schedule& s, const QuantizedStages& q, const Blocking& blocking,
                                const AccelConvTiling& tiling);

// Scratchpad capacities in entries (AccelConfig::*_depth()), for choosing tilings.
struct AccelLimits {
  int64_t inp = 0, wgt = 0, acc = 0;
};

// What a convolution tiling must fit: its output, blocks and window. Name the fields
// (ConvShape{.out_h = 14, .out_w = 14, .oc_blocks = 4, .ic_blocks = 4}) or take them from the
// operator's tensors (conv_shape_of), so a field cannot land in its neighbour's place.
struct ConvShape {
  int out_h = 1, out_w = 1, oc_blocks = 1, ic_blocks = 1;
  int kernel_h = 3, kernel_w = 3, stride = 1;
  bool bias = false;            // the tile's bias entries live in the accumulator scratchpad too
  bool channel_shifts = false;  // and so do per-channel shift amounts (a per-channel requantization)
  int weight_passes = 1;        // weights as passes of narrower digits: P x the weights and accumulators
};
// The shape conv2d_int8_blocked's stages compute: output rows, columns and channel blocks from
// the output [N/b, C/bo, H, W, b, bo], input-channel blocks and kernel from the weights
// [O/bo, C/bi, kh, kw, bo, bi]; `stride` as the operator was built with, `bias` when its tiles
// hold bias entries, `channel_shifts` when q shifts by a tensor. Throws ScheduleError when the
// stages are not a blocked conv.
ConvShape conv_shape_of(const QuantizedStages& q, int stride, bool bias);
// Throws ScheduleError naming each field of `shape` that differs from conv_shape_of(q, stride, ..):
// a tiling chosen for another shape would overflow a scratchpad or leave tiles out.
void check_conv_shape(const ConvShape& shape, const QuantizedStages& q, int stride);
// Throws ScheduleError naming what does not divide or which scratchpad overflows (entries needed,
// entries there) and what to change.
void check_conv_tiling(const ConvShape& shape, const AccelConvTiling& tiling, const AccelLimits& limits);
// A legal tiling for any legal shape: rows of 7 (or the whole height), 14-wide columns where they
// divide, `virtual_threads` contexts over output-channel tiles when there are enough, and as many
// output-channel blocks per tile as the accumulator holds, when that fits every scratchpad; else
// the legal tiling (factors that divide, every context within every scratchpad, with fewer
// contexts if needed) with the least estimated load traffic and instruction overhead. Throws
// ScheduleError for sizes below 1, or naming the scratchpad when not even a 1x1 tile of one block
// fits.
AccelConvTiling choose_conv_tiling(const ConvShape& shape, int virtual_threads, const AccelLimits& limits);
// The tiling of schedule_add_int8_accel for an out_h x out_w activation of `channel_blocks`
// blocks: one channel block per tile, the largest tile (whole rows on ties) for which both
// operands' input tiles and the widened operands with the stages between them fit in every
// context (half the input, a quarter of the accumulator scratchpad), with one context if
// `virtual_threads` do not divide the blocks or their identity blocks (two weight entries each)
// do not fit. Throws ScheduleError when not one entry fits.
struct AddShape {
  int out_h = 1, out_w = 1, channel_blocks = 1;
};
AccelConvTiling choose_add_tiling(const AddShape& shape, int virtual_threads, const AccelLimits& limits);
[[deprecated(
    "use choose_add_tiling(AddShape{.out_h, .out_w, .channel_blocks}, virtual_threads, "
    "limits)")]] inline AccelConvTiling
choose_add_tiling(int out_h, int out_w, int channel_blocks, int virtual_threads, const AccelLimits& limits) {
  return choose_add_tiling(AddShape{out_h, out_w, channel_blocks}, virtual_threads, limits);
}
// add_int8_widening on activations [N/b, C/bi, H, W, b, bi]: per output tile (h_block x w_block
// of one channel block) both operands and the identity block are loaded, widened by a GEMM each,
// added and requantized on the ALU in place, and stored; channel blocks split over virtual threads.
void schedule_add_int8_accel(schedule::Schedule& s, const AddWidenStages& add, const Blocking& blocking,
                             const AccelConvTiling& tiling);

// Dense layers are matrix-vector products at small batch: every weight entry is used once, so the
// layer is bound by loading weights. Chunks of oc_blocks output-channel blocks load their
// weights for ic_blocks input-channel blocks in one DMA, and one GEMM instruction runs the chunk.
// The factors must divide: ic_blocks the layer's input-channel blocks, oc_blocks x
// virtual_threads its output-channel blocks.
struct AccelDenseTiling {
  int oc_blocks = 1;        // output-channel blocks per chunk (per virtual thread)
  int ic_blocks = 1;        // input-channel blocks per load (a divisor of the layer's)
  int virtual_threads = 1;  // contexts interleaved over chunks
};
// The largest chunks that fit the scratchpads for every context: all input blocks per load if they
// fit, then as many output blocks as fit; `virtual_threads` contexts where they divide the
// output blocks, else one. Legal for any legal shape; throws ScheduleError for sizes below 1, or
// naming the scratchpads when not even one block fits.
struct DenseShape {
  int batch_blocks = 1, ic_blocks = 1, oc_blocks = 1;
  bool channel_shifts = false;  // per-channel shift amounts beside the bias in the accumulators
};
AccelDenseTiling choose_dense_tiling(const DenseShape& shape, int virtual_threads, const AccelLimits& limits);
// Throws ScheduleError naming the factor that does not divide or the scratchpad that overflows
// (entries needed, entries there).
void check_dense_tiling(const DenseShape& shape, const AccelDenseTiling& tiling, const AccelLimits& limits);
[[deprecated(
    "use choose_dense_tiling(DenseShape{.batch_blocks, .ic_blocks, .oc_blocks}, virtual_threads, "
    "limits)")]] inline AccelDenseTiling
choose_dense_tiling(int batch_blocks, int ic_blocks, int oc_blocks, int virtual_threads, const AccelLimits& limits) {
  return choose_dense_tiling(DenseShape{batch_blocks, ic_blocks, oc_blocks}, virtual_threads, limits);
}
[[deprecated("use check_dense_tiling(DenseShape{.batch_blocks, .ic_blocks, .oc_blocks}, tiling, limits)")]] inline void
check_dense_tiling(int batch_blocks, int ic_blocks, int oc_blocks, const AccelDenseTiling& tiling,
                   const AccelLimits& limits) {
  check_dense_tiling(DenseShape{batch_blocks, ic_blocks, oc_blocks}, tiling, limits);
}
// dense_int8_blocked on the accelerator: per chunk of output blocks, input and weights loaded per
// ic_blocks input blocks, one GEMM instruction per chunk. Throws ScheduleError when a factor does
// not divide (the scratchpads are check_dense_tiling's).
void schedule_dense_int8_accel(schedule::Schedule& s, const QuantizedStages& q, const Blocking& blocking,
                               const AccelDenseTiling& tiling);

}  // namespace loom::ops
