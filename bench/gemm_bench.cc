// fp32 GEMM C[M,N] = A[M,K] * B[K,N] (default 1024^3): Loom vs OpenBLAS sgemm and oneDNN matmul at
// 1 and 2 threads, measured in the same run.
//
// Two Loom kernels: "loom" is the operator library's schedule (ops::schedule_matmul_packed_cpu)
// lowered by the schedule layer; "hand" is a hand-built blocked loop nest (gemm_kernel below) that
// exercises the backend independently of the schedule layer. Ratios are for the scheduled kernel.
//   gemm_bench [--size N | --shape MxNxK] [--reps R] [--threads 1,2] [--dump-asm file.s] [--min-ratio R] [--mr M --nr
//   N]
// --shape runs any M, N, K (odd shapes such as 17x31x13 or 1000x1x512: partial tiles); the hand
// kernel needs multiples of its blocking and is left out otherwise.
// The register tile is ops::gemm_tiling_for the host's vectors unless --mr/--nr override it.
// With --min-ratio the bench fails (exit 3) when Loom is slower than R x the stronger baseline at
// any thread count: the target is --min-ratio 0.9.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "baselines.h"
#include "loom/codegen/llvm.h"
#include "loom/ir/buffer.h"
#include "loom/ir/expr.h"
#include "loom/ir/stmt.h"
#include "loom/ops/cpu_schedules.h"
#include "loom/ops/nn.h"
#include "loom/runtime/module.h"
#include "loom/runtime/ndarray.h"
#include "loom/runtime/thread_pool.h"
#include "loom/schedule/lower.h"
#include "tensor_compare.h"

using namespace loom;
using namespace loom::ir;

namespace {

struct Blocking {
  int mr = 8;    // rows of C per register tile
  int nr = 32;   // columns of C per register tile (2 x 16-lane vectors)
  int kc = 256;  // reduction block (A rows block and B panel block stay in L1/L2)
  int mc = 64;   // rows per parallel task
};

// The loop nest (every extent must divide evenly):
//   Bp = pack(B)                                  parallel over column panels: Bp[jo][k][nr]
//   parallel io in M/mc:
//     for kb in K/kc: for jo in N/nr: for ib in mc/mr:
//       acc[mr][nr] = kb == 0 ? 0 : C[tile]       (mr x nr/16 vector registers)
//       for k in kc: acc[i][v] += broadcast(A[row i, k]) * Bp[jo][k][v*16 .. +16]   (i, v unrolled)
//       C[tile] = acc
LoweredFunc gemm_kernel(int M, int N, int K, const Blocking& b) {
  const int V = 16, nv = b.nr / V;
  DataType f32 = DataType::Float(32), v16 = DataType::Float(32, V);
  Buffer A = make_buffer("A", f32, {Expr(M), Expr(K)}), B = make_buffer("B", f32, {Expr(K), Expr(N)}),
         C = make_buffer("C", f32, {Expr(M), Expr(N)});
  Buffer Bp = make_buffer("Bp", f32, {Expr(N / b.nr), Expr(K), Expr(b.nr)}, scope::kGlobal);
  Buffer Acc = make_buffer("acc", f32, {Expr(b.mr * b.nr)}, scope::kLocal);

  Var po("po"), pk("pk");
  std::vector<Stmt> pack_row;
  for (int v = 0; v < nv; ++v)
    pack_row.push_back(
        store(Bp, load(v16, B, ramp(pk * N + po * b.nr + v * V, 1, V)), ramp((po * K + pk) * b.nr + v * V, 1, V)));
  Stmt pack = for_loop(po, 0, N / b.nr, ForKind::Parallel, for_loop(pk, 0, K, ForKind::Serial, seq(pack_row)));

  Var io("io"), kb("kb"), jo("jo"), ib("ib"), k("k"), row0("row0"), col0("col0");
  auto acc_idx = [&](int i, int v) { return ramp(Expr(i * b.nr + v * V), 1, V); };
  auto c_idx = [&](int i, int v) { return ramp((row0 + i) * N + col0 + v * V, 1, V); };
  std::vector<Stmt> zero, load_c, store_c, fma;
  for (int i = 0; i < b.mr; ++i) {
    Expr a = broadcast(load(f32, A, (row0 + i) * K + kb * b.kc + k), V);
    for (int v = 0; v < nv; ++v) {
      zero.push_back(store(Acc, broadcast(Expr(0.0f), V), acc_idx(i, v)));
      load_c.push_back(store(Acc, load(v16, C, c_idx(i, v)), acc_idx(i, v)));
      store_c.push_back(store(C, load(v16, Acc, acc_idx(i, v)), c_idx(i, v)));
      Expr bvec = load(v16, Bp, ramp((jo * K + kb * b.kc + k) * b.nr + v * V, 1, V));
      fma.push_back(store(Acc, load(v16, Acc, acc_idx(i, v)) + a * bvec, acc_idx(i, v)));
    }
  }
  Stmt tile = allocate(Acc, seq({if_then_else(kb == 0, seq(zero), seq(load_c)),
                                 for_loop(k, 0, b.kc, ForKind::Serial, seq(fma)), seq(store_c)}));
  Stmt tiles = let_stmt(row0, io * b.mc + ib * b.mr, let_stmt(col0, jo * b.nr, tile));
  Stmt compute = for_loop(
      io, 0, M / b.mc, ForKind::Parallel,
      for_loop(kb, 0, K / b.kc, ForKind::Serial,
               for_loop(jo, 0, N / b.nr, ForKind::Serial, for_loop(ib, 0, b.mc / b.mr, ForKind::Serial, tiles))));
  return {"gemm", {A, B, C}, allocate(Bp, seq({pack, compute}))};
}

// The tuned schedule of the operator library, lowered by the schedule layer.
LoweredFunc scheduled_gemm(int M, int N, int K, const ops::GemmTiling& tiling) {
  Tensor A = placeholder({Expr(M), Expr(K)}, DataType::Float(32), "A"),
         B = placeholder({Expr(K), Expr(N)}, DataType::Float(32), "B");
  Tensor C = ops::gemm(A, B, tiling, "C");
  schedule::Schedule s({C});
  ops::schedule_gemm_cpu(s, C, tiling);
  return schedule::lower(s, {A, B, C}, "gemm");
}

}  // namespace

