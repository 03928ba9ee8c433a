// The CUDA backend, two parts:
//   GEMM: fp32 4096^3 against cuBLAS in the same run (several block tilings of the scheduled GEMM
//         and of the warp-tiled one, the best reported),
//         results checked against cuBLAS' product (itself checked against float64 host dots).
//   models: the built-in ResNet-18 and MobileNetV2 (torchvision's architectures) compiled with
//         --target cuda semantics, batch 1 and 32, run by the runtime's executor (CUDA graph
//         replay), batch 1 checked against the naive graph interpreter, timed against PyTorch eager
//         on the same GPU (bench/pytorch_gpu_latency.py through `python3`, same measurement: input
//         copied in and output back each run).
// Without a GPU it reports what CI can see (NVRTC's compile time and ptxas' resource use per
// kernel), says why there is no GPU, and exits 0. cuBLAS is loaded with dlopen, like the driver.
//
//   softmax: 8192 rows of 1000, the generic schedule (a thread per row, three kernels) against the
//         block reduction (a block per row, one kernel), checked against each other and the host.
//
//   gemm_f16: float16 inputs, float32 products, on the tensor cores (ops/cuda_tensor_core.h), several
//         tilings against cuBLAS' cublasGemmEx (float16 in, float32 compute and out) in the same run,
//         results checked against cuBLAS' (itself checked against float64 host dots).
//
//   --model FILE (repeatable): a model compiled with `loom compile ... --target cuda`, timed in the same
//         process right after the built-in ResNet-18 (the torchvision ResNet-18 from ONNX beside the
//         built-in one), with the GPU's clocks read before and after the models.
//
// usage: cuda_bench [--only gemm|gemm_f16|softmax|models] [--size N (a multiple of 128)]
//                   [--pytorch SCRIPT] [--model FILE]...
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.h"
#include "loom/codegen/cuda.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/reference.h"
#include "loom/ops/cuda_gemm_warp_tiled.h"
#include "loom/ops/cuda_schedules.h"
#include "loom/ops/cuda_tensor_core.h"
#include "loom/ops/nn.h"
#include "loom/runtime/cuda.h"
#include "loom/runtime/graph_executor.h"
#include "tensor_compare.h"

#include <nlohmann/json.hpp>
#include "loom/schedule/lower.h"

using namespace loom;

namespace {

struct Variant {
  const char* name;
  ops::CudaGemmTiling t;
};

ir::LoweredFunc gemm(int n, const ops::CudaGemmTiling& t, const std::string& name) {
  ir::Tensor A = ir::placeholder({n, n}, DataType::Float(32), "A");
  ir::Tensor B = ir::placeholder({n, n}, DataType::Float(32), "B");
  ir::Tensor C = ops::matmul(A, B, "C");
  schedule::Schedule s({C});
  ops::schedule_gemm_cuda(s, A, B, C, t);
  schedule::LowerOptions o;
  o.target_gpu = true;
  return schedule::lower(s, {A, B, C}, name, o);
}

// cublasSgemm_v2 on row-major n x n matrices: C = A B is C^T = B^T A^T in column-major.
struct Cublas {
  using Create = int (*)(void**);
  using SetStream = int (*)(void*, void*);
  using Sgemm = int (*)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int,
                        const float*, float*, int);
  void* handle = nullptr;
  SetStream set_stream = nullptr;
  Sgemm sgemm = nullptr;
  std::string error;
  Cublas() {
    void* lib = dlopen("libcublas.so.13", RTLD_NOW);
    if (!lib) lib = dlopen("libcublas.so", RTLD_NOW);
    if (!lib) {
      error = "libcublas.so.13 not found";
      return;
    }
    auto create = reinterpret_cast<Create>(dlsym(lib, "cublasCreate_v2"));
    set_stream = reinterpret_cast<SetStream>(dlsym(lib, "cublasSetStream_v2"));
    sgemm = reinterpret_cast<Sgemm>(dlsym(lib, "cublasSgemm_v2"));
    gemm_ex = reinterpret_cast<GemmEx>(dlsym(lib, "cublasGemmEx"));
    if (!create || !set_stream || !sgemm || !gemm_ex || create(&handle) != 0) error = "cuBLAS could not be initialised";
  }
  // cublasGemmEx: float16 A and B, float32 C, float32 compute (library_types.h / cublas_api.h values).
  using GemmEx = int (*)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                         const void*, void*, int, int, int, int);
  static constexpr int kR16F = 2, kR32F = 0, kCompute32F = 68, kGemmDefault = -1;
  GemmEx gemm_ex = nullptr;
  // cuBLAS' status (0: success).
  int run_f16(int n, const void* A, const void* B, void* C, void* stream) const {
    float one = 1, zero = 0;
    set_stream(handle, stream);
    return gemm_ex(handle, 0, 0, n, n, n, &one, B, kR16F, n, A, kR16F, n, &zero, C, kR32F, n, kCompute32F,
                   kGemmDefault);
  }
  int run(int n, const void* A, const void* B, void* C, void* stream) const {
    float one = 1, zero = 0;
    set_stream(handle, stream);
    return sgemm(handle, 0, 0, n, n, n, &one, static_cast<const float*>(B), n, static_cast<const float*>(A), n, &zero,
                 static_cast<float*>(C), n);
  }
};

