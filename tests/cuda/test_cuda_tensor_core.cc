// The tensor-core GEMM (ops/cuda_tensor_core.h) without a GPU: the grid interpreter runs it with
// each warp's mma emulated from the lanes' fragments (the PTX ISA's layouts), against float64
// products of the same float16 inputs; NVRTC and ptxas compile it for sm_90; misuse of the warp
// instruction is an error, never a hang.
#include <cmath>
#include <cstring>
#include <functional>
#include <set>

#include "common/error_text.h"
#include "cuda_cases.h"
#include "loom/codegen/cuda.h"
#include "loom/ir/buffer.h"
#include "loom/ir/gpu.h"
#include "loom/ir/intrinsics.h"
#include "loom/ops/cuda_tensor_core.h"
#include "loom/runtime/cuda.h"

namespace loom {
namespace {

using namespace loom::ir;

// The tensor-core GEMM's worst error against float64 (cuda_cases.h), run by `run`.
double gemm_error(int64_t M, int64_t N, int64_t K, const ops::CudaMmaTiling& t,
                  const std::function<void(const LoweredFunc&, const std::vector<NDArray>&)>& run) {
  return test::gemm_error(ops::gemm_f16_tensor_core_cuda(M, N, K, t), DataType::Float(16), run);
}
double grid_gemm_error(int64_t M, int64_t N, int64_t K, const ops::CudaMmaTiling& t) {
  return gemm_error(M, N, K, t, test::run_on_grid);
}

ops::CudaMmaTiling small_tiling(int stages, bool ldmatrix) {
  ops::CudaMmaTiling t;
  t.block_m = 64, t.block_n = 64, t.block_k = 32, t.warp_m = 32, t.warp_n = 32;
  t.stages = stages, t.ldmatrix = ldmatrix;
  return t;
}

TEST(CudaTensorCore, FragmentTablesCoverEachMatrixElementOnce) {
  std::set<std::pair<int, int>> a, b, c;
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) a.insert({mma_m16n8k16_a(lane, i).row, mma_m16n8k16_a(lane, i).col});
    for (int i = 0; i < 4; ++i) b.insert({mma_m16n8k16_b(lane, i).row, mma_m16n8k16_b(lane, i).col});
    for (int i = 0; i < 4; ++i) c.insert({mma_m16n8k16_c(lane, i).row, mma_m16n8k16_c(lane, i).col});
  }
  EXPECT_EQ(a.size(), 256u);  // 16 x 16
  EXPECT_EQ(b.size(), 128u);  // 16 x 8
  EXPECT_EQ(c.size(), 128u);
  EXPECT_EQ(a.rbegin()->first, 15);
  EXPECT_EQ(b.rbegin()->first, 15);
  EXPECT_EQ(c.rbegin()->second, 7);
  // Rows from groupID (lane / 4), columns from threadID_in_group (lane % 4), as in the PTX ISA:
  // lane 6 holds A's a3 at (groupID + 8, 2 threadID_in_group + 1), B's b2 at (2 tig + 8, groupID).
  EXPECT_EQ(mma_m16n8k16_a(6, 3).row, 9);
  EXPECT_EQ(mma_m16n8k16_a(6, 3).col, 5);
  EXPECT_EQ(mma_m16n8k16_a(6, 4).col, 12);
  EXPECT_EQ(mma_m16n8k16_b(6, 2).row, 12);
  EXPECT_EQ(mma_m16n8k16_b(6, 2).col, 1);
  EXPECT_EQ(mma_m16n8k16_c(6, 3).row, 9);
  EXPECT_EQ(mma_m16n8k16_c(6, 3).col, 5);
}

TEST(CudaTensorCore, GemmMatchesFloat64OnTheGridInterpreter) {
  // Two blocks down M; four warps of 32 x 32 each; plain copies and lane-by-lane fragments.
  EXPECT_LT(grid_gemm_error(128, 64, 64, small_tiling(1, false)), 1e-6);
  // cp.async two and three stages deep over four K steps (the last steps commit empty groups),
  // with ldmatrix and without.
  EXPECT_LT(grid_gemm_error(64, 64, 128, small_tiling(2, true)), 1e-6);
  EXPECT_LT(grid_gemm_error(64, 64, 128, small_tiling(3, true)), 1e-6);
  EXPECT_LT(grid_gemm_error(64, 64, 128, small_tiling(3, false)), 1e-6);
  EXPECT_LT(grid_gemm_error(64, 64, 128, small_tiling(4, true)), 1e-6);  // copies in flight across barriers
  // Fewer K steps than stages ahead.
  EXPECT_LT(grid_gemm_error(64, 64, 32, small_tiling(3, true)), 1e-6);
  // One block of the default tiling: eight warps of 64 x 32, two k16 steps per shared tile.
  EXPECT_LT(grid_gemm_error(128, 128, 32, {}), 1e-6);
}