int main(int argc, char** argv) {
  int size = 1024, reps = 10;
  int shape[3] = {0, 0, 0};
  double min_ratio = 0;
  std::vector<int> thread_counts = {1, 2};
  codegen::LLVMOptions opts;
  int mr = 0, nr = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gemm_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--size")
      size = std::stoi(next());
    else if (a == "--shape") {
      std::string v = next();
      if (std::sscanf(v.c_str(), "%dx%dx%d", &shape[0], &shape[1], &shape[2]) != 3 || shape[0] < 1 || shape[1] < 1 ||
          shape[2] < 1) {
        std::fprintf(stderr, "gemm_bench: --shape wants MxNxK with positive sizes, got '%s'\n", v.c_str());
        return 2;
      }
    } else if (a == "--reps")
      reps = std::stoi(next());
    else if (a == "--threads")
      thread_counts = bench::parse_int_list(next());
    else if (a == "--dump-asm")
      opts.dump_asm_path = next();
    else if (a == "--min-ratio")
      min_ratio = std::stod(next());
    else if (a == "--mr")
      mr = std::stoi(next());
    else if (a == "--nr")
      nr = std::stoi(next());
    else {
      std::fprintf(stderr,
                   "usage: gemm_bench [--size N | --shape MxNxK] [--reps R] [--threads 1,2] [--dump-asm file.s] "
                   "[--min-ratio R] [--mr M] [--nr N]\n");
      return 2;
    }
  }
  const int M = shape[0] ? shape[0] : size, N = shape[0] ? shape[1] : size, K = shape[0] ? shape[2] : size;
  Blocking blocking;
  const bool with_hand = M % blocking.mc == 0 && N % blocking.nr == 0 && K % blocking.kc == 0;
  if (!with_hand && !shape[0]) {
    std::fprintf(stderr, "gemm_bench: --size must be a multiple of %d, %d and %d (--shape takes any)\n", blocking.mc,
                 blocking.nr, blocking.kc);
    return 2;
  }
  const double flops = 2.0 * M * N * K;
  std::printf("fp32 GEMM %dx%dx%d, best of %d\n", M, N, K, reps);
  std::printf("  loom target: %s\n", codegen::host_target_description().c_str());
  std::printf("  %s\n", bench::openblas_description().c_str());
  std::printf("  %s\n", bench::onednn_description().c_str());

  codegen::TargetInfo target = codegen::target_info(opts);
  ops::GemmTiling tiling = ops::gemm_tiling_for(target.float32_lanes(), target.vector_registers, M, N, K);
  if (mr) tiling.mr = mr;
  if (nr) tiling.nr = nr;
  auto t0 = std::chrono::steady_clock::now();
  runtime::Module mod = codegen::build_llvm({scheduled_gemm(M, N, K, tiling)}, opts);
  std::printf("  loom kernel: schedule_gemm_cpu, %s (mr %d, nr %d, kc %d), lowered + compiled in %.0f ms\n",
              ops::to_string(tiling.form), tiling.mr, tiling.nr, tiling.kc,
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  runtime::Module hand_mod;
  if (with_hand) {
    hand_mod = codegen::build_llvm({gemm_kernel(M, N, K, blocking)});
    std::printf("  hand kernel: hand-built blocked loop nest (mr %d, nr %d, kc %d, mc %d)\n", blocking.mr, blocking.nr,
                blocking.kc, blocking.mc);
  }

  DataType f32 = DataType::Float(32);
  NDArray A = NDArray::empty({M, K}, f32), B = NDArray::empty({K, N}, f32), C = NDArray::zeros({M, N}, f32),
          H = NDArray::zeros({M, N}, f32), ref = NDArray::zeros({M, N}, f32), dnn = NDArray::zeros({M, N}, f32);
  A.fill_random(1);
  B.fill_random(2);

  // Correctness first (OpenBLAS as the reference).
  bench::openblas_set_threads(1);
  bench::openblas_sgemm(M, N, K, A.data<float>(), B.data<float>(), ref.data<float>());
  mod.call("gemm", {A, B, C});
  if (with_hand) hand_mod.call("gemm", {A, B, H});
  bench::OneDnnMatmul onednn(M, N, K);
  onednn.run(A.data<float>(), B.data<float>(), dnn.data<float>());
  double err = bench::max_relative_error(C, ref), err_hand = with_hand ? bench::max_relative_error(H, ref) : 0,
         err_dnn = bench::max_relative_error(dnn, ref);
  std::printf("  max relative error vs OpenBLAS: loom %.2e, hand %.2e, oneDNN %.2e\n", err, err_hand, err_dnn);
  if (err > 1e-4 || err_hand > 1e-4) {
    std::printf("FAILED: loom result differs from OpenBLAS\n");
    return 1;
  }

  runtime::CompiledFn gemm = mod.get_function("gemm");
  runtime::CompiledFn hand = with_hand ? hand_mod.get_function("gemm") : nullptr;
  void* raw_args[3] = {A.raw_data(), B.raw_data(), C.raw_data()};
  void* hand_args[3] = {A.raw_data(), B.raw_data(), H.raw_data()};
  double worst = 1e30;
  std::printf("\n%-8s %10s %10s %10s %10s %14s %14s\n", "threads", "loom GF/s", "hand", "openblas", "onednn",
              "loom/openblas", "loom/onednn");
  for (int threads : thread_counts) {
    runtime::set_num_threads(threads);
    bench::openblas_set_threads(threads);
    bench::onednn_set_threads(threads);
    bench::settle();
    double t_loom = bench::time_best_of(reps, [&] { gemm(raw_args); });
    double t_hand = with_hand ? bench::time_best_of(reps, [&] { hand(hand_args); }) : 0;
    bench::settle();
    double t_blas = bench::time_best_of(
        reps, [&] { bench::openblas_sgemm(M, N, K, A.data<float>(), B.data<float>(), ref.data<float>()); });
    bench::settle();
    // oneDNN may fix its thread count when a primitive is created: make one per thread count.
    bench::OneDnnMatmul onednn_t(M, N, K);
    double t_dnn =
        bench::time_best_of(reps, [&] { onednn_t.run(A.data<float>(), B.data<float>(), dnn.data<float>()); });
    double g_loom = bench::gflops(flops, t_loom), g_hand = with_hand ? bench::gflops(flops, t_hand) : 0,
           g_blas = bench::gflops(flops, t_blas), g_dnn = bench::gflops(flops, t_dnn);
    std::printf("%-8d %10.1f %10.1f %10.1f %10.1f %14.2f %14.2f\n", threads, g_loom, g_hand, g_blas, g_dnn,
                g_loom / g_blas, g_loom / g_dnn);
    std::fflush(stdout);
    worst = std::min(worst, g_loom / std::max(g_blas, g_dnn));
  }
  if (min_ratio > 0) {
    std::printf("worst loom / best baseline: %.2f (required %.2f): %s\n", worst, min_ratio,
                worst >= min_ratio ? "PASS" : "FAIL");
    if (worst < min_ratio) return 3;
  }
  return 0;
}
