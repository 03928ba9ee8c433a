// The performance model's own checks and its backend's options: deadlocks, streams without
// FINISH, malformed options and a timeline file are clear results or errors naming what and where.
// (Its accuracy against the RTL: test_perf_model.)
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "accel/accel_harness.h"
#include "common/error_text.h"
#include "common/temp_dir.h"
#include "loom/sim/perf_model.h"

namespace loom::sim {
namespace {

using namespace loom::accel;

Instruction gemm(uint32_t iterations, bool reset = false) {
  Instruction g;
  g.opcode = Opcode::Gemm;
  g.reset = reset;
  g.uop_begin = 0;
  g.uop_end = 1;
  g.iter_out = 1;
  g.iter_in = iterations;
  return g;
}

Instruction load(MemType m, uint32_t rows, uint32_t cols) {
  Instruction l;
  l.opcode = Opcode::Load;
  l.mem = m;
  l.y_size = rows;
  l.x_size = cols;
  l.x_stride = cols;
  return l;
}

Instruction finish() {
  Instruction f;
  f.opcode = Opcode::Finish;
  return f;
}

// A compute instruction waiting for a token that nothing pushes: the error names the module and the
// instruction.
TEST(PerfModelErrors, DeadlockNamesTheWaitingInstruction) {
  Instruction g = gemm(4);
  g.dep.pop_prev = true;  // from the load module, which has no instruction
  std::string e = test::error_text<DeviceError>([&] { estimate_cycles({g, finish()}, default_config()); });
  EXPECT_NE(e.find("dependency deadlock"), std::string::npos) << e;
  EXPECT_NE(e.find("compute module waits at instruction 0 (GEMM"), std::string::npos) << e;
}

// Without FINISH (a driver's stream before it is finalized) the estimate ends with the last
// instruction; the GEMM core's cycles are its non-reset iterations, whatever the stream's shape.
TEST(PerfModelErrors, StreamWithoutFinishEndsWithItsLastInstruction) {
  AccelConfig c = default_config();
  PerfEstimate with = estimate_cycles({gemm(100), gemm(50, true), finish()}, c);
  PerfEstimate without = estimate_cycles({gemm(100), gemm(50, true)}, c);
  EXPECT_EQ(with.gemm_cycles, 100u);
  EXPECT_EQ(without.gemm_cycles, 100u);
  EXPECT_GE(without.cycles, 150u);
  EXPECT_LE(without.cycles, with.cycles);
  EXPECT_EQ(without.busy[0], 0u);  // the load module did nothing
}

// Two independent loads run side by side and share the DRAM's bandwidth: each takes longer than
// alone, together less than one after the other.
TEST(PerfModelErrors, DmaEnginesShareTheDram) {
  AccelConfig c = default_config();
  Instruction inp = load(MemType::Inp, 64, 64), acc = load(MemType::Acc, 16, 16);  // 4096 and 256 x 4 beats
  uint64_t alone_inp = estimate_cycles({inp}, c).cycles, alone_acc = estimate_cycles({acc}, c).cycles;
  uint64_t both = estimate_cycles({inp, acc}, c).cycles;  // load module and compute module
  EXPECT_GT(both, std::max(alone_inp, alone_acc));
  EXPECT_LT(both, alone_inp + alone_acc);
  PerfParams half;
  half.dram_bytes_per_cycle = 8;
  EXPECT_GT(estimate_cycles({inp}, c, half).cycles, alone_inp * 19 / 10);  // bandwidth-bound: about twice
}

// Bandwidths that are not a power of two of the bus leave fractional burst ends; the model still
// ends (a burst ends at its computed time, not when a rounded remainder reaches zero), even where
// the cycle count is in the tens of millions, and its cycles follow the bandwidth.
TEST(PerfModelErrors, FractionalBandwidthsEnd) {
  AccelConfig c = default_config();
  std::vector<Instruction> stream;
  for (int k = 0; k < 64; ++k) stream.push_back(load(MemType::Inp, 2048, 64));  // 64 x 131072 beats
  Instruction store;
  store.opcode = Opcode::Store;
  store.mem = MemType::Out;
  store.y_size = 64, store.x_size = 64, store.x_stride = 64;
  stream.push_back(store);
  uint64_t previous = 0;
  for (double bandwidth : {48.0, 12.0, 3.3}) {
    PerfParams p;
    p.dram_bytes_per_cycle = bandwidth;
    uint64_t cycles = estimate_cycles(stream, c, p).cycles;
    EXPECT_GT(cycles, uint64_t(64 * 131072 * 16 / bandwidth)) << bandwidth;
    EXPECT_GT(cycles, previous) << bandwidth;  // less bandwidth, more cycles
    previous = cycles;
  }
  PerfParams bad;
  bad.dram_bytes_per_cycle = std::numeric_limits<double>::infinity();
  EXPECT_NE(test::error_text<ConfigError>([&] {
              estimate_cycles(stream, c, bad);
            }).find("dram_bytes_per_cycle must be in (0, 4096]"),
            std::string::npos);
}

TEST(PerfModelErrors, BadOptionsAreNamed) {
  std::string base = default_config().to_json();
  auto with = [&](const std::string& perf) { return base.substr(0, base.rfind('}')) + R"(, "perf": )" + perf + "}"; };
  EXPECT_NE(test::error_text<ConfigError>([&] {
              make_accel_device("perf", with(R"({"dram_latncy": 3})"));
            }).find("unknown option \"dram_latncy\" (did you mean 'dram_latency'?)"),
            std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([&] {
              make_accel_device("perf", with(R"({"dram_bytes_per_cycle": 0})"));
            }).find("option \"dram_bytes_per_cycle\" must be a number in (0, 4096]"),
            std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([&] {
              make_accel_device("perf", with(R"({"bursts_in_flight": 0})"));
            }).find("\"bursts_in_flight\" must be an integer in [1, 1000000]"),
            std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([&] {
              make_accel_device("perf", with(R"({"trace": 7})"));
            }).find("\"trace\" must be a file path"),
            std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([&] { make_accel_device("perf", with("[1]")); }).find("must be an object"),
            std::string::npos);
}

// The perf backend: fsim's results, the model's cycles and counters in the registers, and a
// timeline with one slice per instruction on its module's track.
TEST(PerfModelErrors, BackendReportsCyclesCountersAndATimeline) {
  test::TestDir dir;
  std::string trace = dir.file("perf.json");
  AccelConfig c = default_config();
  std::string json = c.to_json();
  json = json.substr(0, json.rfind('}')) + R"(, "perf": {"trace": ")" + trace + R"("}})";
  auto dev = make_accel_device("perf", json);
  Driver drv(*dev, c);
  drv.gemm(UopKernelBuilder().loop(8, 1, 0).push(0, 0, 0).build(), true);
  auto counters = drv.synchronize();
  EXPECT_GT(dev->cycles(), 8u);
  EXPECT_EQ(dev->counter(AccelCounter::GemmCycles), 0u);  // a reset: no multiply-accumulate
  EXPECT_GE(dev->counter(AccelCounter::ComputeBusyCycles), 8u);
  EXPECT_EQ(dev->counter(AccelCounter::GemmInsns), 1u);  // fsim's counters pass through
  std::ifstream f(trace);
  nlohmann::json t = nlohmann::json::parse(f);
  int slices = 0;
  for (auto& e : t["traceEvents"])
    if (e["ph"] == "X") {
      ++slices;
      EXPECT_GE(e["tid"].get<int>(), 2);
      EXPECT_LE(e["tid"].get<int>(), 4);
    }
  EXPECT_GE(slices, 3);  // micro-op load, GEMM, FINISH
}

// Without "functional" the stream is timed, not executed: the same cycles, and an illegal
// instruction is still an error naming it (design-space sweeps time streams this way).
TEST(PerfModelErrors, TimingOnlyGivesTheSameCycles) {
  AccelConfig c = default_config();
  std::string json = c.to_json();
  uint64_t cycles[2] = {};
  for (bool functional : {true, false}) {
    auto dev = make_accel_device("perf", json.substr(0, json.rfind('}')) + R"(, "perf": {"functional": )" +
                                             (functional ? "true" : "false") + "}}");
    Driver drv(*dev, c);
    auto buf = drv.alloc(64 * 64 * c.inp_block_bytes());
    drv.load_2d(MemType::Inp, 0, buf.addr, 8, 32, 32, 0, 0, 0, 0);
    drv.gemm(UopKernelBuilder().loop(8, 1, 0).loop(16, 0, 1).push(0, 0, 0).build(), false);
    drv.synchronize();
    cycles[functional] = dev->cycles();
  }
  EXPECT_GT(cycles[0], 128u);
  EXPECT_EQ(cycles[0], cycles[1]);
  auto dev = make_accel_device("perf", json.substr(0, json.rfind('}')) + R"(, "perf": {"functional": false}})");
  IsaLayout L(c);
  Instruction fin;
  fin.opcode = Opcode::Finish;
  auto buf = dev->alloc(48);
  InsnWord words[3] = {encode(fin, L), InsnWord{6, 0}, encode(fin, L)};
  dev->write(buf, words, sizeof words);
  dev->launch(buf, 3);
  std::string e = test::error_text<DeviceError>([&] { dev->wait(); });
  EXPECT_NE(e.find("instruction 1: field 'opcode' = 6 is not a valid opcode"), std::string::npos) << e;
}

}  // namespace
}  // namespace loom::sim
