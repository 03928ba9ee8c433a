#include "loom/accel/area_model.h"

#include <algorithm>
#include <cmath>

namespace loom::accel {

namespace {

// Least squares of the relative errors over loom hw-report (yosys synth_xilinx, xc7) on seven
// configs: 1x8x8, a 1x16x16 with half the default scratchpads, the default, batch2, 1x32x32 and the
// non-square 1x16x32 and 1x32x16 (docs/perf_model.md has the data and the errors). LUTs grow with
// the GEMM core's products (multipliers, reduction trees), with the output lanes (batch x
// block_out: the ALU, requantization and store paths are per lane), with the input lanes (batch x
// block_in: operand fan-out) and with the scratchpads' bytes (address decoding, read
// multiplexers); flip-flops with the products and the lanes (pipeline registers). Square configs
// alone cannot tell input from output lanes: the non-square ones do (their flip-flops differ by
// 18% at equal products), and the input lanes' flip-flop term of the fit is negative.
constexpr double kLutBase = 4686, kLutPerProduct = 17.63, kLutPerOutputLane = 1175.1, kLutPerInputLane = 54.56,
                 kLutPerScratchpadKiB = 7.42;
constexpr double kFfBase = 8501, kFfPerProduct = 39.60, kFfPerOutputLane = 278.2, kFfPerInputLane = -70.47;
constexpr double kDspBase = 5;
// The ALU's MUL per lane: three 16 x 16 DSP products at 32-bit accumulators, one at 16 bits.
constexpr double kAluDspPerLane32 = 3, kAluDspPerLane16 = 1;
// yosys synth_xilinx maps a multiplier to a DSP48 only from a 9-bit product up (smaller: LUTs).
constexpr int kDspMinProductBits = 9;
// Precision: least squares over loom hw-report of the W4A8, W4A4, W2A8 and 16-bit-accumulator
// configs, each against the default's residual (2026-11-30; docs/perf_model.md). Flip-flops per
// product and bit of product width (operand, product and partial-sum registers), per LUT-built
// product and product bit (its product register, outside a DSP), per output lane and bit of
// accumulator width (ALU operands, forwarding, results); LUTs per LUT-built product and bit of
// inp_bits x wgt_bits (its shift-and-add) and per output lane and accumulator bit (the ALU's
// adders, shifter and selects). The product width's own LUT term fitted to nothing measurable.
// Zero at W8A8 with 32-bit accumulators.
constexpr double kLutPerLutProductBit = 1.40, kLutPerLaneAccBit = 35.3;
constexpr double kFfPerProductBit = 2.07, kFfPerLutProductBit = 0.71, kFfPerLaneAccBit = 13.4;
// SHRSAT's saturation in the write stage (a range test and a bound's select per output lane and
// accumulator bit, before the scratchpads' write data and I7's forward): measured, not fitted,
// as the flattened default config's LUTs with it less those without it (docs/perf_model.md).
constexpr double kLutPerLaneAccBitSaturation = 3.35;

}  // namespace

double bram36_tiles(int64_t width_bits, int64_t depth) {
  // RAMB36 in simple dual-port mode (72 x 512 to 1 x 32768), or RAMB18 halves (36 x 512 to
  // 1 x 16384): the cheapest, as yosys' memory_libmap picks for each scratchpad.
  struct Aspect {
    int64_t width, depth;
    double tiles;
  };
  static const Aspect aspects[] = {{72, 512, 1},   {36, 1024, 1},  {18, 2048, 1},  {9, 4096, 1},    {4, 8192, 1},
                                   {2, 16384, 1},  {1, 32768, 1},  {36, 512, 0.5}, {18, 1024, 0.5}, {9, 2048, 0.5},
                                   {4, 4096, 0.5}, {2, 8192, 0.5}, {1, 16384, 0.5}};
  double best = 1e300;
  for (const Aspect& a : aspects)
    best = std::min(best,
                    a.tiles * double((width_bits + a.width - 1) / a.width) * double((depth + a.depth - 1) / a.depth));
  return best;
}

double saturation_luts(const AccelConfig& c) {
  return kLutPerLaneAccBitSaturation * double(c.batch) * c.block_out * c.acc_bits;
}

AreaEstimate estimate_area(const AccelConfig& c, const RtlOptions& rtl) {
  const double products = double(c.batch) * c.block_in * c.block_out, lanes = double(c.batch) * c.block_out,
               input_lanes = double(c.batch) * c.block_in;
  const GemmMultiplierPlan plan = gemm_multiplier_plan(c, rtl);
  AreaEstimate a;
  // GEMM DSP48s: one per group of k products (a short last group of products too narrow for a
  // DSP48 goes to LUTs), one per product in the plain core, none for LUT multipliers.
  double gemm_dsp = 0, lut_products = 0;
  const double rows = double(c.batch) * c.block_in;
  if (plan.kind == GemmMultipliers::DspPacked) {
    const int k = plan.products_per_multiplier, rest = c.block_out % k;
    gemm_dsp = rows * (c.block_out / k);
    if (rest * plan.product_bits >= kDspMinProductBits)
      gemm_dsp += rows;
    else if (rest)
      lut_products = rows * rest;
  } else if (plan.kind == GemmMultipliers::Plain) {
    (plan.product_bits >= kDspMinProductBits ? gemm_dsp : lut_products) = products;
  } else {
    lut_products = products;
  }
  a.dsp = gemm_dsp + (c.acc_bits == 32 ? kAluDspPerLane32 : kAluDspPerLane16) * lanes + kDspBase;
  double tiles = bram36_tiles(int64_t(c.inp_block_bytes()) * 8, c.inp_depth()) +
                 bram36_tiles(int64_t(c.wgt_block_bytes()) * 8, c.wgt_depth()) +
                 bram36_tiles(int64_t(c.acc_block_bytes()) * 8, c.acc_depth()) +
                 bram36_tiles(int64_t(c.out_block_bytes()) * 8, c.out_depth()) +
                 bram36_tiles(int64_t(AccelConfig::kUopBytes) * 8, c.uop_depth());
  a.bram36 = tiles;
  const double kib =
      double(c.inp_buffer_bytes + c.wgt_buffer_bytes + c.acc_buffer_bytes + c.out_buffer_bytes + c.uop_buffer_bytes) /
      1024;
  const double product_bits = plan.product_bits - 16, lut_product_bits = double(c.inp_bits) * c.wgt_bits,
               acc_bits = c.acc_bits - 32;
  a.lut = kLutBase + kLutPerProduct * products + kLutPerOutputLane * lanes + kLutPerInputLane * input_lanes +
          kLutPerScratchpadKiB * kib + kLutPerLutProductBit * lut_products * lut_product_bits +
          kLutPerLaneAccBit * lanes * acc_bits + saturation_luts(c);
  a.ff = kFfBase + kFfPerProduct * products + kFfPerOutputLane * lanes + kFfPerInputLane * input_lanes +
         kFfPerProductBit * products * product_bits + kFfPerLutProductBit * lut_products * plan.product_bits +
         kFfPerLaneAccBit * lanes * acc_bits;
  return a;
}

}  // namespace loom::accel
