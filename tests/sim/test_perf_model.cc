// The performance model against the cycle-accurate RTL on a fixed workload set, within the bounds
// docs/perf_model.md states: ResNet-18's conv layers that stress the DMA (1x1, strided) and one that
// is compute-bound, on the default and 1x32x32 configs and under a slower, narrower DRAM (5% a
// layer, 2% for the set); the shared random streams (every instruction handing a token to the next,
// so each stream is a few thousand cycles of fixed costs: 5% a stream, 2% summed). The perf
// backend's results are fsim's, bit for bit, and its action counts (the energy model's) the RTL's
// counters exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "../../bench/accel_layers.h"
#include "accel/accel_harness.h"
#include "common/temp_dir.h"
#include "loom/accel/action_counts.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/quantize.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"
#include "loom/sim/activity.h"
#include "loom/sim/backends.h"
#include "loom/sim/perf_model.h"
#include "loom/sim/rtl_sim.h"
#include "stream_fuzzer.h"

namespace loom::sim {
namespace {

using accel::AccelConfig;
using accel::AluOp;
using accel::UopKernelBuilder;

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

// Each ALU operation's issue interval, one long instruction at a time (2048 iterations): one cycle
// with an immediate and for MOV, two with a register operand, five for MUL and SHR by a register;
// the model within 2% of the RTL for each.
TEST(PerfModel, EachAluOperationsIntervalAsTheRtl) {
  const AccelConfig cfg = accel::default_config();
  for (AluOp op : {AluOp::Min, AluOp::Max, AluOp::Add, AluOp::Shr, AluOp::Mul, AluOp::Mov, AluOp::Clip})
    for (bool imm : {true, false}) {
      if (op == AluOp::Clip && !imm) continue;  // an illegal instruction
      SCOPED_TRACE(std::string(to_string(op)) + (imm ? " immediate" : " register"));
      test::AccelHarness h(cfg, std::make_unique<RtlSim>(cfg));
      h.drv.alu(UopKernelBuilder().loop(16, 0, 0).loop(128, 1, 1).push(0, 128).build(), op, imm,
                op == AluOp::Clip ? accel::clip_imm(-5, 9) : 3);
      accel::Driver::SealedStream stream = h.drv.seal_stream();
      h.dev->launch(stream.addr, stream.count);
      h.dev->wait();
      const uint64_t rtl_cycles = h.dev->cycles(), model = estimate_cycles(stream.instructions, cfg).cycles;
      EXPECT_LE(std::fabs(percent(double(model), double(rtl_cycles))), 2.0)
          << "RTL " << rtl_cycles << " cycles, model " << model;
    }
}

// The counts the energy model is built from (accel/energy_model.h): every functional counter the RTL
// measures in hardware equals what the performance model reports without executing (counted from
// the instructions) and what fsim counts while it executes, on the shared random streams (loads
// with padding, GEMM resets and accumulations, ALU ops on immediates and on accumulator entries)
// at every config the RTL is built for.
TEST(PerfModel, ActionCountsEqualTheRtlCounters) {
  const size_t functional = size_t(kFirstTimingCounter);
  std::vector<uint64_t> reached(functional, 0);
  int configs = 0;
  for (const char* name : {"default", "1x32x32", "batch2", "w4a8", "w4a4", "w2a8", "acc16"}) {
    const AccelConfig cfg = AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + name + ".json");
    try {
      check_accel_backend("rtl", cfg.to_json());
    } catch (const Error&) {
      continue;  // not in LOOM_RTL_CONFIGS here
    }
    ++configs;
    auto timed_only = nlohmann::json::parse(cfg.to_json());
    timed_only["perf"] = {{"functional", false}};
    for (int seed = 0; seed < 6; ++seed) {
      SCOPED_TRACE(std::string(name) + " seed " + std::to_string(seed));
      std::vector<std::vector<uint64_t>> counts;
      std::vector<accel::Instruction> stream;
      for (const std::string backend : {"rtl", "fsim", "perf"}) {
        test::AccelHarness h(cfg, make_accel_device(backend, backend == "perf" ? timed_only.dump() : cfg.to_json()));
        accel::test_streams::StreamFuzzer f(h.drv, cfg, 2000 + seed);
        f.build(60);
        accel::Driver::SealedStream sealed = h.drv.seal_stream();
        h.dev->launch(sealed.addr, sealed.count);
        h.dev->wait();
        std::vector<uint64_t> c = h.dev->run_counters();
        counts.emplace_back(c.begin() + 1, c.begin() + 1 + long(functional));
        stream = sealed.instructions;
      }
      std::vector<uint64_t> counted = accel::count_actions(stream, cfg);
      counted.resize(functional);
      for (size_t k = 0; k < functional; ++k) {
        EXPECT_EQ(counts[1][k], counts[0][k]) << "fsim's " << to_string(AccelCounter(k)) << " is not the RTL's";
        EXPECT_EQ(counts[2][k], counts[0][k]) << "perf's " << to_string(AccelCounter(k)) << " is not the RTL's";
        EXPECT_EQ(counted[k], counts[0][k]) << "count_actions' " << to_string(AccelCounter(k)) << " is not the RTL's";
        reached[k] += counts[0][k];
      }
    }
  }
  ASSERT_GE(configs, 3);
  for (size_t k = 0; k < functional; ++k)
    EXPECT_GT(reached[k], 0u) << "no stream counted " << to_string(AccelCounter(k));
}

// The switching-activity estimate energy_activity_bench checks the energy model against: toggles
// read from the RTL's waveform (the 64-bit CYCLES counter, counting from 0 to C, flips 2C -
// popcount(C) bits) and loads read from a yosys netlist (a multiplier input as many loads as the
// other operand's bits, any other cell input one).
TEST(Activity, TogglesFromTheWaveformAndLoadsFromTheNetlist) {
  test::TestDir dir;
  const AccelConfig cfg = accel::default_config();
  RtlSimOptions o;
  o.fst_path = (dir.path() / "run.fst").string();
  uint64_t cycles = 0;
  {
    test::AccelHarness h(cfg, std::make_unique<RtlSim>(cfg, o));
    accel::test_streams::StreamFuzzer f(h.drv, cfg, 77);
    f.build(20);
    accel::Driver::SealedStream sealed = h.drv.seal_stream();
    h.dev->launch(sealed.addr, sealed.count);
    h.dev->wait();
    cycles = h.dev->cycles();
  }
  std::vector<SignalActivity> toggles = fst_toggles(o.fst_path);
  auto it = std::find_if(toggles.begin(), toggles.end(), [](const SignalActivity& s) { return s.name == "cycles"; });
  ASSERT_NE(it, toggles.end());
  EXPECT_EQ(it->width, 64);
  EXPECT_EQ(it->toggles, 2 * cycles - uint64_t(__builtin_popcountll(cycles)));
  EXPECT_THROW(fst_toggles((dir.path() / "none.fst").string()), DeviceError);

  std::ofstream(dir.path() / "n.json") << R"({"modules": {"top": {
      "cells": {"m": {"type": "$mul", "port_directions": {"A": "input", "B": "input", "Y": "output"},
                      "connections": {"A": [2, 3], "B": [4, 5, 6], "Y": [7]}},
                "s": {"type": "$add", "port_directions": {"A": "input", "B": "input", "Y": "output"},
                      "connections": {"A": [2], "B": [8], "Y": [9]}}},
      "netnames": {"a": {"bits": [2, 3]}, "b": {"bits": [4, 5, 6]}, "\\c": {"bits": [8]}, "y": {"bits": [9]}}}}})";
  std::map<std::string, double> loads = netlist_loads((dir.path() / "n.json").string(), "top");
  EXPECT_DOUBLE_EQ(loads.at("a"), (3 + 1 + 3) / 2.0);  // bit 2 feeds the multiplier and the adder
  EXPECT_DOUBLE_EQ(loads.at("b"), 2);
  EXPECT_DOUBLE_EQ(loads.at("c"), 1);
  EXPECT_DOUBLE_EQ(loads.at("y"), 0);
  double matched = 0;
  EXPECT_DOUBLE_EQ(weighted_activity({{"a", 2, 10}, {"b", 3, 1}, {"zz", 1, 5}}, loads, &matched), 35 + 2 + 5);
  EXPECT_DOUBLE_EQ(matched, 11.0 / 16);
  EXPECT_THROW(netlist_loads((dir.path() / "n.json").string(), "other"), Error);
  std::ofstream(dir.path() / "bad.json")
      << R"({"modules": {"top": {"cells": {"m": {"type": "$mul", "port_directions": {"A": 1}, "connections": {"A": [2]}}}}}})";
  try {
    netlist_loads((dir.path() / "bad.json").string(), "top");
    ADD_FAILURE() << "a malformed netlist was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a yosys netlist"), std::string::npos) << e.what();
  }
}

