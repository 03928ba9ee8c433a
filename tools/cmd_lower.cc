// `loom lower`: print the loop IR of a built-in workload, optionally after every pass.
#include <iostream>

#include "cli.h"
#include "command.h"
#include "loom/codegen/cuda.h"
#include "loom/ir/printer.h"
#include "loom/schedule/lower.h"
#include "workloads.h"

namespace loom::tools {

static int run_lower(const std::vector<std::string>& args) {
  CLI::App app{"Print the loop IR of a built-in workload", "loom lower"};
  std::string names;
  for (auto& w : builtin_workloads()) names += (names.empty() ? "" : ", ") + w.name;
  std::string workload;
  int size = 0;
  bool all_passes = false;
  app.add_option("workload", workload, "built-in workload (" + names + ")")->required();
  number_option(app, "--size", size, "problem size (default: the workload's own)", 1, 65536);
  app.add_flag("--all-passes", all_passes, "print the IR after every lowering pass");
  std::string target = "cpu";
  app.add_option("--target", target, "cpu, or cuda: the workload's GPU schedule, lowered for the GPU")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  bool cuda_source = false;
  app.add_flag("--cuda-source", cuda_source, "with --target cuda: print the CUDA C instead of the loop IR");
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (cuda_source && target != "cuda") LOOM_THROW(Error, "--cuda-source needs --target cuda");
  BuiltWorkload w = build_workload(workload, size, target == "cuda");
  schedule::LowerOptions lo;
  lo.target_gpu = target == "cuda";
  if (all_passes) {
    lo.dump_ir = true;
    lo.dump_stream = &std::cout;
  }
  ir::LoweredFunc f = schedule::lower(*w.schedule, w.args(), workload, lo);
  if (cuda_source)
    std::cout << codegen::cuda::emit({f}).source;
  else if (!all_passes)
    std::cout << f;
  return 0;
}

LOOM_REGISTER_COMMAND("lower", "print the loop IR of a built-in workload", run_lower);

}  // namespace loom::tools