TEST(CudaTensorCore, OnTheGpuTheGemmMatchesFloat64) {
  std::string why;
  if (!runtime::cuda_available(&why)) GTEST_SKIP() << why;
  if (!codegen::cuda::nvrtc_enabled()) GTEST_SKIP() << "built without the CUDA toolkit";
  for (const ops::CudaMmaTiling& t : {small_tiling(1, false), small_tiling(3, true), ops::CudaMmaTiling{}})
    EXPECT_LT(gemm_error(256, 256, 256, t, test::run_func_on_gpu), 1e-5)
        << "stages " << t.stages << ", ldmatrix " << t.ldmatrix;
}

// One warp: a 16 x 16 float16 matrix M into shared memory, ldmatrix_x4 (A's lane addresses, or
// B's with trans), each lane's 8 elements out to F[lane][8].
NDArray ldmatrix_fragments(const NDArray& M, bool trans) {
  const DataType f16 = DataType::Float(16), i32 = DataType::Int(32);
  Buffer in = make_buffer("M", f16, {Expr(256)}), out = make_buffer("F", f16, {Expr(256)});
  Buffer sh = make_buffer("tile", f16, {Expr(256)}, scope::kShared);
  Buffer frag = make_buffer("frag", f16, {Expr(8)}, scope::kLocal);
  Var lane("lane", i32), bx("bx", i32), i("i", i32);
  // A: rows 0-7 / 8-15 and columns 0-7 / 8-15 as matrices 0-3 (lane l: row l % 8 + 8 (l / 8 % 2),
  // column 8 (l / 16)); B (trans): k rows the same, the two 8-column tiles as matrices 0-1 / 2-3.
  Expr row = lane % 8 + lane / 8 % 2 * 8, col = lane / 16 * 8;
  Stmt body = seq(
      {for_loop(i, 0, Expr(8), ForKind::Serial, store(sh, load(f16, in, lane * 8 + i), lane * 8 + i)), sync_threads(),
       ldmatrix_x4(make_address_of(load(f16, frag, 0)), make_address_of(load(f16, sh, row * 16 + col)), trans),
       for_loop(i, 0, Expr(8), ForKind::Serial, store(out, load(f16, frag, i), lane * 8 + i))});
  body = allocate(sh, allocate(frag, body));
  body = for_loop(lane, 0, Expr(32), ForKind::ThreadBinding, body, "threadIdx.x");
  body = for_loop(bx, 0, Expr(1), ForKind::ThreadBinding, body, "blockIdx.x");
  NDArray F = NDArray::zeros({256}, f16);
  interpret_grid(LoweredFunc{"ldm", {in, out}, body}, {M, F});
  return F;
}

TEST(CudaTensorCore, LdmatrixGivesTheMmaFragments) {
  NDArray M = NDArray::empty({256}, DataType::Float(16));
  for (int e = 0; e < 256; ++e) M.set_from_double(e, e);  // element (r, c) holds 16 r + c, exact in float16
  // Without trans: A's fragment of the 16 x 16 matrix.
  NDArray F = ldmatrix_fragments(M, false);
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 8; ++i) {
      auto [r, c] = mma_m16n8k16_a(l, i);
      ASSERT_EQ(F.get_as_double(l * 8 + i), 16 * r + c) << "lane " << l << " element " << i;
    }
  // With trans: B's fragments of the two 16 x 8 halves (columns 0-7, then 8-15).
  F = ldmatrix_fragments(M, true);
  for (int l = 0; l < 32; ++l)
    for (int tile = 0; tile < 2; ++tile)
      for (int i = 0; i < 4; ++i) {
        auto [k, n] = mma_m16n8k16_b(l, i);
        ASSERT_EQ(F.get_as_double(l * 8 + tile * 4 + i), 16 * k + 8 * tile + n) << "lane " << l << " element " << i;
      }
}

