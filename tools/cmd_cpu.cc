// CPU subcommands: `loom run` compiles a built-in workload with the LLVM backend, runs it on
// random data, checks it against the naive reference and reports the time; `loom export` writes
// it as a shared library that `loom run --load` (or runtime::Module::load) reads back.
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>

#include "command.h"
#include "cpu_run.h"
#include "loom/codegen/llvm.h"
#include "loom/ir/eval.h"
#include "loom/ir/printer.h"
#include "loom/runtime/thread_pool.h"
#include "loom/schedule/lower.h"
#include "workloads.h"

namespace loom::tools {

namespace {

std::vector<NDArray> make_args(const BuiltWorkload& w, uint64_t seed) {
  std::vector<NDArray> args;
  for (auto& t : w.args()) {
    std::vector<int64_t> shape;
    for (auto& e : t.shape()) shape.push_back(*ir::as_const_int(e));
    NDArray a = NDArray::zeros(shape, t.dtype());
    if (args.size() < w.inputs.size()) a.fill_random(seed++, -1, 1);
    args.push_back(a);
  }
  return args;
}

}  // namespace

CpuRunReport run_cpu_workload(const std::string& name, int size, const CpuRunOptions& opt, std::ostream& log) {
  BuiltWorkload w = find_workload(name).build(size);
  CpuRunReport r;
  auto t0 = std::chrono::steady_clock::now();
  ir::LoweredFunc f = schedule::lower(*w.schedule, w.args(), name);
  runtime::Module m = opt.load_path.empty() ? codegen::build_llvm({f}) : runtime::Module::load(opt.load_path);
  r.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (opt.print_ir) log << f << "\n";
  if (opt.threads > 0) runtime::set_num_threads(opt.threads);
  auto args = make_args(w, 1);
  m.call(name, args);  // warm-up, and the result we check
  if (opt.verify) {
    std::map<const ir::Operation*, NDArray> in;
    for (size_t i = 0; i < w.inputs.size(); ++i) in[w.inputs[i].op().get()] = args[i];
    auto want = ir::reference_eval(w.outputs, in);
    const NDArray& got = args[w.inputs.size()];
    for (int64_t i = 0; i < got.numel(); ++i)
      r.max_abs_error = std::max(r.max_abs_error, std::fabs(got.get_as_double(i) - want[0].get_as_double(i)));
  }
  r.best_ms = 1e30;
  for (int rep = 0; rep < std::max(1, opt.reps); ++rep) {
    auto s = std::chrono::steady_clock::now();
    m.call(name, args);
    r.best_ms = std::min(r.best_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
  }
  r.gflops = w.flops / (r.best_ms * 1e6);
  r.threads = runtime::num_threads();
  if (!opt.export_path.empty()) codegen::export_library({f}, opt.export_path);
  return r;
}

void print_report(const std::string& name, const CpuRunReport& r, bool verified, std::ostream& os) {
  os << std::fixed << std::setprecision(2) << name << ": compiled in " << r.compile_ms << " ms, best run " << r.best_ms << " ms on "
     << r.threads << " thread(s), " << std::setprecision(1) << r.gflops << " GFLOP/s";
  if (verified) os << std::scientific << std::setprecision(2) << ", max |error| vs reference " << r.max_abs_error;
  os << std::defaultfloat << "\n";
}

int run_model_cmd(const std::vector<std::string>& args);  // cmd_model.cc

static int run_cmd(const std::vector<std::string>& args) {
  // `loom run model.loom ...` runs a compiled model; otherwise a built-in workload.
  if (!args.empty() && args[0].size() > 5 && args[0].compare(args[0].size() - 5, 5, ".loom") == 0) return run_model_cmd(args);
  Options opt(args, {"print-ir", "no-verify"});
  if (opt.positional().size() != 1)
    LOOM_THROW(Error, "usage: loom run <workload> [--size N] [--threads T] [--reps R] [--print-ir] [--no-verify] [--load lib.so]");
  CpuRunOptions o;
  o.threads = static_cast<int>(opt.get_int("threads", 0));
  o.reps = static_cast<int>(opt.get_int("reps", 5));
  o.print_ir = opt.has("print-ir");
  o.verify = !opt.has("no-verify");
  o.load_path = opt.get("load");
  auto r = run_cpu_workload(opt.positional()[0], static_cast<int>(opt.get_int("size", 0)), o, std::cout);
  print_report(opt.positional()[0], r, o.verify, std::cout);
  return o.verify && r.max_abs_error > 1e-3 ? 1 : 0;
}

static int export_cmd(const std::vector<std::string>& args) {
  Options opt(args);
  if (opt.positional().size() != 2) LOOM_THROW(Error, "usage: loom export <workload> <out.so> [--size N]");
  CpuRunOptions o;
  o.export_path = opt.positional()[1];
  o.verify = false;
  o.reps = 1;
  run_cpu_workload(opt.positional()[0], static_cast<int>(opt.get_int("size", 0)), o, std::cout);
  std::cout << "wrote " << o.export_path << " (function '" << opt.positional()[0] << "')\n";
  return 0;
}

LOOM_REGISTER_COMMAND("run", "compile a built-in workload for the CPU, run, verify and time it",
                      "loom run model.loom [--input x.npy] [--output y.npy] [--reference r.npy] [--threads T] [--profile]  (see loom run model.loom --help)\n"
                      "loom run <workload> [--size N] [--threads T] [--reps R] [--print-ir] [--no-verify] [--load lib.so]\n"
                      "  workloads: gemm, conv2d, softmax (see `loom lower`)\n"
                      "  --load  call the function from a library written by `loom export` instead of JIT-compiling",
                      run_cmd);
LOOM_REGISTER_COMMAND("export", "compile a built-in workload into a shared library", "loom export <workload> <out.so> [--size N]",
                      export_cmd);

}  // namespace loom::tools
