// int8 GEMM C[M,N] (int32) = A[M,K] (uint8) * B[K,N] (int8), default 1024^3: Loom
// (ops::gemm_int8; B packed inside the kernel) vs oneDNN's u8s8s32 GEMM (dnnl_gemm_u8s8s32) and int8 matmul primitive,
// at each thread count, measured in the same run; ratios against the stronger oneDNN kernel. Outputs must be identical
// (operands in [0, 127] x [-64, 63], where oneDNN's vpmaddubsw kernels do not saturate). Loom's form: byte groups
// (vpdpbusd with VNNI, else vpmaddubsw) when the host has VNNI or the weights' pairs fit 7 bits
// (ops::int8_weights_fit_bytes4; the default operands do), else int16 pairs (pmaddwd), which are exact for any weights;
// for M <= 4 direct (no packing); --form pairs|bytes|direct forces one.
//   gemm_int8_bench [--shape MxNxK] [--reps R] [--threads 1,2] [--mr M --nv V] [--form pairs|bytes|direct] [--min-ratio
//   R] [--full-range 1]
// --full-range 1 draws A from [0, 255] and B from [-128, 127] and counts, against plain 64-bit
// loops on sampled elements, the wrong results of each kernel instead of requiring equality.
// With --min-ratio the bench fails (exit 3) when Loom is slower than R x the stronger baseline at
// any thread count: the target is --min-ratio 0.8.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "baselines.h"
#include "loom/codegen/llvm.h"
#include "loom/ops/gemm_int8.h"
#include "loom/runtime/thread_pool.h"
#include "loom/schedule/lower.h"

using namespace loom;
using namespace loom::ir;

