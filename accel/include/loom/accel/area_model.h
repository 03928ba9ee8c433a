// An analytical area model of the accelerator RTL on Xilinx 7-series parts, so design-space sweeps
// need not synthesize every point: DSP48s from the GEMM core's structure (k products per DSP48,
// one, or LUTs: gemm_multiplier_plan) and the ALU's multiplier lanes, BRAM36 tiles from each
// scratchpad's width and depth (the cheapest BRAM aspect ratio), LUTs and flip-flops linear in the
// GEMM core's products and the vector lanes, with terms for the operand and accumulator widths. The constants are
// fitted to `loom hw-report` (yosys synth_xilinx) on a few configs; docs/perf_model.md gives the data and the model's
// error on each.
#pragma once
#include "loom/accel/config.h"
#include "loom/accel/hw_params.h"

namespace loom::accel {

struct AreaEstimate {
  double lut = 0, ff = 0, dsp = 0, bram36 = 0;
};

// The GEMM core as `rtl` builds it (gemm_multiplier_plan: packed DSP48s, plain multipliers or LUTs).
AreaEstimate estimate_area(const AccelConfig& config, const RtlOptions& rtl = {});

// The LUTs of SHRSAT's saturation in the core's write stage, which estimate_area includes: a
// measured increment on top of the fit, whose reports predate it.
double saturation_luts(const AccelConfig& config);

// BRAM36 tiles of one memory of `depth` entries of `width` bits (the cheapest aspect ratio).
double bram36_tiles(int64_t width_bits, int64_t depth);

}  // namespace loom::accel
