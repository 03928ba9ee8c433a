// The performance model against the cycle-accurate RTL on a fixed workload set, within the bounds
// docs/perf_model.md states: ResNet-18's conv layers that stress the DMA (1x1, strided) and one that
// is compute-bound, on the default and 1x32x32 configs and under a slower, narrower DRAM (5% a
// layer, 2% for the set); the shared random streams (every instruction handing a token to the next,
// so each stream is a few thousand cycles of fixed costs: 5% a stream, 2% summed). The perf
// backend's results are fsim's, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "../../bench/accel_layers.h"
#include "accel/accel_harness.h"
#include "loom/runtime/error.h"
#include "loom/sim/perf_model.h"
#include "loom/sim/rtl_sim.h"
#include "stream_fuzzer.h"

namespace loom::sim {
namespace {

using accel::AccelConfig;

AccelConfig config_named(const std::string& name) {
  for (const AccelConfig& c : test::test_configs())
    if (c.name == name) return c;
  throw std::runtime_error("no test config " + name);
}

struct Memory {
  uint32_t latency;
  double bytes_per_cycle;
};

double percent(double model, double rtl) { return 100.0 * (model - rtl) / rtl; }

// Layers that stress the DMA and one compute-bound layer: per layer within 5%, summed within 2%.
TEST(PerfModel, ConvLayersWithinFivePercentOfTheRtl) {
  double rtl_sum = 0, model_sum = 0;
  for (const char* config : {"default", "1x32x32"})
    for (Memory mem : {Memory{32, 16}, Memory{96, 8}})
      for (const char* layer : {"c4", "c7", "c10", "c6"}) {
        if (mem.latency != 32 && std::string(layer) == "c6") continue;  // the slow-DRAM set: the DMA-bound layers
        SCOPED_TRACE(std::string(config) + " " + layer + " DRAM " + std::to_string(mem.latency) + " cycles, " +
                     std::to_string(mem.bytes_per_cycle) + " B/cycle");
        AccelConfig cfg = config_named(config);
        const bench::ConvLayer* l = nullptr;
        for (const auto& c : bench::kResNet18)
          if (std::string(c.name) == layer) l = &c;
        bench::Compiled c = bench::compile_layer(*l, cfg, 2);
        RtlSimOptions o;
        o.dram_latency = mem.latency;
        o.dram_bytes_per_cycle = mem.bytes_per_cycle;
        RtlSim rtl(cfg, o);
        uint64_t rtl_cycles = c.module.run(rtl, c.args).cycles;
        std::vector<int8_t> want(c.args.back().data<int8_t>(), c.args.back().data<int8_t>() + c.args.back().numel());
        c.args.back().fill_random(7, -1, 1);
        PerfParams p;
        p.dram_latency = mem.latency;
        p.dram_bytes_per_cycle = mem.bytes_per_cycle;
        PerfSim perf(cfg, p);
        auto stats = c.module.run(perf, c.args);
        EXPECT_EQ(std::memcmp(want.data(), c.args.back().data<int8_t>(), want.size()), 0);
        double err = percent(double(stats.cycles), double(rtl_cycles));
        EXPECT_LE(std::fabs(err), 5.0) << "RTL " << rtl_cycles << " cycles, model " << stats.cycles;
        // The busy and stall counters come from the same model: compute busy within 5% too.
        EXPECT_NEAR(double(stats.counters["compute_busy_cycles"]), double(rtl.counter(AccelCounter::ComputeBusyCycles)),
                    0.05 * double(rtl.counter(AccelCounter::ComputeBusyCycles)));
        EXPECT_EQ(stats.counters["gemm_cycles"], rtl.counter(AccelCounter::GemmCycles));
        rtl_sum += double(rtl_cycles);
        model_sum += double(stats.cycles);
      }
  EXPECT_LE(std::fabs(percent(model_sum, rtl_sum)), 2.0) << "RTL " << rtl_sum << " cycles, model " << model_sum;
}

// The shared random streams (other seeds than the calibration's), on the free-flowing RTL, for
// every test config (batch2 is not in the calibration set): 5% a stream, 2% summed.
TEST(PerfModel, RandomStreamsWithinFivePercentOfTheRtl) {
  for (const AccelConfig& cfg : test::test_configs()) {
    double rtl_sum = 0, model_sum = 0;
    for (int seed = 0; seed < 12; ++seed) {
      SCOPED_TRACE(cfg.name + " seed " + std::to_string(seed));
      test::AccelHarness h(cfg, std::make_unique<RtlSim>(cfg));
      accel::test_streams::StreamFuzzer f(h.drv, cfg, 1000 + seed);
      f.build(60);
      accel::Driver::SealedStream stream = h.drv.seal_stream();
      h.dev->launch(stream.addr, stream.count);
      h.dev->wait();
      uint64_t rtl_cycles = h.dev->cycles();
      PerfEstimate e = estimate_cycles(stream.instructions, cfg);
      EXPECT_LE(std::fabs(percent(double(e.cycles), double(rtl_cycles))), 5.0)
          << "RTL " << rtl_cycles << " cycles, model " << e.cycles << "\n"
          << accel::disassemble(stream.instructions);
      rtl_sum += double(rtl_cycles);
      model_sum += double(e.cycles);
    }
    EXPECT_LE(std::fabs(percent(model_sum, rtl_sum)), 2.0) << cfg.name;
  }
}

}  // namespace
}  // namespace loom::sim
