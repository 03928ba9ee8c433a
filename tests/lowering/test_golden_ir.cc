// Golden printed-IR tests: the shape of the loop nest produced by split, reorder and compute_at.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/test_util.h"
#include "common/workloads.h"
#include "loom/ir/printer.h"
#include "loom/runtime/error.h"
#include "loom/schedule/lower.h"

namespace loom {
namespace {

using namespace loom::ir;
using schedule::Schedule;

std::string lower_to(const Schedule& s, const test::Workload& w, const std::string& pass) {
  schedule::LowerOptions opt;
  std::string out;
  opt.on_pass = [&](const std::string& p, const std::string& text) {
    if (p == pass) out = text;
  };
  schedule::lower(s, w.args(), "f", opt);
  return out;
}

// vector_add(10) split by 4, after lowering: the full tiles' loop and the tail of 2.
const std::string kSplit10By4 = R"(func f(A: float32[10], B: float32[10], C: float32[10]) {
  for (i.outer, 0, 2) {
    for (i.inner, 0, 4) {
      C[i.outer*4 + i.inner] = A[i.outer*4 + i.inner] + B[i.outer*4 + i.inner]
    }
  }
  for (i.inner, 0, 2) {
    C[i.inner + 8] = A[i.inner + 8] + B[i.inner + 8]
  }
}
)";

// A split by a non-divisor guards the loop body (schedule_ops); loop partitioning then gives
// the full tiles a loop of their own without the guard, and the tail only the iterations it has.
TEST(GoldenIR, SplitAddsOuterInnerLoopsAndGuard) {
  auto w = test::vector_add(10);
  Schedule s(w.outputs);
  s[w.outputs[0]].split(s[w.outputs[0]].axis(0), 4);
  EXPECT_EQ(lower_to(s, w, "simplify_final"), kSplit10By4);
  EXPECT_EQ(lower_to(s, w, "inject_dma_copy"),  // before partitioning
            R"(func f(A: float32[10], B: float32[10], C: float32[10]) {
  for (i.outer, 0, 3) {
    for (i.inner, 0, 4) {
      if (i.outer*4 + i.inner < 10) {
        C[i.outer*4 + i.inner] = A[i.outer*4 + i.inner] + B[i.outer*4 + i.inner]
      }
    }
  }
}
)");
}

// A parallel loop is not split (that would be two fork-joins): its body branches between the
// unguarded main range and the last iteration, whose inner loop is then cut to what it needs.
TEST(GoldenIR, ParallelSplitBranchesToAnUnguardedBody) {
  auto w = test::vector_add(10);
  Schedule s(w.outputs);
  auto [o, i] = s[w.outputs[0]].split(s[w.outputs[0]].axis(0), 4);
  s[w.outputs[0]].parallel(o);
  EXPECT_EQ(lower_to(s, w, "simplify_final"),
            R"(func f(A: float32[10], B: float32[10], C: float32[10]) {
  parallel (i.outer, 0, 3) {
    if (i.outer < 2) {
      for (i.inner, 0, 4) {
        C[i.outer*4 + i.inner] = A[i.outer*4 + i.inner] + B[i.outer*4 + i.inner]
      }
    } else {
      for (i.inner, 0, 2) {
        C[i.outer*4 + i.inner] = A[i.outer*4 + i.inner] + B[i.outer*4 + i.inner]
      }
    }
  }
}
)");
}

