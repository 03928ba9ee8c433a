// The performance model against recorded RTL cycles, in the default quick labels (no RTL needed):
// ResNet-18's conv layers as a model tiles them (two virtual threads), timed by the model without
// execution, against the cycles the Verilated RTL took for the same streams (accel_bench
// --vthreads 2, DRAM 32 cycles latency, 16 B/cycle; 2026-12-04, the RTL with MOV and CLIP) on the three
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
    {"default", "c2", 498653}, {"default", "c3", 248798}, {"default", "c4", 52392}, {"default", "c5", 475549},
    {"default", "c6", 237549}, {"default", "c7", 36342},  {"default", "c8", 464393}, {"default", "c9", 233977},
    {"default", "c10", 31655}, {"default", "c11", 460319},
    {"1x32x32", "c2", 155655}, {"1x32x32", "c3", 82279}, {"1x32x32", "c4", 37354}, {"1x32x32", "c5", 133642},
    {"1x32x32", "c6", 67020},  {"1x32x32", "c7", 22167}, {"1x32x32", "c8", 123358}, {"1x32x32", "c9", 87972},
    {"1x32x32", "c10", 18113}, {"1x32x32", "c11", 160546},
    {"batch2", "c2", 512514}, {"batch2", "c3", 257108}, {"batch2", "c4", 76381}, {"batch2", "c5", 480149},
    {"batch2", "c6", 241416}, {"batch2", "c7", 65108},  {"batch2", "c8", 465970}, {"batch2", "c9", 234777},
    {"batch2", "c10", 41603}, {"batch2", "c11", 461297},
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
