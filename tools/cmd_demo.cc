// `loom demo`: Loom's main job on its built-in default. Compiles the built-in workloads and the
// built-in ResNet-18 for the CPU, the same ResNet-18 quantized to int8 with its int8 layers on the
// accelerator, and a blocked int8 matmul for the accelerator (the accelerator parts on the
// functional simulator, or --backend rtl), runs them, checks them against references, and reports
// what it did.
#include <iostream>

#include "accel_backend.h"
#include "cli.h"
#include "command.h"
#include "cpu_run.h"
#include "loom/accel/examples.h"
#include "loom/codegen/llvm.h"
#ifdef LOOM_HAVE_GRAPH
#include <algorithm>
#include <chrono>
#include <cmath>

#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/quantize.h"
#include "loom/graph/reference.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/thread_pool.h"
#endif

namespace loom::tools {

#ifdef LOOM_HAVE_GRAPH
// A whole model: the built-in ResNet-18 compiled for the CPU, run by the runtime's graph executor,
// checked against the naive graph interpreter, and timed.
static int demo_model(const std::string& name, std::ostream& os) {
  auto t0 = std::chrono::steady_clock::now();
  graph::Graph g = graph::builtin_model(name);
  graph::BuildResult r = graph::build(g);
  double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto ex = runtime::GraphExecutor::from_model_file(r.file, name);
  NDArray x = NDArray::empty(ex.input_spec(0).shape, ex.input_spec(0).dtype);
  x.fill_random(42);
  NDArray got = ex.run({x})[0];
  std::vector<double> ms;
  for (int i = 0; i < 5; ++i) {
    auto s = std::chrono::steady_clock::now();
    ex.run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
  }
  std::sort(ms.begin(), ms.end());
  os << "model: " << name << " (built in, batch 1, float32) compiled in " << compile_s << " s: " << r.kernels.size()
     << " distinct kernels, " << r.executor_graph.kernels.size() << " calls, intermediates "
     << r.memory.planned_bytes() / 1024 << " KiB planned vs " << r.memory.unplanned_bytes / 1024
     << " KiB unplanned; latency " << ms[2] << " ms (median of 5, " << runtime::num_threads() << " threads)\n";
  NDArray want = graph::reference_run(g, {x})[0];
  double scale = 0, err = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    scale = std::max(scale, std::fabs(want.get_as_double(i)));
    err = std::max(err, std::fabs(want.get_as_double(i) - got.get_as_double(i)));
  }
  bool ok = err <= 1e-4 * scale;
  os << "model: " << name << " logits vs the naive graph interpreter: max |error| " << err << " (" << err / scale
     << " of the largest logit), " << (ok ? "matches" : "MISMATCH") << "\n";
  return ok ? 0 : 1;
}

// The built-in ResNet-18 quantized to int8, compiled with its int8 layers on the accelerator, run
// on the backend, and checked bit for bit against the same int8 model on the CPU.
static int demo_accel_model(const BackendOptions& bo, std::ostream& os) {
  auto t0 = std::chrono::steady_clock::now();
  graph::Graph g = graph::builtin_model("resnet18");
  std::vector<std::vector<NDArray>> calibration;
  for (int i = 0; i < 4; ++i) {
    NDArray c = NDArray::empty({1, 3, 224, 224}, DataType::Float(32));
    c.fill_random(1000 + i);
    calibration.push_back({c});
  }
  graph::Graph q = graph::quantize(g, calibration).graph;
  graph::BuildOptions o;
  o.accel = accel::default_config();
  graph::BuildResult acc = graph::build(q, o);
  auto cpu = runtime::GraphExecutor::from_model_file(graph::build(q).file, "resnet18 int8");
  double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  runtime::ExecutorOptions eo;
  eo.accel_backend = bo.backend;
  eo.accel_config_json = backend_config_json(bo, *o.accel);
  auto ex = runtime::GraphExecutor::from_model_file(acc.file, "resnet18 int8 accel", eo);
  NDArray x = NDArray::empty({1, 3, 224, 224}, DataType::Float(32));
  x.fill_random(42);
  auto t1 = std::chrono::steady_clock::now();
  NDArray got = ex.run({x})[0];
  double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  NDArray want = cpu.run({x})[0];
  bool ok = got.nbytes() == want.nbytes() &&
            std::equal(got.data<float>(), got.data<float>() + got.numel(), want.data<float>());
  uint64_t cycles = 0, macs = 0;
  for (auto& st : ex.accel_stats()) cycles += st.cycles, macs += st.gemm_macs;
  os << "model: resnet18 int8 (quantized, calibrated on 4 inputs; compiled for the CPU and the accelerator in "
     << compile_s << " s): " << acc.accel_report.offloaded << " layers on the accelerator (" << bo.backend
     << ", config '" << o.accel->name << "'), " << macs << " MACs, ";
  if (cycles) os << cycles << " cycles, ";
  os << run_s << " s; logits vs the CPU int8 model: " << (ok ? "bit-exact" : "MISMATCH") << "\n";
  return ok ? 0 : 1;
}
#endif

static int demo(const std::vector<std::string>& args) {
  CLI::App app{
      "Run Loom's built-in default workloads end to end (CPU workloads, ResNet-18 on the CPU and int8 on the "
      "accelerator, an "
      "accelerator matmul) and verify them",
      "loom demo"};
  BackendOptions bo;
  add_backend_options(app, bo);
  app.footer("The backend runs the accelerator part (default: the functional simulator).");
  if (int rc = parse(app, args); rc >= 0) return rc;
  std::cout << "Loom demo: tensor expressions -> schedules -> loop IR -> LLVM (" << codegen::host_target_description()
            << ")\n";
  int failures = 0;
  for (auto [name, size] : {std::pair{"gemm", 128}, std::pair{"conv2d", 14}, std::pair{"softmax", 16}}) {
    CpuRunOptions o;
    o.reps = 3;
    auto r = run_cpu_workload(name, size, o, std::cout);
    print_report(name, r, true, std::cout);
    failures += r.max_abs_error > 1e-3;
  }
#ifdef LOOM_HAVE_GRAPH
  failures += demo_model("resnet18", std::cout);
  failures += demo_accel_model(bo, std::cout);
#endif
  // The accelerator: a blocked int8 matmul through the runtime driver on the functional simulator.
  accel::AccelConfig cfg = accel::default_config();
  auto dev = make_accel_device("fsim", cfg.to_json());
  accel::Program p = accel::matmul_program(*dev, cfg, 16, 64, 256, 7);
  auto target = open_accel_backend(bo, cfg);
  accel::ProgramResult r = accel::run_program(p, *target);
  std::cout << "accel: int8 matmul 16x64x256 on " << target->name() << " (config '" << cfg.name
            << "'): " << p.insn_count << " instructions, " << r.counters["gemm_macs"] << " MACs, "
            << r.counters["dma_load_bytes"] << " bytes loaded, ";
  if (r.cycles)
    std::cout << r.cycles << " cycles (GEMM utilization "
              << 100.0 * double(r.counters["gemm_macs"]) / (double(r.cycles) * cfg.batch * cfg.block_in * cfg.block_out)
              << "%), ";
  std::cout << (r.mismatched_checks ? "MISMATCH" : "output matches the C++ reference") << "\n";
  failures += r.mismatched_checks != 0;
  std::cout << (failures ? "demo FAILED: results differ from the reference\n" : "all results match the reference\n");
  return failures ? 1 : 0;
}

LOOM_REGISTER_COMMAND("demo", "run Loom's built-in default workloads end to end and verify them", demo);

}  // namespace loom::tools
