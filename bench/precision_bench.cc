// Precision on the accelerator: the blocked int8-class matrix product (accel/examples.h) at each
// shipped precision, timed by the performance model and by the RTL elaborated for that config
// (when built), each run checked by the program's own expected results, against W8A8 in the same
// run: cycles, weight and input DMA bytes, and the ratio to W8A8.
//
//   build/bin/precision_bench [M N K]     default 64 256 1024
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.h"
#include "loom/accel/examples.h"
#include "loom/accel/program.h"
#include "loom/runtime/error.h"
#include "loom/sim/backends.h"
#include "loom/sim/perf_model.h"

using namespace loom;

int main(int argc, char** argv) {
  int M = 64, N = 256, K = 1024;
  if (argc == 4) M = std::atoi(argv[1]), N = std::atoi(argv[2]), K = std::atoi(argv[3]);
  sim::register_backends();
  std::printf("precision_bench: C = A x W^T, %dx%dx%d, on the performance model and the RTL (%s)\n", M, N, K,
              bench::cpu_name().c_str());
  std::printf("%-8s %-28s %10s %10s %12s %12s %11s %9s\n", "config", "precision", "perf cyc", "rtl cyc", "wgt bytes",
              "inp bytes", "rtl/W8A8", "wgt/W8A8");
  double base_cycles = 0, base_wgt = 0;
  for (const std::string& name : {"default", "w4a8", "w2a8", "w4a4", "acc16"}) {
    const accel::AccelConfig cfg = accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIGS_DIR) + "/" + name + ".json");
    sim::PerfSim builder(cfg);
    accel::Program p = accel::matmul_program(builder, cfg, M, N, K, 1);
    sim::PerfSim dev(cfg);
    accel::ProgramResult r = accel::run_program(p, dev);
    if (r.mismatched_checks) {
      std::printf("%s: the result differs from the reference:\n%s", name.c_str(), r.report.c_str());
      return 1;
    }
    const double wgt = double(r.counters.at("dma_load_bytes_wgt")), inp = double(r.counters.at("dma_load_bytes_inp"));
    // The RTL of this config, when its model is built (LOOM_RTL_CONFIGS).
    double rtl_cycles = 0;
    try {
      check_accel_backend("rtl", cfg.to_json());
      auto rtl = make_accel_device("rtl", cfg.to_json());
      accel::ProgramResult rr = accel::run_program(p, *rtl);
      if (rr.mismatched_checks) {
        std::printf("%s on the RTL: the result differs from the reference:\n%s", name.c_str(), rr.report.c_str());
        return 1;
      }
      rtl_cycles = double(rr.cycles);
    } catch (const Error& e) {
      std::printf("%s: no RTL here (%s)\n", name.c_str(), e.what());
    }
    if (name == "default") base_cycles = rtl_cycles ? rtl_cycles : double(r.cycles), base_wgt = wgt;
    std::printf("%-8s %-28s %10llu %10.0f %12.0f %12.0f %10.2fx %8.2fx\n", name.c_str(), cfg.precision().c_str(),
                (unsigned long long)r.cycles, rtl_cycles, wgt, inp,
                (rtl_cycles ? rtl_cycles : double(r.cycles)) / base_cycles, wgt / base_wgt);
  }
  return 0;
}