// Median of `reps` steady-state runs (after a first run and the graph capture), milliseconds.
double model_ms(runtime::GraphExecutor& ex, int reps) {
  ex.run();
  ex.run();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    ex.run();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// PyTorch eager's median for the same model and batch, from the helper script's JSON line; <0 if none.
double pytorch_ms(const std::string& script, const std::string& model, int batch, int reps) {
  std::string out = bench::command_output("python3 " + script + " " + model + " " + std::to_string(batch) + " " +
                                          std::to_string(reps) + " 2>/dev/null");
  try {
    return nlohmann::json::parse(out).at("median_ms").get<double>();
  } catch (const std::exception&) {
    return -1;
  }
}

ir::LoweredFunc softmax_func(int rows, int cols, bool block) {
  ir::Tensor X = ir::placeholder({rows, cols}, DataType::Float(32), "X");
  ir::Tensor Y = block ? ops::softmax_cuda(X, 128, "Y") : ops::softmax(X, "Y");
  schedule::Schedule s({Y});
  if (block)
    ops::schedule_softmax_cuda(s, Y);
  else
    ops::schedule_cuda_generic(s, 128);
  schedule::LowerOptions o;
  o.target_gpu = true;
  return schedule::lower(s, {X, Y}, block ? "softmax_block" : "softmax_generic", o);
}

int bench_softmax() {
  const int rows = 8192, cols = 1000;
  runtime::CudaProgram p = codegen::cuda::build({softmax_func(rows, cols, false), softmax_func(rows, cols, true)});
  std::printf("softmax %d x %d:\n", rows, cols);
  for (auto& f : p.functions)
    std::printf("  %-16s %zu kernels, %d registers (first)\n", f.name.c_str(), f.kernels.size(),
                f.kernels[0].registers);
  std::string why;
  if (!runtime::cuda_available(&why)) {
    std::printf("no GPU: %s\n", why.c_str());
    return 0;
  }
  auto m = runtime::CudaModule::load(p);
  NDArray hx = NDArray::empty({rows, cols}, DataType::Float(32));
  hx.fill_random(9, -4, 4);
  DLDevice dev = runtime::cuda_device();
  NDArray x = hx.to_device(dev), y = NDArray::empty({rows, cols}, DataType::Float(32), dev);
  runtime::CudaStream stream;
  std::vector<NDArray> outs;
  double ms[2];
  for (int b = 0; b < 2; ++b) {
    const std::string& fn = p.functions[size_t(b)].name;
    auto run = [&] { m.launch(fn, {x.raw_data(), y.raw_data()}, stream.handle()); };
    for (int i = 0; i < 3; ++i) run();
    ms[b] = stream.time_ms([&] {
      for (int i = 0; i < 20; ++i) run();
    }) / 20;
    outs.push_back(y.to_device({kDLCPU, 0}));
  }
  double err = 0, host_err = 0;
  for (int64_t k = 0; k < outs[0].numel(); ++k)
    err = std::max(err, double(std::fabs(outs[0].data<float>()[k] - outs[1].data<float>()[k])));
  for (int r = 0; r < 4; ++r) {  // host softmax of a few rows
    const float* row = hx.data<float>() + int64_t(r) * 977 % rows * cols;
    int64_t ri = (row - hx.data<float>()) / cols;
    double mx = -1e30, sum = 0;
    for (int c = 0; c < cols; ++c) mx = std::max(mx, double(row[c]));
    for (int c = 0; c < cols; ++c) sum += std::exp(double(row[c]) - mx);
    for (int c = 0; c < cols; ++c)
      host_err =
          std::max(host_err, std::fabs(std::exp(double(row[c]) - mx) / sum - outs[1].data<float>()[ri * cols + c]));
  }
  double bytes = 2.0 * rows * cols * 4;
  std::printf(
      "  generic (3 kernels)     %7.3f ms  %6.0f GB/s\n  block reduction (1)     %7.3f ms  %6.0f GB/s  %.2fx the "
      "generic's time\n",
      ms[0], bytes / ms[0] / 1e6, ms[1], bytes / ms[1] / 1e6, ms[1] / ms[0]);
  bool ok = err < 1e-5 && host_err < 1e-5;
  std::printf("  generic vs block max difference %.1e, block vs host float64 %.1e: %s\n", err, host_err,
              ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}

// The GPU's current and maximum SM clocks and memory clock (nvidia-smi), so runs on one machine can
// be compared; "unknown" without nvidia-smi.
std::string gpu_clocks() {
  std::string c = bench::command_output(
      "nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader 2>/dev/null");
  while (!c.empty() && (c.back() == '\n' || c.back() == ' ')) c.pop_back();
  return c.empty() ? "unknown" : c;
}

// A compiled model (`loom compile ... --target cuda`) timed in this process as the built-in ones
// are, with random inputs: the figure to set beside the built-in model's.
// A model given with --model: its path and the file, read and checked before any run.
struct ModelArg {
  std::string path;
  runtime::ModelFile file;
};

void bench_model_file(const ModelArg& m) {
  const std::string& path = m.path;
  auto ex = runtime::GraphExecutor::from_model_file(m.file, path);
  for (size_t i = 0; i < ex.num_inputs(); ++i) {
    NDArray a = NDArray::empty(ex.input_spec(i).shape, ex.input_spec(i).dtype);
    a.fill_random(1 + i, -1, 1);
    ex.set_input(i, a);
  }
  std::printf("  %-36s %3zu kernels  Loom %8.3f ms (same measurement, this process)\n", path.c_str(),
              ex.kernels().size(), model_ms(ex, 50));
}

int bench_models(const std::string& script, const std::vector<ModelArg>& files) {
  int failures = 0;
  std::printf("GPU clocks (SM, max SM, memory) at the start: %s\n", gpu_clocks().c_str());
  std::printf("models (fp32, NCHW, every kernel on the GPU; PyTorch eager from %s):\n", script.c_str());
  for (const char* name : {"resnet18", "mobilenet_v2"}) {
    for (int batch : {1, 32}) {
      graph::BuildOptions o;
      o.cuda.emplace();
      graph::BuildResult r = graph::build(graph::builtin_model(name, batch, 224), o);
      auto ex = runtime::GraphExecutor::from_model_file(r.file, name);
      std::vector<NDArray> in;
      for (size_t i = 0; i < ex.num_inputs(); ++i) {
        NDArray a = NDArray::empty(ex.input_spec(i).shape, ex.input_spec(i).dtype);
        a.fill_random(1 + i, -1, 1);
        in.push_back(a);
        ex.set_input(i, a);
      }
      std::string check = "-";
      if (batch == 1) {
        ex.run();
        NDArray got = ex.get_output(0), want = graph::reference_run(r.graph, in)[0];
        double err = 0, scale = 0;
        for (int64_t k = 0; k < want.numel(); ++k) {
          err = std::max(err, std::fabs(got.get_as_double(k) - want.get_as_double(k)));
          scale = std::max(scale, std::fabs(want.get_as_double(k)));
        }
        bool ok = err <= 1e-3 * std::max(scale, 1.0);
        failures += !ok;
        char b[96];
        std::snprintf(b, sizeof b, "%.1e of %.2f %s", err, scale, ok ? "ok" : "WRONG");
        check = b;
      }
      double ms = model_ms(ex, batch == 1 ? 50 : 10);
      double torch_ms = pytorch_ms(script, name, batch, batch == 1 ? 50 : 10);
      std::printf(
          "  %-13s batch %2d  %3zu kernels  Loom %8.3f ms  PyTorch %8.3f ms  %.2fx PyTorch's latency  vs reference: "
          "%s\n",
          name, batch, ex.kernels().size(), ms, torch_ms, torch_ms > 0 ? ms / torch_ms : 0.0, check.c_str());
      if (batch == 1 && std::string(name) == "resnet18") {
        std::vector<double> t = ex.run_profiled();
        std::vector<size_t> idx(t.size());
        for (size_t k = 0; k < idx.size(); ++k) idx[k] = k;
        std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return t[a] > t[b]; });
        for (size_t k = 0; k < std::min<size_t>(6, idx.size()); ++k)
          std::printf("      %7.3f ms  %s\n", t[idx[k]] * 1e3, ex.kernels()[idx[k]].func.c_str());
      }
    }
    if (std::string(name) == "resnet18")
      for (auto& f : files) bench_model_file(f);
  }
  std::printf("GPU clocks (SM, max SM, memory) at the end: %s\n", gpu_clocks().c_str());
  return failures;
}

