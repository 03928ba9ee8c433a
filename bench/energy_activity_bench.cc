// The energy model against a switching-activity estimate that is not built on its counts: each
// config's RTL (Verilated, as the rtl backend runs it) runs the same layers with a waveform, and
// every signal's bit toggles are weighted by the load its bits drive in a yosys netlist of that
// config's RTL (sim/activity.h). The energy model (accel/energy_model.h, asic-45nm) gives the
// logic's dynamic energy (multiply-accumulates, ALU, instruction decode) from the run's counters:
// the waveform holds the design's registers and wires but not its scratchpad arrays (Verilator
// does not trace memories), so the SRAM part of the model has nothing to be compared with here. Both are read relative
// to the default config: the bench prints each config's ratio by either, their relative difference, and whether they
// rank the configs in the same order (Spearman's rank correlation).
//
//   build/bench/energy_activity_bench [OUT_DIR]     (yosys' netlists and the waveforms go there)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "loom/accel/energy_model.h"
#include "loom/accel/hw_params.h"
#include "loom/codegen/accel.h"
#include "loom/ops/accel_operators.h"
#include "loom/runtime/error.h"
#include "loom/runtime/spawn.h"
#include "loom/sim/activity.h"
#include "loom/sim/backends.h"
#include "loom/sim/rtl_sim.h"

using namespace loom;
namespace fs = std::filesystem;

