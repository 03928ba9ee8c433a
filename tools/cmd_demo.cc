// `loom demo`: Loom's main job on its built-in default. Compiles the built-in workloads for the
// CPU and a blocked int8 matmul for the accelerator (on the functional simulator, or --backend rtl), runs them,
// checks them against references, and reports what it did.
#include <iostream>

#include "accel_backend.h"
#include "command.h"
#include "cpu_run.h"
#include "loom/accel/examples.h"
#include "loom/codegen/llvm.h"

namespace loom::tools {

static int demo(const std::vector<std::string>& args) {
  Options opt(args);
  std::cout << "Loom demo: tensor expressions -> schedules -> loop IR -> LLVM (" << codegen::host_target_description() << ")\n";
  int failures = 0;
  for (auto [name, size] : {std::pair{"gemm", 128}, std::pair{"conv2d", 14}, std::pair{"softmax", 16}}) {
    CpuRunOptions o;
    o.reps = 3;
    auto r = run_cpu_workload(name, size, o, std::cout);
    print_report(name, r, true, std::cout);
    failures += r.max_abs_error > 1e-3;
  }
  // The accelerator: a blocked int8 matmul through the runtime driver on the functional simulator.
  accel::AccelConfig cfg = accel::default_config();
  auto dev = make_accel_device("fsim", cfg.to_json());
  accel::Program p = accel::matmul_program(*dev, cfg, 16, 64, 256, 7);
  auto target = open_accel_backend(opt, cfg);
  accel::ProgramResult r = accel::run_program(p, *target);
  std::cout << "accel: int8 matmul 16x64x256 on " << target->name() << " (config '" << cfg.name << "'): " << p.insn_count
            << " instructions, " << r.counters["gemm_macs"] << " MACs, " << r.counters["dma_load_bytes"] << " bytes loaded, ";
  if (r.cycles)
    std::cout << r.cycles << " cycles (GEMM utilization "
              << 100.0 * double(r.counters["gemm_macs"]) / (double(r.cycles) * cfg.batch * cfg.block_in * cfg.block_out) << "%), ";
  std::cout << (r.mismatched_checks ? "MISMATCH" : "output matches the C++ reference") << "\n";
  failures += r.mismatched_checks != 0;
  std::cout << (failures ? "demo FAILED: results differ from the reference\n" : "all results match the reference\n");
  return failures ? 1 : 0;
}

LOOM_REGISTER_COMMAND("demo", "run Loom's built-in default workloads end to end and verify them",
                      std::string("loom demo ") + kBackendUsage + "\n  (the backend runs the accelerator part; default: the functional simulator)", demo);

}  // namespace loom::tools
