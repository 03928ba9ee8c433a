// The performance model against the cycle-accurate RTL: ResNet-18's conv layers (accel_layers.h)
// on the default and 1x32x32 configs, each run on the RTL simulation and on the "perf" backend
// (the functional simulator's results with the model's cycles). Per layer: both cycle counts and
// the model's error, the RTL's simulation time against the model's (timing alone, and the perf
// backend's whole run with the functional simulation), outputs compared bit-exactly; then the
// conv layers of the whole network (each layer times its repeats), and the whole int8 ResNet-18
// compiled for each config (one inference on each backend).
//
//   perf_model_bench [--configs default,1x32x32] [--layers all|c2,c5,...] [--vthreads 2]
//                    [--max-layer-error 5] [--max-total-error 2] [--calibrate]
// Then `loom dse` on a 50-point sweep of the layers, timed. Exits 1 if an output differs, an error
// bound (percent) is exceeded or the sweep fails. --calibrate fits the
// model's RTL constants (PerfParams) to these layers, plus the 1x1 and strided ones under a slower
// DRAM (96 cycles, 8 B/cycle), by coordinate descent on the worst error, and prints them as the
// perf backend's options: how the defaults were found, and how to refit them after an RTL change.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "../tests/sim/stream_fuzzer.h"
#include "accel_layers.h"
#include "bench_util.h"
#include "loom/runtime/error.h"
#ifdef LOOM_HAVE_GRAPH
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/quantize.h"
#include "loom/regress/compare.h"
#include "loom/runtime/graph_executor.h"
#endif
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

struct Workload {
  std::string what;
  accel::AccelConfig config;
  std::vector<accel::Instruction> stream;
  uint32_t latency;
  double bytes_per_cycle;
  uint64_t rtl_cycles;
};

// Worst and summed absolute error (percent) of `p` over the workloads.
std::pair<double, double> errors(const std::vector<Workload>& set, sim::PerfParams p) {
  double worst = 0, sum = 0;
  for (const Workload& w : set) {
    p.dram_latency = w.latency;
    p.dram_bytes_per_cycle = w.bytes_per_cycle;
    double c = double(sim::estimate_cycles(w.stream, w.config, p).cycles);
    double e = std::fabs(100.0 * (c - double(w.rtl_cycles)) / double(w.rtl_cycles));
    worst = std::max(worst, e);
    sum += e;
  }
  return {worst, sum};
}

