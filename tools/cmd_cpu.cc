// CPU subcommands: `loom run` compiles a built-in workload with the LLVM backend, runs it on
// random data, checks it against the naive reference and reports the time; `loom export` writes
// it as a shared library that `loom run --load` (or runtime::Module::load) reads back.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include <fstream>

#include "cli.h"
#include "command.h"
#include "cpu_run.h"
#include "loom/codegen/cuda.h"
#include "loom/codegen/llvm.h"
#include "loom/ir/eval.h"
#include "loom/ir/printer.h"
#include "loom/runtime/thread_pool.h"
#include "loom/schedule/lower.h"
#include "model_commands.h"
#include "workloads.h"

namespace loom::tools {

namespace {

// Up to this much work, outputs are checked with the naive interpreter (a 256^3 GEMM takes it about
// a second); beyond, with the unscheduled definition compiled (a 1024^3 GEMM took the interpreter
// over ten minutes).
constexpr double kInterpretedFlops = 1e8;

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
  BuiltWorkload w = build_workload(name, size);
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
    const NDArray& got = args[w.inputs.size()];
    NDArray want;
    if (w.flops <= kInterpretedFlops) {  // the naive interpreter: independent of every schedule and of LLVM
      std::map<const ir::Operation*, NDArray> in;
      for (size_t i = 0; i < w.inputs.size(); ++i) in[w.inputs[i].op().get()] = args[i];
      want = ir::reference_eval(w.outputs, in)[0];
      r.reference = "the naive interpreter";
    } else {  // too big to interpret in seconds: the same definition compiled without any schedule
      schedule::Schedule plain(w.outputs);
      runtime::Module ref = codegen::build_llvm({schedule::lower(plain, w.args(), name + "_reference")});
      auto ref_args = args;
      ref_args[w.inputs.size()] = NDArray::zeros(got.shape(), got.dtype());
      ref.call(name + "_reference", ref_args);
      want = ref_args[w.inputs.size()];
      r.reference = "the unscheduled loops, compiled";
    }
    for (int64_t i = 0; i < got.numel(); ++i)
      r.max_abs_error = std::max(r.max_abs_error, std::fabs(got.get_as_double(i) - want.get_as_double(i)));
  }
  r.best_ms = 1e30;
  for (int rep = 0; rep < std::max(1, opt.reps); ++rep) {
    auto s = std::chrono::steady_clock::now();
    m.call(name, args);
    r.best_ms =
        std::min(r.best_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
  }
  r.gflops = w.flops / (r.best_ms * 1e6);
  r.threads = runtime::num_threads();
  if (!opt.export_path.empty()) codegen::export_library({f}, opt.export_path);
  return r;
}

void print_report(const std::string& name, const CpuRunReport& r, bool verified, std::ostream& os) {
  os << std::fixed << std::setprecision(2) << name << ": compiled in " << r.compile_ms << " ms, best run " << r.best_ms
     << " ms on " << r.threads << " thread(s), " << std::setprecision(1) << r.gflops << " GFLOP/s";
  if (verified)
    os << std::scientific << std::setprecision(2) << ", max |error| vs reference " << r.max_abs_error << " ("
       << r.reference << ")";
  os << std::defaultfloat << "\n";
}

int run_model_cmd(const std::vector<std::string>& args);  // cmd_model.cc

namespace {

std::string workload_names() {
  std::string names;
  for (auto& w : builtin_workloads()) names += (names.empty() ? "" : ", ") + w.name;
  return names;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int run_cmd(const std::vector<std::string>& args) {
  // An ONNX model is compiled first: say so, with the two commands, before any option is parsed.
  for (const std::string& a : args)
    if (a[0] != '-' && ends_with(a, ".onnx")) {
      std::string loom = std::filesystem::path(a).filename().replace_extension(".loom").string();
      LOOM_THROW(Error, "'", a, "' is an ONNX model; `loom run` runs a compiled model (.loom) or a built-in workload. ",
                 "Compile it first, then run the compiled file with the same options: loom compile ", a, " -o ", loom,
                 " && loom run ", loom, " --input x.npy (loom compile --help: int8, --target accel)");
    }
  // `loom run model.loom ...` runs a compiled model (cmd_model.cc); otherwise a built-in workload.
  if (std::any_of(args.begin(), args.end(),
                  [](const std::string& a) { return a[0] != '-' && ends_with(a, ".loom"); })) {
    bool help = std::any_of(args.begin(), args.end(), [](const std::string& a) { return a == "-h" || a == "--help"; });
    return run_model_cmd(help ? std::vector<std::string>{"--help"}
                              : args);  // the help, even if the model does not exist
  }
  CLI::App app{
      "Compile a built-in workload for the CPU, run it on random data, verify it against the naive reference and time "
      "it",
      "loom run"};
  app.footer("workloads: " + workload_names() +
             " (see `loom lower`)\n`loom run model.loom --help` lists the options for compiled models.");
  std::string workload;
  int size = 0;
  CpuRunOptions o;
  bool no_verify = false;
  app.add_option("workload", workload, "built-in workload (" + workload_names() + ")")->required();
  number_option(app, "--size", size, "problem size (default: the workload's own)", 1, 65536);
  number_option(app, "--threads", o.threads, "threads (default: all cores)", 1, 1024);
  number_option(app, "--reps", o.reps, "timed runs (the best one is reported)", 1, 100000)->capture_default_str();
  app.add_flag("--print-ir", o.print_ir, "print the loop IR");
  app.add_flag("--no-verify", no_verify, "skip the check against the naive reference");
  app.add_option("--load", o.load_path,
                 "call the function from a library written by `loom export` instead of JIT-compiling")
      ->check(CLI::ExistingFile);
  if (int rc = parse(app, args); rc >= 0) return rc;
  o.verify = !no_verify;
  auto r = run_cpu_workload(workload, size, o, std::cout);
  print_report(workload, r, o.verify, std::cout);
  return o.verify && r.max_abs_error > 1e-3 ? 1 : 0;
}

}  // namespace

int export_workload(const std::vector<std::string>& args) {
  CLI::App app{
      "Compile a built-in workload into a shared library (`loom run --load` and runtime::Module::load read it). "
      "With --onnx-qdq, `loom export MODEL --onnx-qdq -o OUT.onnx` writes a quantized model as QDQ ONNX instead "
      "(`loom export MODEL --onnx-qdq --help`)",
      "loom export"};
  std::string workload;
  int size = 0;
  CpuRunOptions o;
  app.add_option("workload", workload, "built-in workload (" + workload_names() + ")")->required();
  app.add_option("out", o.export_path, "shared library to write (--target cuda: a CUDA program)")
      ->required()
      ->check(output_file());
  number_option(app, "--size", size, "problem size (default: the workload's own)", 1, 65536);
  std::string target = "cpu";
  app.add_option("--target", target,
                 "cpu, or cuda: the workload's GPU schedule compiled by NVRTC into a CUDA program "
                 "(runtime::CudaProgram::deserialize, CudaModule::load)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (target == "cuda") {
    BuiltWorkload w = build_workload(workload, size, true);
    schedule::LowerOptions lo;
    lo.target_gpu = true;
    runtime::CudaProgram p = codegen::cuda::build({schedule::lower(*w.schedule, w.args(), workload, lo)});
    std::ofstream out(o.export_path, std::ios::binary);
    std::string bytes = p.serialize();
    out.write(bytes.data(), std::streamsize(bytes.size()));
    if (!out) LOOM_THROW(Error, "cannot write '", o.export_path, "'");
    std::cout << "wrote " << o.export_path << " (function '" << workload << "', " << p.functions[0].kernels.size()
              << " CUDA kernels for " << p.arch << ")\n";
    for (auto& k : p.functions[0].kernels)
      std::cout << "  " << k.name << ": grid " << k.grid[0] << "x" << k.grid[1] << "x" << k.grid[2] << ", block "
                << k.block[0] << "x" << k.block[1] << "x" << k.block[2] << ", " << k.registers << " registers, "
                << k.shared_bytes << " bytes shared\n";
    return 0;
  }
  o.verify = false;
  o.reps = 1;
  run_cpu_workload(workload, size, o, std::cout);
  std::cout << "wrote " << o.export_path << " (function '" << workload << "')\n";
  return 0;
}

LOOM_REGISTER_COMMAND("run", "run a compiled model (model.loom), or compile, run, verify and time a built-in workload",
                      run_cmd);

}  // namespace loom::tools