// LowerOptions::min_parallel_work (what the model compiler sets): a parallel loop whose stores,
// counted through the loops around them, fall below it runs serially; at or above it, and with
// the default 0, it stays parallel.
TEST(GoldenIR, SmallParallelLoopsRunSerially) {
  auto count_parallel = [](int n, int64_t min_work) {
    auto w = test::vector_add(n);
    Schedule s(w.outputs);
    auto [o, i] = s[w.outputs[0]].split(s[w.outputs[0]].axis(0), 4);
    s[w.outputs[0]].parallel(o);
    schedule::LowerOptions opt;
    opt.min_parallel_work = min_work;
    std::string text = to_string(schedule::lower(s, w.args(), "f", opt));
    size_t count = 0;
    for (size_t at = text.find("parallel ("); at != std::string::npos; at = text.find("parallel (", at + 1)) ++count;
    return count;
  };
  EXPECT_EQ(count_parallel(64, 0), 1u);   // 64 stores: parallel as scheduled
  EXPECT_EQ(count_parallel(64, 64), 1u);  // exactly the threshold: still parallel
  EXPECT_EQ(count_parallel(64, 65), 0u);  // one store short: serial
  // 3 iterations of an if-else between the full tile (4 stores) and the tail (2): counted 3 x 4.
  EXPECT_EQ(count_parallel(10, 13), 0u);
  EXPECT_EQ(count_parallel(10, 12), 1u);
  // A transcendental call counts as 8 stores: exp over 64 elements is 64 x (1 + 8) = 576.
  auto exp_parallel = [](int64_t min_work) {
    ir::Tensor A = ir::placeholder({64}, DataType::Float(32), "A");
    ir::Tensor C = ir::compute(
        {64}, [&](ir::Var i) { return ir::exp(A(i)); }, "C");
    Schedule s({C});
    auto [o, i] = s[C].split(s[C].axis(0), 4);
    s[C].parallel(o);
    schedule::LowerOptions opt;
    opt.min_parallel_work = min_work;
    return to_string(schedule::lower(s, {A, C}, "f", opt)).find("parallel (") != std::string::npos;
  };
  EXPECT_TRUE(exp_parallel(576));
  EXPECT_FALSE(exp_parallel(577));
}

// LowerOptions::parallel_work_hints (the model compiler's default): every parallel loop kept carries
// its work for the runtime (attr parallel_work); one below min_parallel_work is serial and has
// none. A nested parallel loop gets its own count (the runtime may run the outer one serially).
TEST(GoldenIR, ParallelLoopsCarryTheirWork) {
  auto lowered_text = [](int n, int64_t min_work, bool nested) {
    auto w = test::vector_add(n);
    Schedule s(w.outputs);
    auto [o, i] = s[w.outputs[0]].split(s[w.outputs[0]].axis(0), 4);
    s[w.outputs[0]].parallel(o);
    if (nested) s[w.outputs[0]].parallel(i);
    schedule::LowerOptions opt;
    opt.min_parallel_work = min_work;
    opt.parallel_work_hints = true;
    return to_string(schedule::lower(s, w.args(), "f", opt));
  };
  std::string kept = lowered_text(64, 64, false);
  EXPECT_NE(kept.find("// attr parallel_work = (int64)64\n  parallel (i.outer"), std::string::npos) << kept;
  std::string serial = lowered_text(64, 65, false);
  EXPECT_EQ(serial.find("parallel"), std::string::npos) << serial;
  // 3 iterations of an if-else between the full tile (4 stores) and the tail (2): 12.
  std::string tail = lowered_text(10, 0, false);
  EXPECT_NE(tail.find("// attr parallel_work = (int64)12\n"), std::string::npos) << tail;
  std::string nested = lowered_text(64, 0, true);
  EXPECT_NE(nested.find("// attr parallel_work = (int64)64\n  parallel (i.outer"), std::string::npos) << nested;
  EXPECT_NE(nested.find("// attr parallel_work = (int64)4\n    parallel (i.inner"), std::string::npos) << nested;
  // The inner loop below the floor: serial, the outer one still hinted.
  std::string inner_serial = lowered_text(64, 5, true);
  EXPECT_NE(inner_serial.find("// attr parallel_work = (int64)64\n  parallel (i.outer"), std::string::npos)
      << inner_serial;
  EXPECT_EQ(inner_serial.find("parallel (i.inner"), std::string::npos) << inner_serial;
  EXPECT_EQ(inner_serial.find("parallel_work = (int64)4"), std::string::npos) << inner_serial;
}

