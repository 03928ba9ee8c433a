// `loom demo`: Loom's main job on its built-in default. Compiles the built-in workloads for the
// CPU, runs them, checks them against the naive reference, and reports what it did.
#include <iostream>

#include "command.h"
#include "cpu_run.h"
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
  std::cout << (failures ? "demo FAILED: results differ from the reference\n" : "all results match the reference\n");
  return failures ? 1 : 0;
}

LOOM_REGISTER_COMMAND("demo", "run Loom's built-in default workloads end to end and verify them", "loom demo", demo);

}  // namespace loom::tools