int main(int argc, char** argv) try {
  int64_t M = 1024, N = 1024, K = 1024;
  int reps = 10, mr = 0, nv = 0;
  double min_ratio = 0;
  bool full_range = false;
  std::string form_name;
  std::vector<int> thread_counts = {1, 2};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--shape") {
      long long m = 0, n = 0, k = 0;
      if (std::sscanf(v.c_str(), "%lldx%lldx%lld", &m, &n, &k) != 3 || m < 1 || n < 1 || k < 1) {
        std::fprintf(stderr, "gemm_int8_bench: --shape wants MxNxK with positive sizes, got '%s'\n", v.c_str());
        return 2;
      }
      M = m, N = n, K = k;
    } else if (a == "--reps")
      reps = std::stoi(v);
    else if (a == "--threads")
      thread_counts = bench::parse_int_list(v);
    else if (a == "--mr")
      mr = std::stoi(v);
    else if (a == "--nv")
      nv = std::stoi(v);
    else if (a == "--min-ratio")
      min_ratio = std::stod(v);
    else if (a == "--full-range" && (v == "0" || v == "1"))
      full_range = v == "1";
    else if (a == "--form" && (v == "pairs" || v == "bytes" || v == "direct"))
      form_name = v;
    else {
      std::fprintf(stderr,
                   "usage: gemm_int8_bench [--shape MxNxK] [--reps R] [--threads 1,2] [--mr M --nv V] [--form "
                   "pairs|bytes|direct] "
                   "[--min-ratio R] [--full-range 0|1]\n");
      return 2;
    }
  }
  if (reps < 1 || mr < 0 || nv < 0 || thread_counts.empty() ||
      *std::min_element(thread_counts.begin(), thread_counts.end()) < 1) {
    std::fprintf(
        stderr,
        "gemm_int8_bench: --reps, --threads must be at least 1 and --mr, --nv at least 0 (0: the target's tile)\n");
    return 2;
  }
  if (argc % 2 == 0) {
    std::fprintf(stderr, "gemm_int8_bench: %s needs a value\n", argv[argc - 1]);
    return 2;
  }
  codegen::TargetInfo target = codegen::target_info();
  std::printf("int8 GEMM u8 x s8 -> s32 %lldx%lldx%lld, best of %d\n", (long long)M, (long long)N, (long long)K, reps);
  std::printf("  loom target: %s%s\n  %s\n", codegen::host_target_description().c_str(),
              target.int8_dot ? " (VNNI)" : " (no VNNI)", bench::onednn_description().c_str());
  Tensor A = placeholder({Expr(int(M)), Expr(int(K))}, DataType::UInt(8), "A"),
         B = placeholder({Expr(int(K)), Expr(int(N))}, DataType::Int(8), "B");
  NDArray a = NDArray::empty({M, K}, DataType::UInt(8)), b = NDArray::empty({K, N}, DataType::Int(8));
  NDArray c = NDArray::zeros({M, N}, DataType::Int(32)), c_gemm = c.copy(), c_mm = c.copy();
  std::mt19937 rng(1);
  for (int64_t i = 0; i < a.numel(); ++i) a.data<uint8_t>()[i] = uint8_t(rng() % (full_range ? 256 : 128));
  for (int64_t i = 0; i < b.numel(); ++i)
    b.data<int8_t>()[i] = int8_t(full_range ? int(rng() % 256) - 128 : int(rng() % 128) - 64);
  const bool fits = ops::int8_weights_fit_bytes4(b);
  ops::Int8GemmForm form = form_name.empty()       ? (M <= 4                    ? ops::Int8GemmForm::Direct
                                                      : target.int8_dot || fits ? ops::Int8GemmForm::Bytes4
                                                                                : ops::Int8GemmForm::Pairs16)
                           : form_name == "bytes"  ? ops::Int8GemmForm::Bytes4
                           : form_name == "direct" ? ops::Int8GemmForm::Direct
                                                   : ops::Int8GemmForm::Pairs16;
  ops::Int8GemmTiling t =
      ops::int8_gemm_tiling_for(target.vector_bits / 32, target.vector_registers, M, N, form, target.int8_dot);
  if (mr) t.mr = mr;
  if (nv) t.nv = nv;
  std::printf("  loom form: %s (%s; the weights' pairs %s 7 bits)\n", ops::to_string(form),
              form_name.empty() ? "chosen" : "--form", fits ? "fit" : "do not fit");
  const double ops = 2.0 * double(M) * double(N) * double(K);
  double worst = 1e300;
  for (int threads : thread_counts) {
    runtime::set_num_threads(threads);  // the schedule's parallel choices depend on it
    bench::onednn_set_threads(threads);
    Tensor C = ops::gemm_int8(A, B, t);
    schedule::Schedule s({C});
    ops::schedule_gemm_int8_cpu(s, C, t);
    runtime::Module m = codegen::build_llvm({schedule::lower(s, {A, B, C}, "gemm_int8")});
    runtime::CompiledFn fn = m.get_function("gemm_int8");
    void* args[] = {a.raw_data(), b.raw_data(), c.raw_data()};
    bench::OneDnnMatmulU8S8 mm(M, N, K);
    fn(args);
    bench::onednn_gemm_u8s8s32(M, N, K, a.data<uint8_t>(), b.data<int8_t>(), c_gemm.data<int32_t>());
    mm.run(a.data<uint8_t>(), b.data<int8_t>(), c_mm.data<int32_t>());
    if (full_range) {
      // Sampled elements against 64-bit loops: how many each kernel gets wrong.
      int wrong[3] = {0, 0, 0}, samples = 0;
      for (int64_t i = 0; i < M; i += std::max<int64_t>(1, M / 61))
        for (int64_t j = 0; j < N; j += std::max<int64_t>(1, N / 59), ++samples) {
          int64_t want = 0;
          for (int64_t k = 0; k < K; ++k) want += int64_t(a.data<uint8_t>()[i * K + k]) * b.data<int8_t>()[k * N + j];
          wrong[0] += c.data<int32_t>()[i * N + j] != want;
          wrong[1] += c_gemm.data<int32_t>()[i * N + j] != want;
          wrong[2] += c_mm.data<int32_t>()[i * N + j] != want;
        }
      std::printf(
          "  full-range operands, %d thread%s: of %d sampled elements wrong: loom %d, oneDNN gemm_u8s8s32 %d, oneDNN "
          "matmul %d\n",
          threads, threads == 1 ? "" : "s", samples, wrong[0], wrong[1], wrong[2]);
      if (wrong[0]) return 1;
    } else if (std::memcmp(c.raw_data(), c_gemm.raw_data(), size_t(c.nbytes())) != 0 ||
               std::memcmp(c.raw_data(), c_mm.raw_data(), size_t(c.nbytes())) != 0) {
      std::printf("FAILED: loom's result differs from oneDNN's\n");
      return 1;
    }
    bench::settle();
    double tl = bench::time_best_of(reps, [&] { fn(args); });
    bench::settle();
    double tg = bench::time_best_of(reps, [&] {
      bench::onednn_gemm_u8s8s32(M, N, K, a.data<uint8_t>(), b.data<int8_t>(), c_gemm.data<int32_t>());
    });
    bench::settle();
    double tm = bench::time_best_of(reps, [&] { mm.run(a.data<uint8_t>(), b.data<int8_t>(), c_mm.data<int32_t>()); });
    double best = std::min(tg, tm), ratio = best / tl;
    worst = std::min(worst, ratio);
    std::printf(
        "  %d thread%s: loom %.1f GOP/s (tile %d x %d x %d lanes), oneDNN gemm_u8s8s32 %.1f, oneDNN matmul %.1f; loom "
        "/ best oneDNN %.2fx\n",
        threads, threads == 1 ? " " : "s", bench::gflops(ops, tl), t.mr, t.nv, t.lanes, bench::gflops(ops, tg),
        bench::gflops(ops, tm), ratio);
  }
  if (!full_range) std::printf("results identical to oneDNN's at every thread count\n");
  if (min_ratio > 0 && worst < min_ratio) {
    std::printf("FAIL: loom is %.2fx the stronger baseline, below %.2f\n", worst, min_ratio);
    return 3;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "gemm_int8_bench: %s\n", e.what());
  return 2;
}