// One block of 32 threads: each copies its 8 float16 into shared memory with cp.async, then
// `after` (between the copy and the read) and reads its neighbour's (or its own) first element.
std::string cp_async_error(const std::vector<Stmt>& after, bool neighbour, int misalign = 0) {
  const DataType f16 = DataType::Float(16), i32 = DataType::Int(32);
  Buffer in = make_buffer("X", f16, {Expr(256)}), out = make_buffer("Y", f16, {Expr(32)});
  Buffer sh = make_buffer("tile", f16, {Expr(256 + 8)}, scope::kShared);
  Var lane("lane", i32), bx("bx", i32);
  std::vector<Stmt> body = {
      cp_async16(make_address_of(load(f16, sh, lane * 8 + misalign)), make_address_of(load(f16, in, lane * 8)))};
  body.insert(body.end(), after.begin(), after.end());
  Expr from = neighbour ? (lane + 1) % 32 * 8 : lane * 8;
  body.push_back(store(out, load(f16, sh, from), lane));
  Stmt s = allocate(sh, seq(body));
  s = for_loop(lane, 0, Expr(32), ForKind::ThreadBinding, s, "threadIdx.x");
  s = for_loop(bx, 0, Expr(1), ForKind::ThreadBinding, s, "blockIdx.x");
  LoweredFunc f{"copy", {in, out}, s};
  NDArray X = NDArray::empty({256}, f16), Y = NDArray::zeros({32}, f16);
  for (int e = 0; e < 256; ++e) X.set_from_double(e, e % 100);
  try {
    interpret_grid(f, {X, Y});
  } catch (const RuntimeError& e) {
    return e.what();
  }
  for (int l = 0; l < 32; ++l)
    if (Y.get_as_double(l) != double((neighbour ? (l + 1) % 32 : l) * 8 % 100)) return "wrong value";
  return "";
}

TEST(CudaTensorCore, CpAsyncLandsAtItsWaitAndReadsBeforeItAreErrors) {
  EXPECT_EQ(cp_async_error({cp_async_commit(), cp_async_wait(0), sync_threads()}, true), "");
  EXPECT_EQ(cp_async_error({cp_async_commit(), cp_async_wait(0)}, false), "");  // its own copy: no barrier needed
  std::string err = cp_async_error({cp_async_commit()}, false);
  EXPECT_NE(err.find("before its own cp.async into it has landed (a cp_async_wait is missing)"), std::string::npos)
      << err;
  err = cp_async_error({cp_async_commit(), cp_async_wait(1)}, false);  // one group may still be in flight
  EXPECT_NE(err.find("before its own cp.async into it has landed"), std::string::npos) << err;
  err = cp_async_error({cp_async_commit(), cp_async_wait(0)}, false, 4);  // 8 bytes off
  EXPECT_NE(err.find("gpu.cp_async16's destination tile["), std::string::npos) << err;
  EXPECT_NE(err.find("] is not aligned to 16 bytes (an element index that is a multiple of 8)"), std::string::npos)
      << err;
  // The neighbour's copy, still in flight past a barrier (its wait comes after the read).
  err = cp_async_error({cp_async_commit(), sync_threads()}, true);
  EXPECT_NE(err.find("race on shared buffer 'tile'"), std::string::npos) << err;
  err = cp_async_error({cp_async_commit(), cp_async_wait(0)}, true);  // the neighbour's, without a barrier
  EXPECT_NE(err.find("a __syncthreads is missing"), std::string::npos) << err;
}

