// Timelines of the RTL backends (--trace): the file parses as a Chrome / Perfetto trace, each
// module's busy and token-wait slices add up to the hardware's own counters, DMA bursts open and
// close in pairs, runs are grouped under their labels, and the cycle window and the event limit
// bound the file. Runs on the backend the test binary is built for (rtl, systemc).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "accel/accel_harness.h"
#include "common/temp_dir.h"
#include "loom/sim/backends.h"
#include "matmul_run.h"

namespace loom::accel {
namespace {

const char* kModules[3] = {"load", "compute", "store"};

struct Traced {
  std::map<std::string, uint64_t> counters;
  nlohmann::json trace;
};

Traced run_traced(const std::string& trace_options, int runs = 1) {
  test::TestDir dir;
  const std::string path = (dir.path() / "t.json").string();
  sim::register_backends();
  const AccelConfig cfg = default_config();
  std::string json = cfg.to_json();
  const std::string backend = test::test_backend() == "systemc" ? "systemc" : "rtl";
  json = json.substr(0, json.rfind('}')) + ", \"" + backend + "\": {\"trace\": \"" + path + "\"" + trace_options + "}}";
  Traced t;
  {
    auto dev = make_accel_device(backend, json);
    for (int r = 0; r < runs; ++r) {
      std::vector<int8_t> out;
      dev->label_next_run("matmul " + std::to_string(r));
      t.counters = run_matmul(*dev, cfg, &out, 8 + r);
    }
    t.counters["cycles"] = uint64_t(dev->read_reg(reg::kCyclesHi)) << 32 | dev->read_reg(reg::kCyclesLo);
  }  // the device closes the file
  std::ifstream f(path);
  t.trace = nlohmann::json::parse(f);  // throws on malformed JSON
  return t;
}

// Sum of the slice durations per (run, track name, kind).
std::map<std::string, uint64_t> sums(const nlohmann::json& trace, int pid) {
  std::map<int, std::string> track;
  for (auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == pid) track[e["tid"]] = e["args"]["name"];
  std::map<std::string, uint64_t> s;
  for (auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["pid"] == pid) {
      const std::string name = e["name"];
      const bool busy = name.size() > 5 && name.substr(name.size() - 5) == " busy";
      s[track[e["tid"]] + (busy ? "_busy_cycles" : "_stall_cycles")] += e["dur"].get<uint64_t>();
    }
  return s;
}

TEST(Timeline, SlicesAddUpToTheCountersAndBurstsPair) {
  Traced t = run_traced("");
  const auto s = sums(t.trace, 1);
  for (const char* m : kModules) {
    const std::string busy = std::string(m) + "_busy_cycles", stall = std::string(m) + "_stall_cycles";
    EXPECT_GT(t.counters[busy], 0u) << m;
    EXPECT_EQ(s.count(busy) ? s.at(busy) : 0, t.counters[busy]) << m;
    EXPECT_EQ(s.count(stall) ? s.at(stall) : 0, t.counters[stall]) << m;
    EXPECT_LE(t.counters[busy] + t.counters[stall], t.counters["cycles"]) << m;
  }
  std::map<uint64_t, int> open;
  int bursts = 0;
  for (auto& e : t.trace["traceEvents"]) {
    if (e["ph"] == "b") ++open[e["id"]], ++bursts;
    if (e["ph"] == "e") --open[e["id"]];
  }
  EXPECT_GT(bursts, 10);
  for (auto& [id, n] : open) EXPECT_EQ(n, 0) << "burst " << id;
  bool labelled = false;
  for (auto& e : t.trace["traceEvents"]) labelled |= e["name"] == "process_name" && e["args"]["name"] == "matmul 0";
  EXPECT_TRUE(labelled);
}

TEST(Timeline, RunsAreGroupedAndTheWindowAndLimitBoundTheFile) {
  Traced two = run_traced("", 2);
  int groups = 0;
  for (auto& e : two.trace["traceEvents"]) groups += e["name"] == "process_name";
  EXPECT_EQ(groups, 2);
  EXPECT_FALSE(sums(two.trace, 2).empty());

  Traced window = run_traced(", \"trace_begin\": 300, \"trace_end\": 700");
  size_t slices = 0;
  for (auto& e : window.trace["traceEvents"])
    if (e.contains("ts")) {
      EXPECT_GE(e["ts"].get<uint64_t>(), 300u);
      EXPECT_LE(e["ts"].get<uint64_t>() + e.value("dur", uint64_t{0}), 701u);
      ++slices;
    }
  EXPECT_GT(slices, 0u);

  Traced limited = run_traced(", \"trace_max_events\": 50");
  bool noted = false;
  size_t events = limited.trace["traceEvents"].size();
  for (auto& e : limited.trace["traceEvents"]) noted |= e["name"] == "trace truncated";
  EXPECT_TRUE(noted);
  EXPECT_LE(events, 51u);
}

}  // namespace
}  // namespace loom::accel