// GEMM programs to compare, each compiled by NVRTC (no cache) as it is added, with its resources
// printed (registers, spills, shared memory, launch).
struct GemmPrograms {
  std::vector<std::string> names;
  std::vector<runtime::CudaProgram> programs;
  void add(const std::string& name, const ir::LoweredFunc& f) {
    codegen::cuda::CudaOptions co;
    co.use_cache = false;
    runtime::CudaProgram p = codegen::cuda::build({f}, co);
    auto& k = p.functions[0].kernels[0];
    bool spills = p.compile_log.find(" 0 bytes spill stores") == std::string::npos;
    std::printf("  %-29s NVRTC %6.3f s   %3d registers%s  %6u bytes shared  grid %ux%u  block %ux%u\n", name.c_str(),
                codegen::cuda::last_compile_seconds(), k.registers, spills ? " (spills)" : "", k.shared_bytes,
                k.grid[0], k.grid[1], k.block[0], k.block[1]);
    names.push_back(name);
    programs.push_back(std::move(p));
  }
};

// Each program's function `fn` (A, B -> float32 C, n x n, inputs of `in_type` in [-1, 1]) timed
// against the baseline in the same run (best of 5 x 5 launches), its result checked against the
// baseline's to `tolerance` of the largest element, and the baseline against float64 host dot
// products at 64 sampled elements. Returns the number of wrong results; without a GPU, 0.
int compare_gemms(int n, DataType in_type, const GemmPrograms& g, const std::string& fn, double tolerance,
                  double target, const char* baseline_name,
                  const std::function<int(const void*, const void*, void*, void*)>& baseline,
                  const std::string& baseline_error) {
  std::string why;
  if (!runtime::cuda_available(&why)) {
    std::printf("no GPU: %s\n", why.c_str());
    return 0;
  }
  const auto& gpu = runtime::cuda_device_info();
  std::printf("GPU: %s (%s, %d SMs)\n", gpu.name.c_str(), gpu.arch().c_str(), gpu.multiprocessors);
  if (!baseline_error.empty()) {
    std::printf("no baseline: %s\n", baseline_error.c_str());
    return 1;
  }
  NDArray hA = NDArray::empty({n, n}, in_type), hB = NDArray::empty({n, n}, in_type);
  hA.fill_random(1, -1, 1);
  hB.fill_random(2, -1, 1);
  DLDevice dev = runtime::cuda_device();
  NDArray A = hA.to_device(dev), B = hB.to_device(dev);
  NDArray C = NDArray::empty({n, n}, DataType::Float(32), dev), Cref = NDArray::empty({n, n}, DataType::Float(32), dev);
  runtime::CudaStream stream;
  const double flops = 2.0 * n * n * double(n);
  auto best_ms = [&](const std::function<void()>& f) {
    for (int i = 0; i < 3; ++i) f();
    float best = 1e30f;
    for (int r = 0; r < 5; ++r)
      best = std::min(best, stream.time_ms([&] {
        for (int i = 0; i < 5; ++i) f();
      }) / 5);
    return double(best);
  };
  int status = 0;
  double base_ms = best_ms([&] { status |= baseline(A.raw_data(), B.raw_data(), Cref.raw_data(), stream.handle()); });
  stream.synchronize();
  if (status != 0) {
    std::printf("%s failed (status %d)\n", baseline_name, status);
    return 1;
  }
  NDArray want = Cref.to_device({kDLCPU, 0});
  double host_err = 0;
  for (int s = 0; s < 64; ++s) {
    int64_t i = (s * 2654435761u) % n, j = (s * 40503u + 17) % n;
    double dot = 0;
    for (int64_t k = 0; k < n; ++k) dot += hA.get_as_double(i * n + k) * hB.get_as_double(k * n + j);
    host_err = std::max(host_err, std::fabs(dot - want.data<float>()[i * n + j]));
  }
  // A float32 sum of n products of [-1, 1] values rounds by about sqrt(n) float32 ulps of its
  // magnitude, far below 1e-2 for any --size; more means the baseline itself is wrong, and nothing
  // can be checked against it.
  const bool baseline_ok = host_err <= 1e-2;
  std::printf("  %s vs host float64 at 64 elements: max error %.2e %s\n", baseline_name, host_err,
              baseline_ok ? "ok" : "WRONG");
  if (!baseline_ok) return 1;
  std::printf("  %-29s %8.3f ms  %6.1f TFLOP/s\n", baseline_name, base_ms, flops / base_ms / 1e9);
  double best_ratio = 0;
  int failures = 0;
  for (size_t i = 0; i < g.programs.size(); ++i) {
    auto m = runtime::CudaModule::load(g.programs[i]);
    double ms = best_ms([&] { m.launch(fn, {A.raw_data(), B.raw_data(), C.raw_data()}, stream.handle()); });
    stream.synchronize();
    NDArray got = C.to_device({kDLCPU, 0});
    double err = bench::max_relative_error(got, want);
    bool ok = err <= tolerance;
    failures += !ok;
    double ratio = base_ms / ms;
    if (ok) best_ratio = std::max(best_ratio, ratio);
    std::printf("  %-29s %8.3f ms  %6.1f TFLOP/s  %.2fx %s  relative error %.2e %s%s\n", g.names[i].c_str(), ms,
                flops / ms / 1e9, ratio, baseline_name, err, ok ? "ok" : "WRONG", m.loaded_from_ptx() ? " (PTX)" : "");
  }
  std::printf("best Loom %s: %.2fx %s (target >= %.1fx)\n", fn.c_str(), best_ratio, baseline_name, target);
  return failures;
}

}  // namespace

