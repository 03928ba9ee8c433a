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
constexpr double kAluDspPerLane = 3, kDspBase = 5;
// yosys synth_xilinx maps a multiplier to a DSP48 only from a 9-bit product up (smaller: LUTs).
constexpr int kDspMinProductBits = 9;

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

AreaEstimate estimate_area(const AccelConfig& c, const RtlOptions& rtl) {
  const double products = double(c.batch) * c.block_in * c.block_out, lanes = double(c.batch) * c.block_out,
               input_lanes = double(c.batch) * c.block_in;
  const GemmMultiplierPlan plan = gemm_multiplier_plan(c, rtl);
  AreaEstimate a;
  double gemm_dsp = 0;
  if (plan.kind == GemmMultipliers::DspPacked)
    gemm_dsp = double(c.batch) * c.block_in * std::ceil(double(c.block_out) / plan.products_per_multiplier);
  else if (plan.kind == GemmMultipliers::Plain && plan.product_bits >= kDspMinProductBits)
    gemm_dsp = products;
  a.dsp = gemm_dsp + kAluDspPerLane * lanes + kDspBase;
  double tiles = bram36_tiles(int64_t(c.inp_block_bytes()) * 8, c.inp_depth()) +
                 bram36_tiles(int64_t(c.wgt_block_bytes()) * 8, c.wgt_depth()) +
                 bram36_tiles(int64_t(c.acc_block_bytes()) * 8, c.acc_depth()) +
                 bram36_tiles(int64_t(c.out_block_bytes()) * 8, c.out_depth()) +
                 bram36_tiles(int64_t(AccelConfig::kUopBytes) * 8, c.uop_depth());
  a.bram36 = tiles;
  const double kib =
      double(c.inp_buffer_bytes + c.wgt_buffer_bytes + c.acc_buffer_bytes + c.out_buffer_bytes + c.uop_buffer_bytes) /
      1024;
  a.lut = kLutBase + kLutPerProduct * products + kLutPerOutputLane * lanes + kLutPerInputLane * input_lanes +
          kLutPerScratchpadKiB * kib;
  a.ff = kFfBase + kFfPerProduct * products + kFfPerOutputLane * lanes + kFfPerInputLane * input_lanes;
  return a;
}

}  // namespace loom::accel
