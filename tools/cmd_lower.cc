// `loom lower`: print the loop IR of a built-in workload, optionally after every pass.
#include <iostream>

#include "command.h"
#include "loom/ir/printer.h"
#include "loom/schedule/lower.h"
#include "workloads.h"

namespace loom::tools {

static int run_lower(const std::vector<std::string>& args) {
  Options opt(args, {"all-passes"});
  if (opt.positional().size() != 1) LOOM_THROW(Error, "usage: loom lower <workload> [--size N] [--all-passes]");
  BuiltWorkload w = find_workload(opt.positional()[0]).build(static_cast<int>(opt.get_int("size", 0)));
  schedule::LowerOptions lo;
  if (opt.has("all-passes")) {
    lo.dump_ir = true;
    lo.dump_stream = &std::cout;
  }
  ir::LoweredFunc f = schedule::lower(*w.schedule, w.args(), opt.positional()[0], lo);
  if (!opt.has("all-passes")) std::cout << f;
  return 0;
}

LOOM_REGISTER_COMMAND("lower", "print the loop IR of a built-in workload",
                      "loom lower <workload> [--size N] [--all-passes]\n"
                      "  workloads: gemm, conv2d, softmax\n"
                      "  --all-passes  print the IR after every lowering pass",
                      run_lower);

}  // namespace loom::tools