int bench_gemm(int n);
int bench_gemm_f16(int n);

int main(int argc, char** argv) {
  int n = 4096;
  std::string only, script = "bench/pytorch_gpu_latency.py";
  std::vector<ModelArg> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--only" && i + 1 < argc)
      only = argv[++i];
    else if (a == "--size" && i + 1 < argc) {
      // Every tiling's block divides a multiple of 128.
      const std::string v = argv[++i];
      char* end = nullptr;
      const long size = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || size <= 0 || size % 128 != 0 || size > 32768) {
        std::fprintf(stderr, "cuda_bench: --size %s: expected a multiple of 128 from 128 to 32768\n", v.c_str());
        return 2;
      }
      n = int(size);
    } else if (a == "--pytorch" && i + 1 < argc)
      script = argv[++i];
    else if (a == "--model" && i + 1 < argc) {
      std::string path = argv[++i];
      try {  // a missing, truncated or foreign file is refused here, not after the GEMMs
        files.push_back({path, runtime::load_model_file(path)});
      } catch (const Error& e) {
        std::fprintf(stderr, "cuda_bench: --model %s: %s\n", path.c_str(), e.what());
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: cuda_bench [--only gemm|gemm_f16|softmax|models] [--size N] [--pytorch SCRIPT] "
                   "[--model FILE]...\n");
      return 2;
    }
  }
  if (!only.empty() && only != "gemm" && only != "gemm_f16" && only != "softmax" && only != "models") {
    std::fprintf(stderr, "cuda_bench: --only %s: expected gemm, gemm_f16, softmax or models\n", only.c_str());
    return 2;
  }
  int failures = 0;
  if (only.empty() || only == "gemm") failures += bench_gemm(n);
  if (only.empty() || only == "gemm_f16") failures += bench_gemm_f16(n);
  if (only.empty() || only == "softmax") failures += bench_softmax();
  if (only.empty() || only == "models") {
    std::string why;
    if (runtime::cuda_available(&why))
      failures += bench_models(script, files);
    else
      std::printf("models: no GPU: %s\n", why.c_str());
  }
  return failures ? 1 : 0;
}