namespace {

// The config's RTL, flattened without technology mapping: its nets and the cells they feed.
std::string netlist(const accel::AccelConfig& cfg, const fs::path& dir) {
  const fs::path json = dir / ("netlist_" + cfg.name + ".json");
  if (fs::exists(json)) return json.string();
  const fs::path pkg = dir / ("loom_accel_pkg_" + cfg.name + ".sv"), script = dir / ("netlist_" + cfg.name + ".ys");
  std::ofstream(pkg) << accel::sv_package(cfg);
  std::ofstream(script) << accel::yosys_read_rtl(pkg.string(), LOOM_RTL_DIR) << "proc\nflatten\nopt_clean\nwrite_json "
                        << json.string() << "\n";
  const fs::path log = dir / ("netlist_" + cfg.name + ".log");
  runtime::LoggedRun r = runtime::run_logged({"yosys", "-q", script.string()}, log, 1800);
  if (r.end != runtime::LoggedRun::End::Exited || r.status != 0 || !fs::exists(json))
    LOOM_THROW(Error, "yosys did not write the netlist of '", cfg.name, "' (log ", log.string(), ")");
  return json.string();
}

struct Figures {
  double activity = 0, model_pj = 0, matched = 0;
  uint64_t cycles = 0;
};

Figures measure(const accel::AccelConfig& cfg, const ops::AccelConvLayer& layer, const fs::path& dir,
                const std::map<std::string, double>& loads) {
  ops::AccelOperator a = ops::make_accel_conv_layer(layer, ops::accel_target(cfg), 2);
  codegen::AccelModule m = codegen::build_accel(a.func, cfg);
  std::vector<NDArray> args = a.random_args(1);
  const fs::path fst = dir / ("run_" + cfg.name + "_" + std::string(layer.name) + ".fst");
  sim::RtlSimOptions o;
  o.fst_path = fst.string();
  Figures f;
  {
    sim::RtlSim dev(cfg, o);
    f.cycles = m.run(dev, args).cycles;
    std::vector<uint64_t> run = dev.run_counters();
    accel::EnergyCounts counts;
    counts.add({run.begin() + 1, run.end()}, f.cycles);
    auto by = accel::estimate_energy(counts, cfg, accel::energy_table("asic-45nm")).by_category();
    f.model_pj = by["mac"] + by["alu"] + by["insn"];
  }  // the waveform is closed with the device
  f.activity = sim::weighted_activity(sim::fst_toggles(fst.string()), loads, &f.matched);
  fs::remove(fst);
  return f;
}

// Spearman's rank correlation of two equally long lists (no ties expected).
double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  auto ranks = [](const std::vector<double>& v) {
    std::vector<size_t> order(v.size());
    for (size_t k = 0; k < v.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
    std::vector<double> r(v.size());
    for (size_t k = 0; k < order.size(); ++k) r[order[k]] = double(k);
    return r;
  };
  std::vector<double> ra = ranks(a), rb = ranks(b);
  double d2 = 0;
  for (size_t k = 0; k < a.size(); ++k) d2 += (ra[k] - rb[k]) * (ra[k] - rb[k]);
  const double n = double(a.size());
  return 1 - 6 * d2 / (n * (n * n - 1));
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path dir = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "loom-energy-activity";
  fs::create_directories(dir);
  sim::register_backends();
  const std::vector<std::string> names = {"default", "w4a8", "w4a4", "w2a8", "1x32x32"};
  const std::vector<ops::AccelConvLayer> layers = {{"conv3x3", 64, 64, 14, 3, 1, 1}, {"c10", 256, 512, 14, 1, 2, 1}};
  std::printf(
      "energy_activity_bench: the energy model (asic-45nm, logic: MAC, ALU, decode) against RTL switching activity "
      "weighted by yosys netlist loads, relative to the default config (%s)\n",
      bench::cpu_name().c_str());
  std::vector<accel::AccelConfig> configs;
  std::vector<std::map<std::string, double>> loads;
  for (const std::string& n : names) {
    accel::AccelConfig cfg = accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIGS_DIR) + "/" + n + ".json");
    try {
      check_accel_backend("rtl", cfg.to_json());
    } catch (const Error& e) {
      std::printf("  %s: skipped (%s)\n", n.c_str(), e.what());
      continue;
    }
    loads.push_back(sim::netlist_loads(netlist(cfg, dir), "loom_accel"));
    configs.push_back(cfg);
  }
  if (configs.size() < 2 || configs.front().name != "default") {
    std::printf("the default config and at least one other need an RTL model here (LOOM_RTL_CONFIGS)\n");
    return 1;
  }
  double worst = 0;
  bool same_order = true;
  for (const ops::AccelConvLayer& l : layers) {
    std::printf("\n%s: conv %dx%d, %d->%d channels, %dx%d input, stride %d\n", l.name, l.kernel, l.kernel, l.channels,
                l.out_channels, l.size, l.size, l.stride);
    std::printf("  %-8s %9s %16s %8s %14s %11s %11s %9s\n", "config", "cycles", "weighted toggles", "matched",
                "model pJ", "activity x", "model x", "diff");
    std::vector<Figures> f;
    for (size_t k = 0; k < configs.size(); ++k) f.push_back(measure(configs[k], l, dir, loads[k]));
    std::vector<double> act, model;
    for (size_t k = 0; k < configs.size(); ++k) {
      const double ra = f[k].activity / f[0].activity, rm = f[k].model_pj / f[0].model_pj;
      const double diff = (rm - ra) / ra;
      worst = std::max(worst, std::fabs(diff));
      act.push_back(f[k].activity);
      model.push_back(f[k].model_pj);
      std::printf("  %-8s %9llu %16.4g %7.1f%% %14.4g %11.3f %11.3f %+8.1f%%\n", configs[k].name.c_str(),
                  (unsigned long long)f[k].cycles, f[k].activity, 100 * f[k].matched, f[k].model_pj, ra, rm,
                  100 * diff);
    }
    const double rho = spearman(act, model);
    same_order &= rho > 0.999;
    std::printf("  rank agreement (Spearman): %.3f%s\n", rho, rho > 0.999 ? " (the same order)" : "");
  }
  std::printf("\nlargest relative difference of the ratios: %.1f%%; the same order on every layer: %s\n", 100 * worst,
              same_order ? "yes" : "no");
  return 0;
}