// pragma(k, "prefetch", d): at step k of row j, the loop fetches the line row j + d will load
// at that step, on the steps k = j (mod d) only, while a row d ahead exists; what does not move
// with j (A's row), the accumulator and loads in inner loops are not fetched. A distance below 1
// is an error; GPU lowering drops the pragma.
TEST(GoldenIR, PrefetchPragmaFetchesWhatLaterIterationsRead) {
  Tensor A = placeholder({8, 16}, DataType::Float(32), "A"), B = placeholder({4, 16}, DataType::Float(32), "B");
  IterVar k = reduce_axis(16, "k");
  Tensor C = compute(
      {8, 4}, [&](Var i, Var j) { return sum(A(i, k) * B(j, k), {k}); }, "C");
  test::Workload w{{A, B}, {C}};
  Schedule s(w.outputs);
  s[C].pragma(s[C].reduce_axis(0), "prefetch", Expr(2));
  std::string text = lower_to(s, w, "simplify_final");
  EXPECT_NE(text.find("    for (j, 0, 4) {\n"
                      "      C[i*4 + j] = 0.0f\n"
                      "      for (k, 0, 16) {\n"
                      "        if (k % 2 == j % 2 && j + 2 < 4) {\n"
                      "          prefetch(address_of(B[j*16 + k + 32]))\n"
                      "        }\n"
                      "        C[i*4 + j] = C[i*4 + j] + A[i*16 + k]*B[j*16 + k]\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(test::count_occurrences(text, "prefetch("), 1u) << text;
  // Loads inside a loop within the marked one use its variable, not defined where the
  // prefetches go: none.
  Schedule inner(w.outputs);
  auto [ko, ki] = inner[C].split(inner[C].reduce_axis(0), 4);
  inner[C].pragma(ko, "prefetch", Expr(2));
  std::string split = lower_to(inner, w, "simplify_final");
  EXPECT_EQ(split.find("prefetch("), std::string::npos) << split;
  // An index that reads memory (a gathered row) may be out of bounds where the loop does not
  // load it: not fetched, though it moves by a constant.
  Tensor Row = placeholder({8}, DataType::Int(32), "Row");
  IterVar k2 = reduce_axis(16, "k");
  Tensor G = compute(
      {8, 2}, [&](Var i, Var j) { return sum(A(i, k2) * B(Row(i) + j, k2), {k2}); }, "G");
  test::Workload gw{{A, B, Row}, {G}};
  Schedule gathered(gw.outputs);
  gathered[G].pragma(gathered[G].reduce_axis(0), "prefetch", Expr(1));
  std::string gtext = lower_to(gathered, gw, "simplify_final");
  EXPECT_EQ(gtext.find("prefetch("), std::string::npos) << gtext;
  Schedule bad(w.outputs);
  bad[C].pragma(bad[C].reduce_axis(0), "prefetch", Expr(0));
  EXPECT_THROW(lower_to(bad, w, "simplify_final"), LoweringError);
  Schedule gpu(w.outputs);
  gpu[C].bind(gpu[C].axis(0), "blockIdx.x");
  gpu[C].bind(gpu[C].axis(1), "threadIdx.x");
  gpu[C].pragma(gpu[C].reduce_axis(0), "prefetch", Expr(2));
  schedule::LowerOptions opt;
  opt.target_gpu = true;
  std::string on_gpu = to_string(schedule::lower(gpu, w.args(), "f", opt));
  EXPECT_EQ(on_gpu.find("prefetch"), std::string::npos) << on_gpu;
}

// pragma(k, "prefetch_across", t) for row tiles in a loop of their own (t) inside the column
// groups: at step k of tile t, the loop fetches the line that the next group loads at that step,
// on the steps k = t (mod the tiles' extent) only, while a next group exists; the partitioned
// tail tile (t a constant there) fetches nothing, nor does a value that is no loop variable (as
// partitioning leaves a symbolic tail's).
TEST(GoldenIR, PrefetchAcrossTilesFetchesTheNextGroup) {
  Tensor A = placeholder({10, 16}, DataType::Float(32), "A"), B = placeholder({4, 16}, DataType::Float(32), "B");
  IterVar k = reduce_axis(16, "k");
  Tensor C = compute(
      {10, 4}, [&](Var i, Var j) { return sum(A(i, k) * B(j, k), {k}); }, "C");
  test::Workload w{{A, B}, {C}};
  auto tiled = [&](bool offset_value) {
    Schedule s(w.outputs);
    auto [jo, ji] = s[C].split(s[C].axis(1), 2);
    auto [io, ii] = s[C].split(s[C].axis(0), 4);
    s[C].reorder({jo, io, ii, ji});
    s[C].pragma(s[C].reduce_axis(0), "prefetch_across", offset_value ? io->var + 1 : Expr(io->var));
    return lower_to(s, w, "simplify_final");
  };
  std::string text = tiled(false);
  EXPECT_NE(text.find("if (k % 2 == i.outer && j.outer + 1 < 2) {\n"), std::string::npos) << text;
  EXPECT_NE(text.find("prefetch(address_of(B[j.outer*32 + j.inner*16 + k + 32]))"), std::string::npos) << text;
  // Two whole tiles (the loop of extent 2) fetch; the tail tile of two rows does not.
  EXPECT_EQ(test::count_occurrences(text, "prefetch("), 1u) << text;
  std::string offset = tiled(true);
  EXPECT_EQ(offset.find("prefetch("), std::string::npos) << offset;
}

// `pragma llvm_unroll` stays on its own loop: on the partitioned full tiles (the tail of one
// iteration is no longer that loop: its inner loop must not inherit it), and nowhere once the
// loop of one iteration is gone. It used to wrap the seq of pieces (lost by the LLVM backend).
TEST(GoldenIR, UnrollPragmaFollowsItsLoop) {
  auto w = test::vector_add(10);
  Schedule s(w.outputs);
  auto [o, i] = s[w.outputs[0]].split(s[w.outputs[0]].axis(0), 4);
  s[w.outputs[0]].pragma(o, "llvm_unroll", Expr(0));
  // The same IR with the pragma on the first loop only.
  std::string want = kSplit10By4;
  want.insert(want.find("  for (i.outer"), "  // attr pragma_llvm_unroll = 0\n");
  EXPECT_EQ(lower_to(s, w, "simplify_final"), want);
  Schedule one(w.outputs);
  auto [o1, i1] = one[w.outputs[0]].split(one[w.outputs[0]].axis(0), 10);
  one[w.outputs[0]].pragma(o1, "llvm_unroll", Expr(0));
  EXPECT_EQ(lower_to(one, w, "simplify_final"),
            R"(func f(A: float32[10], B: float32[10], C: float32[10]) {
  for (i.inner, 0, 10) {
    C[i.inner] = A[i.inner] + B[i.inner]
  }
}
)");
}

// Inlined zero padding guards every read with if_then_else; partitioning splits off the border
// iterations, where the condition folds to false (zero) or true (the read), so the interior loop
// reads without a guard.
TEST(GoldenIR, PaddingGuardsPartitionedToTheBorders) {
  Tensor A = placeholder({8}, DataType::Float(32), "A");
  Tensor B = compute(
      {10}, [&](Var i) { return if_then_else(i >= 1 && i < 9, A(i - 1), make_zero(DataType::Float(32))); }, "B");
  test::Workload w{{A}, {B}};
  Schedule s({B});
  EXPECT_EQ(lower_to(s, w, "simplify_final"),
            R"(func f(A: float32[8], B: float32[10]) {
  B[0] = 0.0f
  for (i, 1, 8) {
    B[i] = A[i - 1]
  }
  B[9] = 0.0f
}
)");
}

// A matmul's columns split by 8, the 8 vectorized innermost: outside them the column tiles, the
// rows and the reduction.
void vectorize_column_tiles(Schedule& s, const Tensor& C) {
  auto [jo, ji] = s[C].split(s[C].axis(1), 8);
  s[C].reorder({jo, s[C].axis(0), s[C].reduce_axis(0), ji});
  s[C].vectorize(ji);
}

TEST(GoldenIR, ReorderAndVectorize) {
  auto w = test::matmul(8, 16, 4);
  Schedule s({w.outputs[0]});
  vectorize_column_tiles(s, w.outputs[0]);
  EXPECT_EQ(lower_to(s, w, "simplify_final"),
            R"(func f(A: float32[8, 4], B: float32[4, 16], C: float32[8, 16]) {
  for (j.outer, 0, 2) {
    for (i, 0, 8) {
      C[ramp(i*16 + j.outer*8, 1, 8)] = x8(0.0f)
      for (k, 0, 4) {
        C[ramp(i*16 + j.outer*8, 1, 8)] = C[ramp(i*16 + j.outer*8, 1, 8)] + x8(A[i*4 + k])*B[ramp(k*16 + j.outer*8, 1, 8)]
      }
    }
  }
}
)");
}