int calibrate(const std::vector<std::string>& configs, int vt) {
  std::vector<Workload> set;
  for (const std::string& name : configs) {
    accel::AccelConfig cfg = config_named(name);
    for (auto [latency, bw] : {std::pair<uint32_t, double>{32, 16}, {96, 8}})
      for (const bench::ConvLayer& l : bench::kResNet18) {
        if (latency != 32 && l.kernel != 1) continue;
        bench::Compiled c = bench::compile_layer(l, cfg, vt);
        sim::RtlSimOptions o;
        o.dram_latency = latency;
        o.dram_bytes_per_cycle = bw;
        sim::RtlSim rtl(cfg, o);
        uint64_t cycles = c.module.run(rtl, c.args).cycles;
        sim::PerfSim perf(cfg);
        c.module.run(perf, c.args);
        set.push_back(
            {name + " " + l.name + " DRAM " + std::to_string(latency), cfg, perf.last_stream(), latency, bw, cycles});
      }
    // ResNet-18's residual adds (accumulator loads, register-operand ALU ops, stores).
    for (auto [channels, size] : {std::pair<int, int>{64, 56}, {128, 28}, {256, 14}, {512, 7}}) {
      ops::AccelOpSpec spec;
      spec.kind = ops::AccelOpKind::Add;
      spec.channels = channels;
      spec.size = size;
      spec.virtual_threads = vt;
      ops::AccelOperator a = ops::make_accel_operator(spec, ops::accel_target(cfg), "add");
      codegen::AccelModule m = codegen::build_accel(a.func, cfg);
      std::vector<NDArray> args = a.random_args(1);
      sim::RtlSim rtl(cfg);
      uint64_t cycles = m.run(rtl, args).cycles;
      sim::PerfSim perf(cfg);
      m.run(perf, args);
      set.push_back({name + " add " + std::to_string(channels) + "@" + std::to_string(size), cfg, perf.last_stream(),
                     32, 16, cycles});
    }
    // Random streams whose every instruction hands a token to the next (tests/sim/stream_fuzzer.h):
    // the fixed costs the layers' overlap hides. Seeds apart from the ones test_perf_model checks.
    for (int seed = 0; seed < 8; ++seed) {
      sim::RtlSim rtl(cfg);
      accel::Driver drv(rtl, cfg);
      accel::test_streams::StreamFuzzer f(drv, cfg, 5000 + seed);
      f.build(60);
      accel::Driver::SealedStream s = drv.seal_stream();
      rtl.launch(s.addr, s.count);
      rtl.wait();
      set.push_back({name + " stream " + std::to_string(seed), cfg, s.instructions, 32, 16, rtl.cycles()});
    }
  }
  struct Knob {
    const char* name;
    uint32_t sim::PerfParams::*field;
    uint32_t lo, hi;
  };
  const Knob knobs[] = {{"dma_setup", &sim::PerfParams::dma_setup, 0, 24},
                        {"burst_issue_gap", &sim::PerfParams::burst_issue_gap, 1, 8},
                        {"read_overhead", &sim::PerfParams::read_overhead, 0, 24},
                        {"dma_tail", &sim::PerfParams::dma_tail, 0, 24},
                        {"pipeline_overhead", &sim::PerfParams::pipeline_overhead, 0, 24},
                        {"dispatch_delay", &sim::PerfParams::dispatch_delay, 0, 12},
                        {"start_overhead", &sim::PerfParams::start_overhead, 0, 24},
                        {"end_overhead", &sim::PerfParams::end_overhead, 0, 24}};
  sim::PerfParams best;
  auto score = errors(set, best);
  std::cout << "calibrating on " << set.size() << " workloads; defaults: worst " << std::setprecision(3) << score.first
            << "%, mean " << score.second / double(set.size()) << "%\n";
  for (int round = 0; round < 3; ++round)
    for (const Knob& k : knobs)
      for (uint32_t v = k.lo; v <= k.hi; ++v) {
        sim::PerfParams p = best;
        p.*k.field = v;
        auto s = errors(set, p);
        if (s.first < score.first - 1e-9 || (s.first < score.first + 1e-9 && s.second < score.second - 1e-9)) {
          best = p;
          score = s;
        }
      }
  std::cout << "fitted: worst " << score.first << "%, mean " << score.second / double(set.size())
            << "%\nperf backend options: {";
  for (size_t i = 0; i < std::size(knobs); ++i)
    std::cout << (i ? ", " : "") << "\"" << knobs[i].name << "\": " << best.*knobs[i].field;
  std::cout << "}\n";
  for (const Workload& w : set) {
    sim::PerfParams p = best;
    p.dram_latency = w.latency;
    p.dram_bytes_per_cycle = w.bytes_per_cycle;
    double c = double(sim::estimate_cycles(w.stream, w.config, p).cycles);
    std::cout << "  " << std::left << std::setw(24) << w.what << std::right << std::setw(10) << w.rtl_cycles
              << std::setw(10) << uint64_t(c) << std::setw(8) << std::setprecision(2) << std::fixed
              << 100.0 * (c - double(w.rtl_cycles)) / double(w.rtl_cycles) << "%\n"
              << std::defaultfloat;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  std::vector<std::string> configs = bench::split_list(arg(argc, argv, "configs", "default,1x32x32"));
  std::string which = arg(argc, argv, "layers", "all");
  int vt = bench::count_option(arg(argc, argv, "vthreads", "2"), "--vthreads", 64);
  double max_layer = std::stod(arg(argc, argv, "max-layer-error", "5"));
  double max_total = std::stod(arg(argc, argv, "max-total-error", "2"));
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--calibrate") return calibrate(configs, vt);
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
#ifdef LOOM_HAVE_GRAPH
  // The whole int8 ResNet-18 (224x224, its int8 layers on the accelerator) per config: one inference
  // on the RTL and on perf, every accelerator kernel's cycles summed, the outputs compared.
  if (which == "all") {
    graph::Graph g = graph::builtin_model("resnet18", 1, 224);
    NDArray x = NDArray::empty({1, 3, 224, 224}, DataType::Float(32));
    x.fill_random(7);
    graph::Graph q = graph::quantize(g, {{x}}).graph;
    for (const std::string& name : configs) {
      accel::AccelConfig cfg = config_named(name);
      graph::BuildOptions bo;
      bo.accel = cfg;
      runtime::ModelFile file = graph::build(q, bo).file;
      auto infer = [&](const std::string& backend, uint64_t& cycles, double& seconds) {
        runtime::ExecutorOptions eo;
        eo.accel_backend = backend;
        auto ex = runtime::GraphExecutor::from_model_file(file, "resnet18", eo);
        auto t0 = std::chrono::steady_clock::now();
        NDArray out = ex.run({x})[0];
        seconds = seconds_since(t0);
        cycles = regress::accel_totals(ex).cycles;
        return out;
      };
      uint64_t rtl_cycles = 0, perf_cycles = 0;
      double rtl_s = 0, perf_s = 0;
      NDArray want = infer("rtl", rtl_cycles, rtl_s), got = infer("perf", perf_cycles, perf_s);
      bool same = regress::compare_arrays(got, want).equal();
      double err = 100.0 * (double(perf_cycles) - double(rtl_cycles)) / double(rtl_cycles);
      std::cout << "  " << name << ": whole int8 ResNet-18, " << std::setprecision(3) << rtl_cycles / 1e6
                << " M cycles on the RTL (" << std::setprecision(1) << rtl_s << " s), " << std::setprecision(3)
                << perf_cycles / 1e6 << " M on perf (" << std::setprecision(2) << perf_s
                << " s with fsim's execution), error " << err << "%, output " << (same ? "equal" : "DIFFERENT") << "\n";
      failures += !same;
      if (std::fabs(err) > max_total) {
        std::cout << "FAIL: whole int8 ResNet-18 error " << err << "% beyond " << max_total << "%\n";
        ++failures;
      }
    }
  }
#endif
  // `loom dse` on a 50-point sweep of the whole conv set (2 GEMM shapes x 5 weight scratchpads x 5
  // DRAM bandwidths), on the local cores: the wall time a design-space study takes.
  {
    std::string dir = "/tmp/perf_model_bench_dse_" + std::to_string(getpid());
    std::string cmd = std::string(LOOM_TOOL) +
                      " dse -q --sweep block=16,32 --sweep wgt_kib=64,128,256,512,1024 --sweep "
                      "dram_bytes_per_cycle=4,8,16,32,64 --out " +
                      dir + " > " + dir + ".log 2>&1";
    auto t0 = std::chrono::steady_clock::now();
    int rc = std::system(cmd.c_str());
    double s = seconds_since(t0);
    std::cout << "loom dse, 50 points x 10 layers of ResNet-18: " << std::setprecision(1) << s << " s"
              << (rc == 0 ? "" : " (FAILED, see " + dir + ".log)") << "\n";
    failures += rc != 0;
    std::system(("rm -rf " + dir + " " + dir + ".log").c_str());
  }
  std::cout << "worst layer error " << std::setprecision(2) << worst << "%; simulation time, layers times repeats: RTL "
            << std::setprecision(2) << rtl_total_s << " s, model " << std::setprecision(4) << model_total_s << " s ("
            << std::setprecision(0) << rtl_total_s / model_total_s << "x)\n";
  if (worst > max_layer) {
    std::cout << "FAIL: a layer's error beyond " << max_layer << "%\n";
    ++failures;
  }
  return failures ? 1 : 0;
} catch (const std::exception& e) {
  std::cerr << "perf_model_bench: " << e.what() << "\n";
  return 2;
}