// A whole compiled model: ResNet-18 (64x64) quantized to int8, its 28 accelerator kernels (convs,
// residual adds with their scaling MULs, the classifier) run by the graph executor on the RTL and
// on "perf": each kernel within 5%, the network within 2%, the outputs equal.
TEST(PerfModel, CompiledResNet18KernelsWithinFivePercentOfTheRtl) {
  graph::Graph g = graph::builtin_model("resnet18", 1, 64);
  NDArray x = NDArray::empty({1, 3, 64, 64}, DataType::Float(32));
  x.fill_random(3);
  graph::Graph q = graph::quantize(g, {{x}}).graph;
  graph::BuildOptions bo;
  bo.accel = accel::default_config();
  runtime::ModelFile file = graph::build(q, bo).file;
  std::vector<std::vector<uint64_t>> counters;  // per accelerator kernel: rtl's, then perf's
  auto run = [&](const std::string& backend, std::vector<uint64_t>& cycles) {
    runtime::ExecutorOptions eo;
    eo.accel_backend = backend;
    auto ex = runtime::GraphExecutor::from_model_file(file, "resnet18", eo);
    NDArray out = ex.run({x})[0];
    for (size_t k = 0; k < ex.kernels().size(); ++k)
      if (ex.kernels()[k].device == runtime::KernelDevice::Accel) {
        cycles.push_back(ex.accel_stats()[k].cycles);
        const auto& c = ex.accel_stats()[k].counters;
        EXPECT_EQ(c.at(size_t(AccelCounter::GemmMacs)), ex.accel_stats()[k].gemm_macs) << backend << " kernel " << k;
        counters.emplace_back(c.begin(), c.begin() + long(kFirstTimingCounter));
      }
    return out;
  };
  std::vector<uint64_t> rtl, perf;
  NDArray want = run("rtl", rtl), got = run("perf", perf);
  // The energy model's counts: each kernel's functional counters the same on both.
  ASSERT_EQ(counters.size(), 2 * rtl.size());
  for (size_t k = 0; k < rtl.size(); ++k)
    EXPECT_EQ(counters[rtl.size() + k], counters[k]) << "accelerator kernel " << k;
  ASSERT_EQ(std::memcmp(want.raw_data(), got.raw_data(), want.nbytes()), 0);
  ASSERT_EQ(rtl.size(), perf.size());
  ASSERT_GE(rtl.size(), 20u);
  double rtl_sum = 0, perf_sum = 0;
  for (size_t k = 0; k < rtl.size(); ++k) {
    EXPECT_LE(std::fabs(percent(double(perf[k]), double(rtl[k]))), 5.0)
        << "accelerator kernel " << k << ": RTL " << rtl[k] << " cycles, model " << perf[k];
    rtl_sum += double(rtl[k]);
    perf_sum += double(perf[k]);
  }
  EXPECT_LE(std::fabs(percent(perf_sum, rtl_sum)), 2.0) << "RTL " << rtl_sum << " cycles, model " << perf_sum;
}

}  // namespace
}  // namespace loom::sim
