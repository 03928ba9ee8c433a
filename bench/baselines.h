// Timing helpers and baseline kernels (OpenBLAS, oneDNN) for Loom's benchmarks. Baselines run at
// an explicit thread count so that Loom and the libraries are compared at equal parallelism.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace loom::bench {

// Best wall time in seconds over `reps` runs after one warm-up run; keeps repeating until at
// least `min_total_s` was measured, so that fast kernels get enough samples.
double time_best_of(int reps, const std::function<void()>& fn, double min_total_s = 0.2);
// Best wall times of several kernels measured in `rounds` interleaved rounds (each kernel
// reps / rounds runs per round, settle() before each): a slow spell of a shared machine then
// costs every kernel a round instead of one kernel its whole measurement.
std::vector<double> time_best_interleaved(int reps, const std::vector<std::function<void()>>& fns, int rounds = 4,
                                          double min_total_s = 0.2);
inline double gflops(double flops, double seconds) { return flops / seconds * 1e-9; }
// "1,2" -> {1, 2} (the --threads lists of the benches).
std::vector<int> parse_int_list(const std::string& s);
// Lets spinning worker threads of the previous library go to sleep before the next measurement.
void settle();

// ---- OpenBLAS ----
// "OpenBLAS <config>, core <name>, OPENBLAS_CORETYPE=<env or unset>".
std::string openblas_description();
void openblas_set_threads(int n);
// C[M,N] = A[M,K] * B[K,N], row-major fp32.
void openblas_sgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c);

// ---- oneDNN ----
std::string onednn_description();  // version and CPU runtime
void onednn_set_threads(int n);

// fp32 matmul C[M,N] = A[M,K] * B[K,N] on user row-major buffers (primitive created once).
class OneDnnMatmul {
 public:
  OneDnnMatmul(int64_t m, int64_t n, int64_t k);
  ~OneDnnMatmul();
  void run(const float* a, const float* b, float* c);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// int8 matmul C[M,N] (int32) = A[M,K] (uint8) * B[K,N] (int8), row-major, exact: oneDNN's matmul
// primitive on u8/s8/s32 (created once).
class OneDnnMatmulU8S8 {
 public:
  OneDnnMatmulU8S8(int64_t m, int64_t n, int64_t k);
  ~OneDnnMatmulU8S8();
  void run(const uint8_t* a, const int8_t* b, int32_t* c);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};
// oneDNN's BLAS-like dnnl_gemm_u8s8s32 (row-major, no offsets): the same product. Without VNNI
// it multiplies with vpmaddubsw, whose int16 pair sums saturate: operands must keep
// |a0*b0 + a1*b1| <= 32767 for an exact result.
void onednn_gemm_u8s8s32(int64_t m, int64_t n, int64_t k, const uint8_t* a, const int8_t* b, int32_t* c);

// fp32 conv2d, NCHW input / OIHW weights / NCHW output on user buffers. oneDNN computes in its
// preferred blocked layouts; weights are reordered once, input/output reorders are part of run()
// (so the comparison is NCHW in, NCHW out, like Loom's operator).
class OneDnnConv2d {
 public:
  // groups > 1: grouped (groups = channels: depthwise), weights [out, in / groups, k, k].
  OneDnnConv2d(int64_t batch, int64_t in_channels, int64_t height, int64_t width, int64_t out_channels, int64_t kernel,
               int64_t pad, int64_t stride, const float* weights, int64_t groups = 1);
  ~OneDnnConv2d();
  void run(const float* input, float* output);
  // The convolution alone, on the input of the last run() already in oneDNN's own layout: what
  // a network that keeps its activations blocked pays (no reorders).
  void run_native();
  int64_t out_height() const;
  int64_t out_width() const;
  double flops() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loom::bench
