// The analytical area model (loom dse's) against the yosys reports it was built from (loom
// hw-report --part xc7z020, yosys 0.23 synth_xilinx, 2026-11-27 and 2026-11-29 for the non-square
// cores; docs/results.md): DSP48s and BRAM36 tiles from the structure alone, LUTs and
// flip-flops from the fit, within 1.5%. The synth test checks
// the default config against a fresh yosys run (loom hw-report --max-model-error 5).
#include <gtest/gtest.h>

#include "loom/accel/area_model.h"

namespace loom::accel {
namespace {

AccelConfig config(int batch, int block, int64_t inp, int64_t wgt, int64_t acc, int64_t out, int64_t uop,
                   int block_out = 0) {
  AccelConfig c = default_config();
  c.batch = batch;
  c.block_in = block;
  c.block_out = block_out ? block_out : block;
  c.inp_buffer_bytes = inp << 10, c.wgt_buffer_bytes = wgt << 10, c.acc_buffer_bytes = acc << 10;
  c.out_buffer_bytes = out << 10, c.uop_buffer_bytes = uop << 10;
  return c;
}

TEST(AreaModel, MatchesTheYosysReports) {
  struct Report {
    AccelConfig config;
    double lut, ff, dsp, bram36;
  };
  const Report reports[] = {
      {config(1, 8, 16, 64, 64, 16, 16), 16881, 12611, 61, 41},
      {config(1, 16, 16, 128, 64, 16, 16), 31050, 22077, 181, 55},
      {config(1, 16, 32, 256, 128, 32, 32), 32579, 22112, 181, 108.5},
      {config(2, 16, 32, 256, 128, 32, 32), 56526, 35006, 357, 108.5},
      {config(1, 32, 64, 512, 256, 64, 32), 69149, 55078, 613, 208},
      // Non-square GEMM cores (block_in x block_out), 2026-11-29: the sweeps of `loom dse` take
      // block_in and block_out apart, and only these tell input from output lanes.
      {config(1, 16, 32, 256, 128, 32, 32, 32), 55318, 36924, 357, 108.5},
      {config(1, 32, 32, 256, 128, 32, 32, 16), 37621, 31240, 309, 108.5},
  };
  for (const Report& r : reports) {
    SCOPED_TRACE(std::to_string(r.config.batch) + "x" + std::to_string(r.config.block_in) + "x" +
                 std::to_string(r.config.block_out));
    AreaEstimate a = estimate_area(r.config);
    EXPECT_EQ(a.dsp, r.dsp);
    EXPECT_NEAR(a.bram36, r.bram36, 0.5);
    EXPECT_NEAR(a.lut - saturation_luts(r.config), r.lut, 0.015 * r.lut);  // the reports predate it
    EXPECT_NEAR(a.ff, r.ff, 0.015 * r.ff);
  }
}

// Precision (loom hw-report --part xc7z020 of the shipped configs, yosys 0.23, 2026-11-30, the
// RTL of that day; docs/results.md): DSP48s and BRAM36 tiles exact from the structure (three
// 4 x 4-bit products per DSP48 and the short last group in LUTs; LUT products for 2-bit weights;
// one ALU DSP per lane at 16-bit accumulators), LUTs and flip-flops within the bound
// docs/perf_model.md states for them.
TEST(AreaModel, FollowsThePrecision) {
  struct Report {
    const char* name;
    double lut, ff, dsp, bram36;
  };
  const Report reports[] = {{"default", 31040, 22112, 181, 108.5},
                            {"w4a8", 29026, 19232, 181, 80},
                            {"w4a4", 30997, 18354, 133, 73},
                            {"w2a8", 35294, 20736, 53, 66},
                            {"acc16", 21538, 18672, 149, 94.5}};
  for (const Report& r : reports) {
    SCOPED_TRACE(r.name);
    const AccelConfig c = AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + r.name + ".json");
    AreaEstimate a = estimate_area(c);
    EXPECT_EQ(a.dsp, r.dsp);
    EXPECT_NEAR(a.bram36, r.bram36, 0.5);
    EXPECT_NEAR(a.lut - saturation_luts(c), r.lut, 0.09 * r.lut);  // the reports predate it
    EXPECT_NEAR(a.ff, r.ff, 0.035 * r.ff);
  }
}

// The structure: a plain GEMM core takes a DSP48 per product where the packed one takes one per
// two; a scratchpad twice as deep never takes fewer tiles; a 2048-bit x 1024 memory packs into
// RAMB18s (57 x 2 halves) rather than 29 x 2 RAMB36s.
TEST(AreaModel, FollowsTheStructure) {
  AccelConfig c = default_config();
  RtlOptions plain;
  plain.gemm = GemmMultipliers::Plain;
  EXPECT_EQ(estimate_area(c, plain).dsp - estimate_area(c).dsp, 128);
  for (int64_t depth = 64; depth <= 65536; depth *= 2)
    for (int64_t width : {8, 32, 64, 128, 512, 2048})
      EXPECT_LE(bram36_tiles(width, depth), bram36_tiles(width, depth * 2)) << width << " x " << depth;
  EXPECT_EQ(bram36_tiles(2048, 1024), 57);
  EXPECT_EQ(bram36_tiles(32, 8192), 8);
}

}  // namespace
}  // namespace loom::accel