// A vectorized split by a non-divisor: the full tiles are 8-lane vectors, and the last tile a
// vector of the 4 columns it has, without the guard (partition_loops narrows it; a per-lane guard
// would keep the loop and leave it to LLVM's vectorizer), in whole registers and one narrower. A
// GPU lowering keeps its lanes and guard (its vector stores are float2/float4 or one per lane:
// emit_cuda.cc).
TEST(GoldenIR, RaggedVectorTailNarrowsToItsColumns) {
  auto w = test::matmul(8, 20, 4);
  Tensor C = w.outputs[0];
  Schedule s({C});
  vectorize_column_tiles(s, C);
  EXPECT_EQ(lower_to(s, w, "simplify_final"), R"(func f(A: float32[8, 4], B: float32[4, 20], C: float32[8, 20]) {
  for (j.outer, 0, 2) {
    for (i, 0, 8) {
      C[ramp(i*20 + j.outer*8, 1, 8)] = x8(0.0f)
      for (k, 0, 4) {
        C[ramp(i*20 + j.outer*8, 1, 8)] = C[ramp(i*20 + j.outer*8, 1, 8)] + x8(A[i*4 + k])*B[ramp(k*20 + j.outer*8, 1, 8)]
      }
    }
  }
  for (i, 0, 8) {
    C[ramp(i*20 + 16, 1, 4)] = x4(0.0f)
    for (k, 0, 4) {
      C[ramp(i*20 + 16, 1, 4)] = C[ramp(i*20 + 16, 1, 4)] + x4(A[i*4 + k])*B[ramp(k*20 + 16, 1, 4)]
    }
  }
}
)");
  // 23 columns leave 7: one vector of 7 lanes in 256-bit registers; 4 and 3 in 128-bit ones
  // (LLVM builds a vector of an odd width past one register lane by lane).
  auto w23 = test::matmul(8, 23, 4);
  Schedule s23({w23.outputs[0]});
  vectorize_column_tiles(s23, w23.outputs[0]);
  schedule::LowerOptions bits;
  bits.vector_bits = 256;
  std::string ir256 = to_string(schedule::lower(s23, w23.args(), "f", bits));
  EXPECT_NE(ir256.find("C[ramp(i*23 + 16, 1, 7)] = x7(0.0f)"), std::string::npos) << ir256;
  bits.vector_bits = 128;
  std::string ir128 = to_string(schedule::lower(s23, w23.args(), "f", bits));
  EXPECT_NE(ir128.find("C[ramp(i*23 + 16, 1, 4)] = x4(0.0f)\n    C[ramp(i*23 + 20, 1, 3)] = x3(0.0f)"),
            std::string::npos)
      << ir128;
  Schedule g({C});
  auto [gjo, gji] = g[C].split(g[C].axis(1), 8);
  g[C].reorder({g[C].axis(0), gjo, g[C].reduce_axis(0), gji});
  g[C].bind(g[C].axis(0), "threadIdx.x");
  g[C].vectorize(gji);
  schedule::LowerOptions gpu;
  gpu.target_gpu = true;
  std::string on_gpu = to_string(schedule::lower(g, w.args(), "f", gpu));
  EXPECT_NE(on_gpu.find("vectorized (j.inner, 0, 8) {\n      if (j.inner + 16 < 20)"), std::string::npos) << on_gpu;
}

