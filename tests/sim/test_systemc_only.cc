// What only the SystemC platform has: cycle counts equal to the rtl backend's for the same memory
// timing (the same RTL, clocked by the SystemC kernel, with its bursts crossing TLM-2.0), a second
// memory model attached behind the interconnect, a fixed number of accelerator slots per process,
// and option errors that name the field.
#include <gtest/gtest.h>

#include "accel/accel_harness.h"
#include "loom/sim/backends.h"
#include "matmul_run.h"

namespace loom::accel {
namespace {

std::string with_options(const AccelConfig& cfg, const std::string& backend, const std::string& options) {
  std::string json = cfg.to_json();
  return json.substr(0, json.rfind('}')) + ", \"" + backend + "\": " + options + "}";
}

struct Result {
  std::map<std::string, uint64_t> counters;
  std::vector<int8_t> out;
};
Result run_on(const std::string& backend, const AccelConfig& cfg, const std::string& options) {
  sim::register_backends();
  auto dev = make_accel_device(backend, with_options(cfg, backend, options));
  Result r;
  r.counters = run_matmul(*dev, cfg, &r.out);
  r.counters["cycles"] = uint64_t(dev->read_reg(reg::kCyclesHi)) << 32 | dev->read_reg(reg::kCyclesLo);
  return r;
}

TEST(SystemcPlatform, CyclesAndResultsEqualTheRtlBackendsForTheSameMemoryTiming) {
  for (const AccelConfig& cfg : test::test_configs()) {
    for (const char* options : {R"({"dram_latency": 32})", R"({"dram_latency": 90, "dram_bytes_per_cycle": 4})",
                                R"({"dram_latency": 12, "dram_stall_rate": 0.3})"}) {
      SCOPED_TRACE(cfg.name + " " + options);
      Result rtl = run_on("rtl", cfg, options), sc = run_on("systemc", cfg, options);
      EXPECT_EQ(sc.out, rtl.out);
      ASSERT_GT(rtl.counters["cycles"], 0u);
      for (auto& [name, v] : rtl.counters) EXPECT_EQ(sc.counters[name], v) << name;
    }
  }
}

TEST(SystemcPlatform, ABankedDramAttachesAndItsRowMissesCostCycles) {
  const AccelConfig cfg = default_config();
  const Result fixed = run_on("systemc", cfg, R"({"dram_latency": 20})");
  // Every burst a row hit at the fixed memory's latency: the same cycles through the other model.
  const Result all_hits = run_on(
      "systemc", cfg, R"({"dram_latency": 20, "memory": "banked", "row_hit_latency": 20, "row_miss_latency": 20})");
  EXPECT_EQ(all_hits.out, fixed.out);
  EXPECT_EQ(all_hits.counters.at("cycles"), fixed.counters.at("cycles"));
  // Misses slower than the fixed latency, hits as fast: more cycles, same results.
  const Result banked =
      run_on("systemc", cfg, R"({"memory": "banked", "row_hit_latency": 20, "row_miss_latency": 80})");
  EXPECT_EQ(banked.out, fixed.out);
  EXPECT_GT(banked.counters.at("cycles"), fixed.counters.at("cycles"));
  // Both latencies below the fixed one: fewer cycles (the interconnect routes to the banked model).
  const Result fast = run_on("systemc", cfg, R"({"memory": "banked", "row_hit_latency": 5, "row_miss_latency": 5})");
  EXPECT_EQ(fast.out, fixed.out);
  EXPECT_LT(fast.counters.at("cycles"), fixed.counters.at("cycles"));
  // Fewer banks, more conflicts.
  const Result one_bank =
      run_on("systemc", cfg, R"({"memory": "banked", "banks": 1, "row_hit_latency": 20, "row_miss_latency": 80})");
  EXPECT_EQ(one_bank.out, fixed.out);
  EXPECT_GE(one_bank.counters.at("cycles"), banked.counters.at("cycles"));
}

TEST(SystemcPlatform, SlotsAreLimitedAndFreedWhenADeviceCloses) {
  sim::register_backends();
  const std::string json = default_config().to_json();
  std::vector<std::unique_ptr<AccelDevice>> open;
  for (;;) {
    try {
      open.push_back(make_accel_device("systemc", json));
    } catch (const DeviceError& e) {
      EXPECT_NE(std::string(e.what()).find("slots"), std::string::npos) << e.what();
      break;
    }
    ASSERT_LE(open.size(), 64u) << "no slot limit";
  }
  ASSERT_GE(open.size(), 2u);
  open.pop_back();
  EXPECT_NO_THROW(open.push_back(make_accel_device("systemc", json)));
  // Every open device still runs (on its own slot).
  std::vector<int8_t> want, got;
  run_matmul(*open.front(), default_config(), &want);
  run_matmul(*open.back(), default_config(), &got);
  EXPECT_EQ(got, want);
}

TEST(SystemcPlatform, BadOptionsNameTheField) {
  sim::register_backends();
  const AccelConfig cfg = default_config();
  auto message = [&](const std::string& options) {
    try {
      make_accel_device("systemc", with_options(cfg, "systemc", options));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(R"({"memory": "ddr9"})").find("\"memory\""), std::string::npos);
  EXPECT_NE(message(R"({"memory": "banked", "banks": 0})").find("\"banks\""), std::string::npos);
  EXPECT_NE(message(R"({"row_miss_latency": -3})").find("\"row_miss_latency\""), std::string::npos);
  EXPECT_NE(message(R"({"dram_latncy": 3})").find("dram_latncy"), std::string::npos);
}

}  // namespace
}  // namespace loom::accel