int bench_gemm(int n) {
  std::vector<Variant> variants = {
      {"64x64x8 / 4x4", {64, 64, 8, 4, 4, 4}},
      {"128x64x8 / 8x4", {128, 64, 8, 8, 4, 4}},
      {"128x128x8 / 8x8", {128, 128, 8, 8, 8, 4}},
      {"128x128x16 / 8x8", {128, 128, 16, 8, 8, 4}},
      {"128x64x8 / 8x4 At", {128, 64, 8, 8, 4, 4, true}},
      {"128x128x8 / 8x8 At", {128, 128, 8, 8, 8, 4, true}},
      {"128x128x16 / 8x8 At", {128, 128, 16, 8, 8, 4, true}},
      {"128x128x8 / 8x8 At pf", {128, 128, 8, 8, 8, 4, true, true}},
      {"128x128x16 / 8x8 At pf", {128, 128, 16, 8, 8, 4, true, true}},
      {"128x64x16 / 8x4 At pf", {128, 64, 16, 8, 4, 4, true, true}},
  };
  std::printf("cuda_bench: fp32 GEMM %d x %d x %d, NVRTC %s\n", n, n, n, codegen::cuda::nvrtc_version().c_str());
  GemmPrograms g;
  for (auto& v : variants) g.add(v.name, gemm(n, v.t, "gemm"));
  // The warp-tiled kernel (ops/cuda_gemm_warp_tiled.h): block m x n x k / warp m x n, lanes along
  // M, shared stages.
  struct WarpVariant {
    const char* name;
    ops::CudaWarpGemmTiling t;
  };
  const std::vector<WarpVariant> warp_variants = {
      {"warp 128x128x8 / 32x64 l4 s2", {128, 128, 8, 32, 64, 4, 4, 2}},
      {"warp 128x128x8 / 64x32 l8 s2", {128, 128, 8, 64, 32, 8, 4, 2}},
      {"warp 128x128x16 / 32x64 l4 s2", {128, 128, 16, 32, 64, 4, 4, 2}},
      {"warp 128x128x8 / 32x64 l4 s1", {128, 128, 8, 32, 64, 4, 4, 1}},
      {"warp 128x64x16 / 32x32 l4 s2", {128, 64, 16, 32, 32, 4, 4, 2}},
  };
  for (auto& v : warp_variants) g.add(v.name, ops::gemm_f32_warp_tiled_cuda(n, n, n, v.t, "gemm"));
  Cublas cublas;
  return compare_gemms(
      n, DataType::Float(32), g, "gemm", 1e-4, 0.8, "cuBLAS",
      [&](const void* A, const void* B, void* C, void* stream) { return cublas.run(n, A, B, C, stream); },
      cublas.error);
}