TEST(GoldenIR, ComputeAtPlacesProducerInsideConsumerLoop) {
  using namespace ir;
  Tensor A = placeholder({16}, DataType::Float(32), "A");
  Tensor B = compute(
      {16}, [&](Var i) { return A(i) * 2.0f; }, "B");
  Tensor C = compute(
      {14}, [&](Var i) { return B(i) + B(i + 2); }, "C");
  test::Workload w{{A}, {C}};
  Schedule s({C});
  auto [o, in] = s[C].split(s[C].axis(0), 7);
  s[B].compute_at(s[C], o);
  EXPECT_EQ(lower_to(s, w, "simplify"),
            R"(for (i.outer, 0, 2) {
  realize B([i.outer*7, 9]) in global {
    for (i, 0, 9) {
      B(i.outer*7 + i) = A(i.outer*7 + i)*2.0f
    }
    for (i.inner, 0, 7) {
      C(i.outer*7 + i.inner) = B(i.outer*7 + i.inner) + B(i.outer*7 + i.inner + 2)
    }
  }
}
)");
  EXPECT_EQ(lower_to(s, w, "infer_bounds"), "B: [i.outer*7 +9]\nC: [0 +14]\n");
}

// stop_after ends the pipeline right after the named pass: the passes run are exactly the list up
// to it, and the function is what that pass left (no arguments before storage_flatten).
TEST(GoldenIR, StopAfterEndsThePipelineThere) {
  auto w = test::vector_add(8);
  Schedule s(w.outputs);
  std::vector<std::string> all = schedule::lowering_pass_names();
  for (size_t k = 0; k < all.size(); ++k) {
    std::vector<std::string> seen;
    schedule::LowerOptions opt;
    opt.on_pass = [&](const std::string& p, const std::string&) { seen.push_back(p); };
    opt.stop_after = all[k];
    ir::LoweredFunc f = schedule::lower(s, w.args(), "f", opt);
    EXPECT_EQ(seen, std::vector<std::string>(all.begin(), all.begin() + std::ptrdiff_t(k) + 1)) << all[k];
    size_t flatten = size_t(std::find(all.begin(), all.end(), "storage_flatten") - all.begin());
    EXPECT_EQ(f.args.empty(), k < flatten) << all[k];
  }
}

