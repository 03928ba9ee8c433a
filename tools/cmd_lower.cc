// `loom lower`: print the loop IR of a built-in workload, optionally after every pass.
#include <iostream>

#include "cli.h"
#include "command.h"
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
  if (int rc = parse(app, args); rc >= 0) return rc;
  BuiltWorkload w = build_workload(workload, size);
  schedule::LowerOptions lo;
  if (all_passes) {
    lo.dump_ir = true;
    lo.dump_stream = &std::cout;
  }
  ir::LoweredFunc f = schedule::lower(*w.schedule, w.args(), workload, lo);
  if (!all_passes) std::cout << f;
  return 0;
}

LOOM_REGISTER_COMMAND("lower", "print the loop IR of a built-in workload", run_lower);

}  // namespace loom::tools
