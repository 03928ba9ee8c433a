// The performance model against recorded RTL cycles, in the default quick labels (no RTL needed):
// ResNet-18's conv layers as a model tiles them (two virtual threads), timed by the model without
// execution, against the cycles the Verilated RTL took for the same streams (accel_bench
// --vthreads 2, DRAM 32 cycles latency, 16 B/cycle; 2026-12-07, the RTL with SHRSAT) on the three
// configs that have RTL models. The bounds are docs/perf_model.md's: each layer within 2%, each
// config's sum within 0.5%. test_perf_model (label rtl) checks the same against a live RTL run.
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
    {"default", "c2", 493851}, {"default", "c3", 246315}, {"default", "c4", 47986}, {"default", "c5", 472480},
    {"default", "c6", 235138}, {"default", "c7", 33180},  {"default", "c8", 462253}, {"default", "c9", 232377},
    {"default", "c10", 30048}, {"default", "c11", 458719},
    {"1x32x32", "c2", 152077}, {"1x32x32", "c3", 80595}, {"1x32x32", "c4", 35954}, {"1x32x32", "c5", 131473},
    {"1x32x32", "c6", 66204},  {"1x32x32", "c7", 21669}, {"1x32x32", "c8", 122451}, {"1x32x32", "c9", 87537},
    {"1x32x32", "c10", 17678}, {"1x32x32", "c11", 160113},
    {"batch2", "c2", 510128}, {"batch2", "c3", 256018}, {"batch2", "c4", 75311}, {"batch2", "c5", 479213},
    {"batch2", "c6", 240779}, {"batch2", "c7", 64591},  {"batch2", "c8", 465537}, {"batch2", "c9", 234299},
    {"batch2", "c10", 40923}, {"batch2", "c11", 460375},
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