TEST(CudaTensorCore, CudaSourceCompilesWithNvrtcAndPtxas) {
  LoweredFunc f = ops::gemm_f16_tensor_core_cuda(256, 256, 256);
  codegen::cuda::CudaOptions o;
  o.use_cache = false;
  runtime::CudaProgram src = codegen::cuda::emit({f}, o);
  EXPECT_NE(src.source.find("loom_mma_m16n8k16(&A_frag["), std::string::npos) << src.source;
  EXPECT_NE(src.source.find("loom_cp_async16(&A_shared["), std::string::npos) << src.source;
  EXPECT_NE(src.source.find("cp.async.wait_group 0;"), std::string::npos) << src.source;
  EXPECT_NE(src.source.find("loom_ldmatrix_x4(&A_frag["), std::string::npos) << src.source;
  EXPECT_NE(src.source.find("loom_ldmatrix_x4_trans(&B_frag["), std::string::npos) << src.source;
  EXPECT_NE(src.source.find("*(float2*)(C + "), std::string::npos) << src.source;
  // Without cp.async and ldmatrix: 16-byte vector copies and fragment pairs.
  ops::CudaMmaTiling plain;
  plain.stages = 1, plain.ldmatrix = false;
  std::string plain_src = codegen::cuda::emit({ops::gemm_f16_tensor_core_cuda(256, 256, 256, plain)}, o).source;
  EXPECT_NE(plain_src.find("*(uint4*)(A_shared + "), std::string::npos) << plain_src;
  EXPECT_NE(plain_src.find("*(unsigned*)(A_frag + "), std::string::npos) << plain_src;
  EXPECT_NE(src.source.find("const unsigned short* __restrict__ A"), std::string::npos) << src.source;
  auto& ks = src.functions.at(0).kernels.at(0);
  EXPECT_EQ(ks.grid, (std::array<uint32_t, 3>{2, 2, 1}));
  EXPECT_EQ(ks.block, (std::array<uint32_t, 3>{32, 8, 1}));
  if (!codegen::cuda::nvrtc_enabled()) GTEST_SKIP() << "built without the CUDA toolkit";
  runtime::CudaProgram p = codegen::cuda::build({f}, o);
  EXPECT_NE(p.ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), std::string::npos);
  EXPECT_NE(p.ptx.find("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"), std::string::npos);
  EXPECT_NE(p.ptx.find("cp.async.cg.shared.global"), std::string::npos);
  auto& k = p.functions[0].kernels[0];
  EXPECT_GT(k.registers, 64) << p.compile_log;  // 64 accumulators per thread stay in registers
  EXPECT_LE(k.registers * 256, 65536) << p.compile_log;
  EXPECT_NE(p.compile_log.find("0 bytes spill stores"), std::string::npos) << p.compile_log;
  std::cout << "gemm_f16 (tensor cores): " << k.registers << " registers, " << k.shared_bytes << " bytes shared\n";
}

TEST(CudaTensorCore, Float16ArithmeticComputesInFloat32AndRoundsBack) {
  // y = x * x + 1, z = float32(x) / 3 and v = x < 0 ? min(x, 0.5) : exp(x) over float16 x: every
  // float16 result rounded, as the reference evaluator rounds it.
  test::Workload w;
  const DataType f16 = DataType::Float(16);
  Tensor x = placeholder({300}, f16, "x");
  Tensor y = compute(
      {300}, [&](Var i) { return x(i) * x(i) + cast(f16, Expr(1.0f)); }, "y");
  Tensor z = compute(
      {300}, [&](Var i) { return cast(DataType::Float(32), x(i)) / Expr(3.0f); }, "z");
  Tensor v = compute(
      {300}, [&](Var i) { return select(x(i) < cast(f16, Expr(0.0f)), min(x(i), cast(f16, Expr(0.5f))), exp(x(i))); },
      "v");
  w.inputs = {x};
  w.outputs = {y, z, v};
  schedule::Schedule s(w.outputs);
  ops::schedule_cuda_generic(s, 128);
  LoweredFunc f = test::lower_gpu(s, w, "half_math");
  auto d = test::case_data(w);
  interpret_grid(f, d.args);
  EXPECT_TRUE(test::arrays_close(d.args[1], d.want[0], 0, 0));
  EXPECT_TRUE(test::arrays_close(d.args[2], d.want[1], 0, 0));
  EXPECT_TRUE(test::arrays_close(d.args[3], d.want[2], 0, 0));
  codegen::cuda::CudaOptions o;
  o.use_cache = false;
  const std::string src = codegen::cuda::emit({f}, o).source;
  // Each float16 operation through float32, its float16 result rounded back; constants as bits.
  const std::string x_i = "loom_h2f(x[((i_outer * 128) + i_inner)])";
  for (const std::string& want : {"= loom_f2h((loom_h2f(loom_f2h((" + x_i + " * " + x_i +
                                      "))) + loom_h2f(((unsigned short)0x3c00))));",           // x * x + 1
                                  "= (((float)" + x_i + ") / (3.0f));",                        // a cast to float32
                                  "= ((" + x_i + " < loom_h2f(((unsigned short)0x0000))) ? ",  // a comparison, a select
                                  "loom_f2h(fminf(" + x_i + ", loom_h2f(((unsigned short)0x3800))))",  // min(x, 0.5)
                                  "loom_f2h(expf(((float)" + x_i + ")))"})                             // a call
    EXPECT_NE(src.find(want), std::string::npos) << want << "\n" << src;
  if (!codegen::cuda::nvrtc_enabled()) GTEST_SKIP() << "built without the CUDA toolkit";
  runtime::CudaProgram p = codegen::cuda::build({f}, o);
  EXPECT_NE(p.ptx.find("cvt.rn.f16.f32"), std::string::npos);
}

