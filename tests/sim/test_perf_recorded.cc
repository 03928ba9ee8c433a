// The performance model against recorded RTL cycles, in the default quick labels (no RTL needed):
// ResNet-18's conv layers as a model tiles them (two virtual threads), timed by the model without
// execution, against the cycles the Verilated RTL took for the same streams (accel_bench
// --vthreads 2, DRAM 32 cycles latency, 16 B/cycle; 2026-11-29, commit fe0fb5c) on the three
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
    {"default", "c2", 512051}, {"default", "c3", 254910}, {"default", "c4", 58774}, {"default", "c5", 482031},
    {"default", "c6", 240718}, {"default", "c7", 39525},  {"default", "c8", 467562}, {"default", "c9", 234975},
    {"default", "c10", 33257}, {"default", "c11", 461186},
    {"1x32x32", "c2", 159746}, {"1x32x32", "c3", 84241}, {"1x32x32", "c4", 39143}, {"1x32x32", "c5", 135486},
    {"1x32x32", "c6", 68629},  {"1x32x32", "c7", 23140}, {"1x32x32", "c8", 124537}, {"1x32x32", "c9", 88783},
    {"1x32x32", "c10", 18925}, {"1x32x32", "c11", 161359},
    {"batch2", "c2", 517908}, {"batch2", "c3", 258857}, {"batch2", "c4", 79217}, {"batch2", "c5", 484733},
    {"batch2", "c6", 243138}, {"batch2", "c7", 67133},  {"batch2", "c8", 468923}, {"batch2", "c9", 236051},
    {"batch2", "c10", 43211}, {"batch2", "c11", 462100},
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