int bench_gemm_f16(int n) {
  struct F16Variant {
    const char* name;
    ops::CudaMmaTiling t;
  };
  // block m x n x k / warp m x n, shared stages (1: plain copies, else cp.async), ldmatrix or not.
  const std::vector<F16Variant> variants = {
      {"128x128x32 w64x32 s1", {128, 128, 32, 64, 32, 8, 1, false}},
      {"128x128x32 w64x32 s2", {128, 128, 32, 64, 32, 8, 2, false}},
      {"128x128x32 w64x32 s2 ldm", {128, 128, 32, 64, 32, 8, 2, true}},
      {"128x128x32 w32x64 s2 ldm", {128, 128, 32, 32, 64, 8, 2, true}},
      {"128x128x16 w64x32 s3 ldm", {128, 128, 16, 64, 32, 8, 3, true}},
      {"128x128x16 w64x32 s4 ldm", {128, 128, 16, 64, 32, 8, 4, true}},
      {"64x128x32 w32x32 s3 ldm", {64, 128, 32, 32, 32, 8, 3, true}},
      {"128x64x32 w64x32 s3 ldm", {128, 64, 32, 64, 32, 8, 3, true}},
  };
  std::printf("cuda_bench: fp16 GEMM on tensor cores (float32 products) %d x %d x %d\n", n, n, n);
  GemmPrograms g;
  for (auto& v : variants) g.add(v.name, ops::gemm_f16_tensor_core_cuda(n, n, n, v.t, "gemm_f16"));
  Cublas cublas;
  return compare_gemms(
      n, DataType::Float(16), g, "gemm_f16", 1e-3, 0.5, "cuBLAS GemmEx",
      [&](const void* A, const void* B, void* C, void* stream) { return cublas.run_f16(n, A, B, C, stream); },
      cublas.error);
}
