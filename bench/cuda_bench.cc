// The CUDA backend: fp32 GEMM 4096^3 against cuBLAS in the same run (several block tilings, the
// best one reported), results checked against cuBLAS' product. Without a GPU it reports what CI can
// see, NVRTC's compile time and ptxas' resource use per kernel, says why there is no GPU, and
// exits 0. cuBLAS is loaded with dlopen (libcublas.so.13), like the driver.
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "loom/codegen/cuda.h"
#include "loom/ops/cuda_schedules.h"
#include "loom/ops/nn.h"
#include "loom/runtime/cuda.h"
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
    if (!create || !set_stream || !sgemm || create(&handle) != 0) error = "cuBLAS could not be initialised";
  }
  void run(int n, const void* A, const void* B, void* C, void* stream) const {
    float one = 1, zero = 0;
    set_stream(handle, stream);
    sgemm(handle, 0, 0, n, n, n, &one, static_cast<const float*>(B), n, static_cast<const float*>(A), n, &zero,
          static_cast<float*>(C), n);
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 4096;
  std::vector<Variant> variants = {
      {"64x64x8 / 4x4", {64, 64, 8, 4, 4, 4}},
      {"128x64x8 / 8x4", {128, 64, 8, 8, 4, 4}},
      {"128x128x8 / 8x8", {128, 128, 8, 8, 8, 4}},
      {"128x128x16 / 8x8", {128, 128, 16, 8, 8, 4}},
      {"128x64x8 / 8x4 At", {128, 64, 8, 8, 4, 4, true}},
      {"128x128x8 / 8x8 At", {128, 128, 8, 8, 8, 4, true}},
      {"128x128x16 / 8x8 At", {128, 128, 16, 8, 8, 4, true}},
  };
  std::printf("cuda_bench: fp32 GEMM %d x %d x %d, NVRTC %s\n", n, n, n, codegen::cuda::nvrtc_version().c_str());
  std::vector<runtime::CudaProgram> programs;
  codegen::cuda::CudaOptions co;
  co.use_cache = false;
  for (auto& v : variants) {
    runtime::CudaProgram p = codegen::cuda::build({gemm(n, v.t, "gemm")}, co);
    auto& k = p.functions[0].kernels[0];
    std::printf("  %-18s NVRTC %6.3f s   %3d registers  %6u bytes shared  grid %ux%u  block %ux%u\n", v.name,
                codegen::cuda::last_compile_seconds(), k.registers, k.shared_bytes, k.grid[0], k.grid[1], k.block[0],
                k.block[1]);
    programs.push_back(std::move(p));
  }
  std::string why;
  if (!runtime::cuda_available(&why)) {
    std::printf("no GPU: %s\n", why.c_str());
    return 0;
  }
  const auto& gpu = runtime::cuda_device_info();
  std::printf("GPU: %s (%s, %d SMs)\n", gpu.name.c_str(), gpu.arch().c_str(), gpu.multiprocessors);
  Cublas cublas;
  if (!cublas.error.empty()) {
    std::printf("no baseline: %s\n", cublas.error.c_str());
    return 1;
  }
  NDArray hA = NDArray::empty({n, n}, DataType::Float(32)), hB = NDArray::empty({n, n}, DataType::Float(32));
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
  double cublas_ms = best_ms([&] { cublas.run(n, A.raw_data(), B.raw_data(), Cref.raw_data(), stream.handle()); });
  stream.synchronize();
  NDArray want = Cref.to_device({kDLCPU, 0});
  // cuBLAS itself against double-precision dot products on the host, at 64 sampled elements.
  double host_err = 0;
  for (int s = 0; s < 64; ++s) {
    int64_t i = (s * 2654435761u) % n, j = (s * 40503u + 17) % n;
    double dot = 0;
    for (int64_t k = 0; k < n; ++k) dot += double(hA.data<float>()[i * n + k]) * hB.data<float>()[k * n + j];
    host_err = std::max(host_err, std::fabs(dot - want.data<float>()[i * n + j]));
  }
  std::printf("  cuBLAS vs host float64 at 64 elements: max error %.2e\n", host_err);
  std::printf("  %-18s %8.3f ms  %6.1f TFLOP/s\n", "cuBLAS", cublas_ms, flops / cublas_ms / 1e9);
  double best_ratio = 0;
  int failures = 0;
  for (size_t i = 0; i < programs.size(); ++i) {
    auto m = runtime::CudaModule::load(programs[i]);
    double ms = best_ms([&] { m.launch("gemm", {A.raw_data(), B.raw_data(), C.raw_data()}, stream.handle()); });
    stream.synchronize();
    NDArray got = C.to_device({kDLCPU, 0});
    double err = 0, scale = 0;
    for (int64_t j = 0; j < got.numel(); ++j) {
      err = std::max(err, double(std::fabs(got.data<float>()[j] - want.data<float>()[j])));
      scale = std::max(scale, double(std::fabs(want.data<float>()[j])));
    }
    bool ok = err <= 1e-4 * scale;
    failures += !ok;
    double ratio = cublas_ms / ms;
    if (ok) best_ratio = std::max(best_ratio, ratio);
    std::printf("  %-18s %8.3f ms  %6.1f TFLOP/s  %.2fx cuBLAS  max error %.2e of %.1f %s%s\n", variants[i].name, ms,
                flops / ms / 1e9, ratio, err, scale, ok ? "ok" : "WRONG", m.loaded_from_ptx() ? " (PTX)" : "");
  }
  std::printf("best Loom GEMM: %.2fx cuBLAS (target >= 0.8x)\n", best_ratio);
  return failures ? 1 : 0;
}
