// Accelerator bench: ResNet-18's conv2d layers (batch 1, 224x224 input; the 3x3 and 1x1 layers
// of all four stages, without the first 7x7 layer) compiled by Loom for the accelerator and run
// on the cycle-accurate RTL simulation, with and without virtual threads. Per layer: cycles, GEMM
// utilization (MACs / (cycles x MACs per cycle)), DMA bytes, and the simulation speed in
// simulated cycles per second (time inside the simulator; "rtl s" and "fsim s" are whole runs
// including emitting the instruction stream); every output is checked bit-exactly against the functional
// simulator, whose wall time is the speed baseline measured in the same run.
//
//   accel_bench [--config cfg.json] [--layers all|c2,c5,...] [--vthreads 1,2] [--dram-latency N]
//               [--dram-bytes-per-cycle B] [--min-utilization 0.7] [--min-sim-rate 1e6]
// Exits 1 if an output differs, or if the average utilization with the most virtual threads or
// the simulation rate falls below the given minimums.
#include <chrono>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "accel_layers.h"
#include "loom/runtime/error.h"
#include "loom/schedule/lower.h"
#include "loom/sim/functional_sim.h"
#include "loom/sim/rtl_sim.h"

using namespace loom;
using namespace loom::ir;

namespace {

int g_oc_blocks = 0;  // --oc-blocks: output-channel blocks per tile (0: the largest that fits)

std::string arg(int argc, char** argv, const std::string& key, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == "--" + key) return argv[i + 1];
  return fallback;
}

std::vector<int> int_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) v.push_back(std::stoi(x));
  return v;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) try {
  accel::AccelConfig cfg = argc > 1 && !arg(argc, argv, "config", "").empty()
                               ? accel::AccelConfig::load(arg(argc, argv, "config", ""))
                               : accel::default_config();
  sim::RtlSimOptions opt;
  opt.dram_latency = uint32_t(std::stoul(arg(argc, argv, "dram-latency", "32")));
  opt.dram_bytes_per_cycle = std::stod(arg(argc, argv, "dram-bytes-per-cycle", "16"));
  const double min_util = std::stod(arg(argc, argv, "min-utilization", "0"));
  const double min_rate = std::stod(arg(argc, argv, "min-sim-rate", "0"));
  std::vector<int> vthreads = int_list(arg(argc, argv, "vthreads", "1,2"));
  std::string which = arg(argc, argv, "layers", "all");
  g_oc_blocks = std::stoi(arg(argc, argv, "oc-blocks", "0"));
  const double peak = double(cfg.batch) * cfg.block_in * cfg.block_out;

  std::cout << "ResNet-18 conv layers on the accelerator RTL (config '" << cfg.name << "', " << peak
            << " MACs/cycle; DRAM " << opt.dram_latency << " cycles latency, " << opt.dram_bytes_per_cycle
            << " B/cycle)\n";
  std::cout << std::left << std::setw(6) << "layer" << std::setw(22) << "shape" << std::right << std::setw(4) << "vt"
            << std::setw(11) << "cycles" << std::setw(8) << "util%" << std::setw(12) << "DMA-load B" << std::setw(11)
            << "DMA-st B" << std::setw(10) << "Mcyc/s" << std::setw(10) << "rtl s" << std::setw(10) << "fsim s"
            << "  check\n";
  int failures = 0;
  double worst_rate = 1e300, last_avg_util = 0;
  for (int vt : vthreads) {
    double total_cycles = 0, total_macs = 0, util_sum = 0;
    int layers = 0;
    for (const bench::ConvLayer& l : bench::kResNet18) {
      if (which != "all" && ("," + which + ",").find(std::string(",") + l.name + ",") == std::string::npos) continue;
      bench::Compiled c = bench::compile_layer(l, cfg, vt, g_oc_blocks);
      sim::RtlSim rtl(cfg, opt);
      auto t0 = std::chrono::steady_clock::now();
      auto stats = c.module.run(rtl, c.args);
      double rtl_s = seconds_since(t0);
      std::vector<int8_t> got(c.args.back().data<int8_t>(), c.args.back().data<int8_t>() + c.args.back().numel());
      sim::FunctionalSim fsim(cfg);
      c.args.back().fill_random(99, -1, 1);  // the reference run must overwrite it
      t0 = std::chrono::steady_clock::now();
      c.module.run(fsim, c.args);
      double fsim_s = seconds_since(t0);
      bool same = std::memcmp(got.data(), c.args.back().data<int8_t>(), got.size()) == 0;
      failures += !same;
      double util = c.macs / (peak * double(stats.cycles)), rate = double(stats.cycles) / rtl.simulation_seconds();
      worst_rate = std::min(worst_rate, rate);
      total_cycles += double(stats.cycles) * l.repeats;
      total_macs += c.macs * l.repeats;
      util_sum += util;
      ++layers;
      std::ostringstream shape;
      shape << l.channels << "->" << l.out_channels << " " << l.size << "x" << l.size << " k" << l.kernel << "s"
            << l.stride;
      std::cout << std::left << std::setw(6) << l.name << std::setw(22) << shape.str() << std::right << std::setw(4)
                << vt << std::setw(11) << stats.cycles << std::setw(8) << std::fixed << std::setprecision(1)
                << 100 * util << std::setw(12) << stats.counters["dma_load_bytes"] << std::setw(11)
                << stats.counters["dma_store_bytes"] << std::setw(10) << std::setprecision(2) << rate / 1e6
                << std::setw(10) << std::setprecision(3) << rtl_s << std::setw(10) << fsim_s << "  "
                << (same ? "bit-exact" : "MISMATCH") << "\n";
    }
    if (!layers) LOOM_THROW(Error, "--layers '", which, "' selects no layer");
    last_avg_util = util_sum / layers;
    std::cout << "  vthreads " << vt << ": average utilization " << std::setprecision(1) << 100 * last_avg_util
              << "% (MAC-weighted " << 100 * total_macs / (peak * total_cycles) << "%), ResNet-18 conv total "
              << std::setprecision(2) << total_cycles / 1e6
              << " M cycles (each layer times its repeats; VTA reports ~7.7 M)\n";
  }
  std::cout << "slowest simulation rate: " << std::setprecision(2) << worst_rate / 1e6 << " M cycles/s\n";
  if (min_util > 0 && last_avg_util < min_util) {
    std::cout << "FAIL: average utilization " << last_avg_util << " < " << min_util << "\n";
    ++failures;
  }
  if (min_rate > 0 && worst_rate < min_rate) {
    std::cout << "FAIL: simulation rate " << worst_rate << " < " << min_rate << " cycles/s\n";
    ++failures;
  }
  return failures ? 1 : 0;
} catch (const std::exception& e) {
  std::cerr << "accel_bench: " << e.what() << "\n";
  return 2;
}
