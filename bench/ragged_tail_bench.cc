// Batched products whose columns are no whole number of vectors (attention's QKᵀ over a ViT's 197
// tokens or a Swin window's 49): Loom's batch matmul schedule with the last column tile narrowed to
// the columns it has (the default, LowerOptions::narrow_vector_tails, in whole registers of the
// host and one narrower) against the same schedule with that tile guarded per lane, and OpenBLAS
// sgemm over the batch, at one thread, in the same run (interleaved rounds, fastest of each).
// Exit 1 when either Loom kernel differs from OpenBLAS, 2 on a bad option.
//   ragged_tail_bench [--shapes BxMxKxN,...] [--reps R]
// The default shapes are the zoo's: ViT-S/16's and ViT-B/16's QKᵀ, Swin-T's first-stage window
// QKᵀ, and ViT-S/16's product by V (64 columns: no ragged tile, the control).
#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "baselines.h"
#include "bench_util.h"
#include "loom/codegen/llvm.h"
#include "loom/ops/cpu_schedules.h"
#include "loom/ops/layers.h"
#include "loom/runtime/module.h"
#include "loom/runtime/ndarray.h"
#include "loom/runtime/thread_pool.h"
#include "loom/schedule/lower.h"
#include "tensor_compare.h"

using namespace loom;
using namespace loom::ir;

namespace {

struct Shape {
  int b, m, k, n;
};

runtime::Module batch_matmul_kernel(const Shape& sh, bool narrow) {
  Tensor A = placeholder({sh.b, sh.m, sh.k}, DataType::Float(32), "A"),
         B = placeholder({sh.b, sh.k, sh.n}, DataType::Float(32), "B");
  Tensor C = ops::batch_matmul(A, B, "C");
  schedule::Schedule s({C});
  codegen::TargetInfo target = codegen::target_info();
  ops::schedule_batch_matmul_cpu(s, C, C, target.float32_lanes(), target.vector_registers);
  schedule::LowerOptions opt;
  opt.narrow_vector_tails = narrow;
  opt.vector_bits = target.vector_bits;
  return codegen::build_llvm({schedule::lower(s, {A, B, C}, "bmm", opt)});
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Shape> shapes = {{6, 197, 64, 197}, {12, 197, 64, 197}, {192, 49, 32, 49}, {6, 197, 197, 64}};
  int reps = 200;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--shapes" && i + 1 < argc) {
      shapes.clear();
      for (const std::string& item : bench::split_list(argv[++i])) {
        Shape sh{};
        int used = 0;
        if (std::sscanf(item.c_str(), "%5dx%5dx%5dx%5d%n", &sh.b, &sh.m, &sh.k, &sh.n, &used) != 4 ||
            used != static_cast<int>(item.size()) || sh.b < 1 || sh.m < 1 || sh.k < 1 || sh.n < 1) {
          std::fprintf(stderr, "ragged_tail_bench: --shapes wants BxMxKxN items with positive sizes, got '%s'\n",
                       item.c_str());
          return 2;
        }
        shapes.push_back(sh);
      }
      if (shapes.empty()) {
        std::fprintf(stderr, "ragged_tail_bench: --shapes names no shape\n");
        return 2;
      }
    } else if (a == "--reps" && i + 1 < argc) {
      try {
        reps = bench::count_option(argv[++i], "--reps", 1000000);
      } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "ragged_tail_bench: %s\n", e.what());
        return 2;
      }
    } else {
      std::fprintf(stderr, "usage: ragged_tail_bench [--shapes BxMxKxN,...] [--reps R]\n");
      return 2;
    }
  }
  std::printf("batch matmul C[b] = A[b] (m x k) * B[b] (k x n), 1 thread, fastest of %d in interleaved rounds\n", reps);
  std::printf("  cpu: %s\n  loom target: %s\n  %s\n", bench::cpu_name().c_str(),
              codegen::host_target_description().c_str(), bench::openblas_description().c_str());
  std::printf("\n%-16s %10s %10s %10s %9s %9s %14s\n", "b x m x k x n", "narrowed", "guarded", "openblas", "GF/s",
              "narrowed", "narrowed");
  std::printf("%-16s %10s %10s %10s %9s %9s %14s\n", "", "ms", "ms", "ms", "narrowed", "/guarded", "/openblas");
  runtime::set_num_threads(1);
  bench::openblas_set_threads(1);
  int failures = 0;
  for (const Shape& sh : shapes) {
    runtime::Module narrowed = batch_matmul_kernel(sh, true), guarded = batch_matmul_kernel(sh, false);
    DataType f32 = DataType::Float(32);
    NDArray A = NDArray::empty({sh.b, sh.m, sh.k}, f32), B = NDArray::empty({sh.b, sh.k, sh.n}, f32);
    NDArray Cn = NDArray::zeros({sh.b, sh.m, sh.n}, f32), Cg = NDArray::zeros({sh.b, sh.m, sh.n}, f32),
            ref = NDArray::zeros({sh.b, sh.m, sh.n}, f32);
    A.fill_random(1);
    B.fill_random(2);
    auto blas = [&] {
      for (int i = 0; i < sh.b; ++i)
        bench::openblas_sgemm(sh.m, sh.n, sh.k, A.data<float>() + int64_t(i) * sh.m * sh.k,
                              B.data<float>() + int64_t(i) * sh.k * sh.n, ref.data<float>() + int64_t(i) * sh.m * sh.n);
    };
    blas();
    narrowed.call("bmm", {A, B, Cn});
    guarded.call("bmm", {A, B, Cg});
    const double err_narrowed = bench::max_relative_error(Cn, ref), err_guarded = bench::max_relative_error(Cg, ref);
    runtime::CompiledFn fn = narrowed.get_function("bmm"), fg = guarded.get_function("bmm");
    void* an[3] = {A.raw_data(), B.raw_data(), Cn.raw_data()};
    void* ag[3] = {A.raw_data(), B.raw_data(), Cg.raw_data()};
    std::vector<double> t = bench::time_best_interleaved(reps, {[&] { fn(an); }, [&] { fg(ag); }, blas});
    char name[64];
    std::snprintf(name, sizeof name, "%dx%dx%dx%d", sh.b, sh.m, sh.k, sh.n);
    std::printf("%-16s %10.3f %10.3f %10.3f %9.1f %9.2f %14.2f%s%s\n", name, t[0] * 1e3, t[1] * 1e3, t[2] * 1e3,
                bench::gflops(2.0 * sh.b * sh.m * sh.n * sh.k, t[0]), t[0] / t[1], t[0] / t[2],
                err_narrowed > 1e-4 ? "  WRONG: narrowed differs from OpenBLAS" : "",
                err_guarded > 1e-4 ? "  WRONG: guarded differs from OpenBLAS" : "");
    std::fflush(stdout);
    failures += err_narrowed > 1e-4 || err_guarded > 1e-4;
  }
  return failures ? 1 : 0;
}
