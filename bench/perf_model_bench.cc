// The performance model against the cycle-accurate RTL: ResNet-18's conv layers (accel_layers.h)
// on the default and 1x32x32 configs, each run on the RTL simulation and on the "perf" backend
// (the functional simulator's results with the model's cycles). Per layer: both cycle counts and
// the model's error, the RTL's simulation time against the model's (timing alone, and the perf
// backend's whole run with the functional simulation), outputs compared bit-exactly; then the
// conv layers of the whole network (each layer times its repeats).
//
//   perf_model_bench [--configs default,1x32x32] [--layers all|c2,c5,...] [--vthreads 2]
//                    [--max-layer-error 5] [--max-total-error 2]
// Exits 1 if an output differs or an error bound (percent) is exceeded.
#include <chrono>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "accel_layers.h"
#include "bench_util.h"
#include "loom/runtime/error.h"
#include "loom/sim/perf_model.h"
#include "loom/sim/rtl_sim.h"

using namespace loom;

namespace {

std::string arg(int argc, char** argv, const std::string& key, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == "--" + key) return argv[i + 1];
  return fallback;
}

accel::AccelConfig config_named(const std::string& name) {
  if (name == "default") return accel::default_config();
  return accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIGS_DIR) + "/" + name + ".json");
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) try {
  std::vector<std::string> configs = bench::split_list(arg(argc, argv, "configs", "default,1x32x32"));
  std::string which = arg(argc, argv, "layers", "all");
  int vt = bench::count_option(arg(argc, argv, "vthreads", "2"), "--vthreads", 64);
  double max_layer = std::stod(arg(argc, argv, "max-layer-error", "5"));
  double max_total = std::stod(arg(argc, argv, "max-total-error", "2"));
  std::cout << "performance model vs the RTL simulation: ResNet-18 conv layers, " << vt
            << " virtual threads, DRAM 32 cycles latency, 16 B/cycle\n";
  std::cout << std::left << std::setw(10) << "config" << std::setw(6) << "layer" << std::right << std::setw(11)
            << "rtl cyc" << std::setw(11) << "perf cyc" << std::setw(9) << "err %" << std::setw(10) << "rtl s"
            << std::setw(11) << "model s" << std::setw(10) << "speedup" << std::setw(10) << "perf s"
            << "  check\n";
  int failures = 0;
  double worst = 0, model_total_s = 0, rtl_total_s = 0;
  for (const std::string& name : configs) {
    accel::AccelConfig cfg = config_named(name);
    double rtl_sum = 0, perf_sum = 0;
    int layers = 0;
    for (const bench::ConvLayer& l : bench::kResNet18) {
      if (which != "all" && ("," + which + ",").find(std::string(",") + l.name + ",") == std::string::npos) continue;
      bench::Compiled c = bench::compile_layer(l, cfg, vt);
      sim::RtlSim rtl(cfg);
      uint64_t rtl_cycles = c.module.run(rtl, c.args).cycles;
      std::vector<int8_t> want(c.args.back().data<int8_t>(), c.args.back().data<int8_t>() + c.args.back().numel());
      c.args.back().fill_random(99, -1, 1);  // the perf run must overwrite it
      sim::PerfSim perf(cfg);
      auto t0 = std::chrono::steady_clock::now();
      uint64_t perf_cycles = c.module.run(perf, c.args).cycles;
      double perf_s = seconds_since(t0);
      bool same = std::memcmp(want.data(), c.args.back().data<int8_t>(), want.size()) == 0;
      failures += !same;
      double err = 100.0 * (double(perf_cycles) - double(rtl_cycles)) / double(rtl_cycles);
      worst = std::max(worst, std::fabs(err));
      rtl_sum += double(rtl_cycles) * l.repeats;
      perf_sum += double(perf_cycles) * l.repeats;
      rtl_total_s += rtl.simulation_seconds() * l.repeats;
      model_total_s += perf.model_seconds() * l.repeats;
      ++layers;
      std::cout << std::left << std::setw(10) << name << std::setw(6) << l.name << std::right << std::setw(11)
                << rtl_cycles << std::setw(11) << perf_cycles << std::setw(9) << std::fixed << std::setprecision(2)
                << err << std::setw(10) << std::setprecision(3) << rtl.simulation_seconds() << std::setw(11)
                << std::setprecision(5) << perf.model_seconds() << std::setw(9) << std::setprecision(0)
                << rtl.simulation_seconds() / perf.model_seconds() << "x" << std::setw(10) << std::setprecision(3)
                << perf_s << "  " << (same ? "bit-exact" : "MISMATCH") << "\n";
    }
    if (!layers) LOOM_THROW(Error, "--layers '", which, "' selects no layer");
    double total_err = 100.0 * (perf_sum - rtl_sum) / rtl_sum;
    std::cout << "  " << name << ": conv layers of ResNet-18 (each times its repeats) " << std::setprecision(3)
              << rtl_sum / 1e6 << " M cycles on the RTL, " << perf_sum / 1e6 << " M by the model, error "
              << std::setprecision(2) << total_err << "%\n";
    if (std::fabs(total_err) > max_total) {
      std::cout << "FAIL: whole-network error " << total_err << "% beyond " << max_total << "%\n";
      ++failures;
    }
  }
  std::cout << "worst layer error " << std::setprecision(2) << worst << "%; simulation time, layers times repeats: RTL "
            << std::setprecision(2) << rtl_total_s << " s, model " << std::setprecision(4) << model_total_s
            << " s (" << std::setprecision(0) << rtl_total_s / model_total_s << "x)\n";
  if (worst > max_layer) {
    std::cout << "FAIL: a layer's error beyond " << max_layer << "%\n";
    ++failures;
  }
  return failures ? 1 : 0;
} catch (const std::exception& e) {
  std::cerr << "perf_model_bench: " << e.what() << "\n";
  return 2;
}
