// The performance model against recorded RTL cycles, in the default quick labels (no RTL needed):
// ResNet-18's conv layers as a model tiles them (two virtual threads), timed by the model without
// execution, against the cycles the Verilated RTL took for the same streams (accel_bench
// --vthreads 2, DRAM 32 cycles latency, 16 B/cycle; 2026-12-07, the RTL with SHRSAT, streams with their closing store
// in parts, their micro-ops loaded once, biases held across tiles and presets after the other context's first GEMM) on
// the three configs that have RTL models. The bounds are docs/perf_model.md's: each layer within 2%, each config's sum
// within 0.5%. test_perf_model (label rtl) checks the same against a live RTL run.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "loom/accel/config.h"
#include "loom/codegen/accel.h"
#include "loom/ops/accel_operators.h"
#include "loom/sim/perf_model.h"

namespace loom::sim {
namespace {

struct Recorded {
  const char* config;
  const char* layer;
  uint64_t rtl_cycles;
};

// clang-format off
const Recorded kRecorded[] = {
    {"default", "c2", 482155}, {"default", "c3", 240607}, {"default", "c4", 43384}, {"default", "c5", 466952},
    {"default", "c6", 233731}, {"default", "c7", 32836},  {"default", "c8", 459876}, {"default", "c9", 231045},
    {"default", "c10", 29567}, {"default", "c11", 457517},
    {"1x32x32", "c2", 132957}, {"1x32x32", "c3", 74448}, {"1x32x32", "c4", 35665}, {"1x32x32", "c5", 122103},
    {"1x32x32", "c6", 63278},  {"1x32x32", "c7", 20171}, {"1x32x32", "c8", 119376}, {"1x32x32", "c9", 87296},
    {"1x32x32", "c10", 16945}, {"1x32x32", "c11", 159862},
    {"batch2", "c2", 482471}, {"batch2", "c3", 241396}, {"batch2", "c4", 67424}, {"batch2", "c5", 467447},
    {"batch2", "c6", 234772}, {"batch2", "c7", 61084},  {"batch2", "c8", 460816}, {"batch2", "c9", 231632},
    {"batch2", "c10", 39680}, {"batch2", "c11", 457955},
};
// clang-format on

TEST(PerfModelRecorded, ResNet18LayersWithinTheirBoundsOfTheRecordedRtlCycles) {
  for (const char* config : {"default", "1x32x32", "batch2"}) {
    accel::AccelConfig cfg = accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + config + ".json");
    double rtl_sum = 0, model_sum = 0;
    for (const Recorded& r : kRecorded) {
      if (std::string(r.config) != config) continue;
      SCOPED_TRACE(std::string(config) + " " + r.layer);
      const ops::AccelConvLayer* layer = nullptr;
      for (const auto& l : ops::resnet18_accel_conv_layers())
        if (std::string(l.name) == r.layer) layer = &l;
      ASSERT_NE(layer, nullptr);
      ops::AccelOperator a = ops::make_accel_conv_layer(*layer, ops::accel_target(cfg), 2);
      codegen::AccelModule m = codegen::build_accel(a.func, cfg);
      PerfParams timing_only;
      timing_only.functional = false;
      PerfSim perf(cfg, timing_only);
      std::vector<NDArray> args = a.random_args(1);
      const double cycles = double(m.run(perf, args).cycles), rtl = double(r.rtl_cycles);
      EXPECT_LE(std::fabs(cycles - rtl) / rtl, 0.02) << "model " << cycles << " cycles, RTL " << rtl;
      rtl_sum += rtl;
      model_sum += cycles;
    }
    EXPECT_LE(std::fabs(model_sum - rtl_sum) / rtl_sum, 0.005)
        << config << ": model " << model_sum << " cycles, RTL " << rtl_sum;
  }
}

}  // namespace
}  // namespace loom::sim