// One warp (of `lanes` threads), one mma, wrapped in `wrap`.
LoweredFunc single_mma(const std::function<Stmt(const Var& lane, Stmt mma)>& wrap, int lanes = 32) {
  const DataType f16 = DataType::Float(16), f32 = DataType::Float(32), i32 = DataType::Int(32);
  Buffer C = make_buffer("C", f32, {Expr(32)});
  Buffer af = make_buffer("a", f16, {Expr(8)}, scope::kLocal), bf = make_buffer("b", f16, {Expr(4)}, scope::kLocal);
  Buffer cf = make_buffer("c", f32, {Expr(4)}, scope::kLocal);
  Var lane("lane", i32), bx("bx", i32);
  Stmt mma = mma_m16n8k16(make_address_of(load(f16, af, 0)), make_address_of(load(f16, bf, 0)),
                          make_address_of(load(f32, cf, 0)));
  Stmt body = seq({wrap(lane, mma), store(C, load(f32, cf, 0), lane)});
  body = allocate(af, allocate(bf, allocate(cf, body)));
  body = for_loop(lane, 0, Expr(lanes), ForKind::ThreadBinding, body, "threadIdx.x");
  body = for_loop(bx, 0, Expr(1), ForKind::ThreadBinding, body, "blockIdx.x");
  return LoweredFunc{"one_mma", {C}, body};
}

TEST(CudaTensorCore, AWarpNotAllAtTheMmaIsAnErrorNotAHang) {
  NDArray C = NDArray::zeros({32}, DataType::Float(32));
  // Half the lanes skip it.
  LoweredFunc half = single_mma([](const Var& lane, Stmt mma) { return if_then_else(lane < 16, mma); });
  std::string err = test::error_text<RuntimeError>([&] { interpret_grid(half, {C}); });
  EXPECT_NE(err.find("16 of 32 lanes reached it"), std::string::npos) << err;
  EXPECT_NE(err.find("16 finished"), std::string::npos) << err;
  // One lane waits at a barrier the others never reach.
  LoweredFunc barrier =
      single_mma([](const Var& lane, Stmt mma) { return if_then_else(lane == 0, sync_threads(), mma); });
  err = test::error_text<RuntimeError>([&] { interpret_grid(barrier, {C}); });
  EXPECT_NE(err.find("31 of 32 lanes reached it (1 wait at a barrier"), std::string::npos) << err;
  // Lanes 0-15 at one mma statement, 16-31 at another.
  LoweredFunc two = single_mma([](const Var& lane, Stmt mma) {
    auto m = *as_mma(mma);
    Stmt other = mma_m16n8k16(make_address_of(load(DataType::Float(16), m.a->buffer, 0)),
                              make_address_of(load(DataType::Float(16), m.b->buffer, 0)),
                              make_address_of(load(DataType::Float(32), m.c->buffer, 0)));
    return if_then_else(lane < 16, mma, other);
  });
  err = test::error_text<RuntimeError>([&] { interpret_grid(two, {C}); });
  EXPECT_NE(err.find("lane 0 reached gpu.mma_m16n8k16_f32f16 and lane 16 another gpu.mma_m16n8k16_f32f16"),
            std::string::npos)
      << err;
  // The whole warp, with every A and B element 1 and C 0: each D element sums 16 products.
  LoweredFunc all = single_mma([](const Var&, Stmt mma) {
    auto m = *as_mma(mma);
    Var i("i", DataType::Int(32));
    return seq({for_loop(i, 0, Expr(8), ForKind::Serial, store(m.a->buffer, cast(DataType::Float(16), Expr(1.0f)), i)),
                for_loop(i, 0, Expr(4), ForKind::Serial, store(m.b->buffer, cast(DataType::Float(16), Expr(1.0f)), i)),
                mma});
  });
  interpret_grid(all, {C});
  for (int i = 0; i < 32; ++i) EXPECT_EQ(C.get_as_double(i), 16.0) << i;
  // The sequential interpreter has no warps.
  err = test::error_text<RuntimeError>([&] { interpret(all, {C}); });
  EXPECT_NE(err.find("run the function on the grid interpreter"), std::string::npos) << err;
}