TEST(GoldenIR, DumpListsEveryPass) {
  auto w = test::vector_add(8);
  Schedule s(w.outputs);
  std::vector<std::string> seen;
  schedule::LowerOptions opt;
  opt.on_pass = [&](const std::string& p, const std::string&) { seen.push_back(p); };
  std::ostringstream dump;
  opt.dump_ir = true;
  opt.dump_stream = &dump;
  schedule::lower(s, w.args(), "f", opt);
  EXPECT_EQ(seen, schedule::lowering_pass_names());
  EXPECT_NE(dump.str().find("// ---- after storage_flatten ----"), std::string::npos);
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// compute_root undoes compute_at / compute_inline: the producer gets its own root loop nest over
// its whole shape again.
TEST(GoldenIR, ComputeRootRestoresTheRootNest) {
  using namespace ir;
  Tensor A = placeholder({8}, DataType::Float(32), "A");
  Tensor B = compute(
      {8}, [&](Var i) { return A(i) * 2.0f; }, "B");
  Tensor C = compute(
      {8}, [&](Var i) { return B(i) + 1.0f; }, "C");
  test::Workload w{{A}, {C}};
  schedule::Schedule plain({C});
  schedule::Schedule moved({C});
  moved[B].compute_at(moved[C], moved[C].axis(0));
  moved[B].compute_inline();
  moved[B].compute_root();
  EXPECT_EQ(lower_to(moved, w, "simplify_final"), lower_to(plain, w, "simplify_final"));
  EXPECT_NE(lower_to(moved, w, "simplify_final").find("allocate B[float32 * 8] in global"), std::string::npos);
}

}  // namespace
}  // namespace loom