TEST(CudaTensorCore, MisusedFragmentsAndTilingsAreErrorsNamingThem) {
  const DataType f16 = DataType::Float(16), f32 = DataType::Float(32);
  Buffer shared = make_buffer("tile", f16, {Expr(8)}, scope::kShared);
  Buffer b = make_buffer("b", f16, {Expr(4)}, scope::kLocal), c = make_buffer("c", f32, {Expr(4)}, scope::kLocal);
  std::string err = test::error_text<LoweringError>([&] {
    mma_m16n8k16(make_address_of(load(f16, shared, 0)), make_address_of(load(f16, b, 0)),
                 make_address_of(load(f32, c, 0)));
  });
  EXPECT_NE(err.find("the A fragment must be the address of an element of a local float16 buffer"), std::string::npos)
      << err;
  Buffer global = make_buffer("g", f16, {Expr(64)});
  err = test::error_text<LoweringError>(
      [&] { ldmatrix_x4(make_address_of(load(f16, b, 0)), make_address_of(load(f16, global, 0)), false); });
  EXPECT_NE(err.find("gpu.ldmatrix_x4: expects the address of a local float16 fragment, the address of a shared"),
            std::string::npos)
      << err;
  err = test::error_text<LoweringError>(
      [&] { cp_async16(make_address_of(load(f16, global, 0)), make_address_of(load(f16, global, 8))); });
  EXPECT_NE(err.find("gpu.cp_async16: expects the address of a shared element and of a global one"), std::string::npos)
      << err;
  // A fragment past its buffer's end.
  LoweredFunc past = single_mma([&](const Var&, Stmt) {
    return mma_m16n8k16(make_address_of(load(f16, b, 0)), make_address_of(load(f16, b, 0)),
                        make_address_of(load(f32, c, 0)));
  });
  err = test::error_text<LoweringError>([&] { split_gpu_kernels(past); });
  EXPECT_NE(err.find("the fragment of 8 elements at 'b[0]' is outside its 4 elements"), std::string::npos) << err;
  // A block of 16 threads has no whole warp.
  LoweredFunc half_warp = single_mma([](const Var&, Stmt mma) { return mma; }, 16);
  err = test::error_text<LoweringError>([&] { split_gpu_kernels(half_warp); });
  EXPECT_NE(err.find("a block of 16 threads runs warp instructions (mma, ldmatrix)"), std::string::npos) << err;
  EXPECT_NO_THROW(split_gpu_kernels(single_mma([](const Var&, Stmt mma) { return mma; })));

  err = test::error_text<ScheduleError>([] { ops::gemm_f16_tensor_core_cuda(100, 128, 128); });
  EXPECT_NE(err.find("block_m (128) must divide M (100)"), std::string::npos) << err;
  ops::CudaMmaTiling t;
  t.warp_m = 24, t.block_m = 48;
  err = test::error_text<ScheduleError>([&] { ops::gemm_f16_tensor_core_cuda(96, 128, 128, t); });
  EXPECT_NE(err.find("warp_m (24) a multiple of 16"), std::string::npos) << err;
  t = {};
  t.warp_n = 8;  // ldmatrix takes B two 8-column tiles at a time
  err = test::error_text<ScheduleError>([&] { ops::gemm_f16_tensor_core_cuda(128, 128, 128, t); });
  EXPECT_NE(err.find("warp_n (8) of 16 with ldmatrix"), std::string::npos) << err;
  t = {};
  t.stages = 3, t.block_k = 64;
  err = test::error_text<ScheduleError>([&] { ops::gemm_f16_tensor_core_cuda(128, 128, 128, t); });
  EXPECT_NE(err.find("3 stages need 107520 bytes of shared memory (more than 48 KiB)"), std::string::npos) << err;
  t = {};
  t.block_k = 16;  // 128 x 16 / 8 = 256 pieces of A for 256 threads, but 16 x 128 / 8 = 256 of B: fine
  t.block_n = 64;  // 8 warps -> 4 warps: 128 threads, B 128 pieces: even
  EXPECT_NO_THROW(ops::gemm_f16_tensor_core_cuda(128, 128, 128, t));
  t.warp_n = 8, t.ldmatrix = false;  // 2 x 8 warps = 512 threads; B's 128 pieces do not share over them
  err = test::error_text<ScheduleError>([&] { ops::gemm_f16_tensor_core_cuda(128, 128, 128, t); });
  EXPECT_NE(err.find("threads must share the copies"), std::string::npos) << err;
}

}  // namespace
}  // namespace loom
