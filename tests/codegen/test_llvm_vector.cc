// Vector code from Ramp/Broadcast expressions: contiguous, strided and broadcast loads, scatters,
// vector arithmetic, and the use of 512-bit registers on AVX-512 hosts.
#include <fstream>

#include "codegen_test_util.h"
#include "common/temp_dir.h"
#include "loom/ir/expr.h"

namespace loom::test {
namespace {

using namespace loom::ir;

// C[i*L : i*L+L] = A[...] + B[...] for n/L vector iterations.
LoweredFunc ramp_add(DataType t, int n, int lanes) {
  Buffer A = arg("A", t, {n}), B = arg("B", t, {n}), C = arg("C", t, {n});
  Var i("i");
  Expr idx = ramp(i * lanes, 1, lanes);
  DataType vt = t.with_lanes(lanes);
  Stmt body = for_loop(i, 0, n / lanes, ForKind::Serial, store(C, load(vt, A, idx) + load(vt, B, idx), idx));
  return {"ramp_add_" + t.str(), {A, B, C}, body};
}

TEST(LLVMVector, ContiguousRampInEveryType) {
  for (DataType t : {DataType::Int(8), DataType::Int(16), DataType::Int(32), DataType::Float(16), DataType::Float(32)})
    EXPECT_TRUE(matches_interpreter(ramp_add(t, 256, 16), 4, -100, 100)) << t.str();
  EXPECT_TRUE(matches_interpreter(ramp_add(DataType::Int(8), 256, 64), 4, -100, 100));
  EXPECT_TRUE(matches_interpreter(ramp_add(DataType::Float(64), 256, 8)));
}

TEST(LLVMVector, StridedBroadcastAndScatter) {
  const int n = 16;
  DataType f32 = DataType::Float(32), v8 = DataType::Float(32, 8);
  Buffer A = arg("A", f32, {n * 16}), G = arg("G", f32, {n * 8}), T = arg("T", f32, {8, n});
  Var i("i");
  Expr strided = load(v8, A, ramp(i * 16 + 1, 2, 8));  // gather: every other element
  Expr bcast = load(v8, A, broadcast(i, 8));           // one element to all lanes
  Expr scalar_bc = broadcast(load(f32, A, i + 3), 8);  // scalar load, then broadcast
  Stmt body = seq({store(G, strided * bcast + scalar_bc, ramp(i * 8, 1, 8)),
                   store(T, load(v8, A, ramp(i * 8, 1, 8)), ramp(i, n, 8))});  // scatter: transposed
  EXPECT_TRUE(matches_interpreter({"strided", {A, G, T}, for_loop(i, 0, n, ForKind::Serial, body)}));
}

TEST(LLVMVector, VectorArithmeticSelectAndFloorDiv) {
  const int n = 128;
  DataType i32 = DataType::Int(32), v16 = DataType::Int(32, 16), f32 = DataType::Float(32),
           fv16 = DataType::Float(32, 16);
  Buffer A = arg("A", i32, {n}), F = arg("F", f32, {n}), Q = arg("Q", i32, {n}), R = arg("R", f32, {n});
  Var i("i");
  Expr idx = ramp(i * 16, 1, 16);
  Expr a = load(v16, A, idx);
  Expr q = a / broadcast(Expr(5), 16) + a % broadcast(Expr(8), 16) + max(a, broadcast(Expr(-3), 16));
  Expr f = load(fv16, F, idx);
  Expr r = select(f > broadcast(Expr(0.0f), 16), exp(f), f * broadcast(Expr(0.5f), 16)) + cast(fv16, a);
  Stmt body = seq({store(Q, q, idx), store(R, r, idx)});
  EXPECT_TRUE(
      matches_interpreter({"vec_math", {A, F, Q, R}, for_loop(i, 0, n / 16, ForKind::Serial, body)}, 8, -40, 40));
}

TEST(LLVMVector, UsesZmmRegistersOnAvx512Hosts) {
  if (codegen::host_target_description().find("vector width 512") == std::string::npos)
    GTEST_SKIP() << "host has no AVX-512: " << codegen::host_target_description();
  std::string assembly = codegen::emit_assembly({ramp_add(DataType::Float(32), 1024, 16)});
  EXPECT_NE(assembly.find("zmm"), std::string::npos) << assembly;
  // The loop vectorizer should also pick 512-bit vectors for a scalar loop.
  Buffer A = arg("A", DataType::Float(32), {4096}), B = arg("B", DataType::Float(32), {4096});
  Var i("i");
  LoweredFunc scale{
      "scale", {A, B}, for_loop(i, 0, 4096, ForKind::Serial, store(B, load(DataType::Float(32), A, i) * 3.0f, i))};
  EXPECT_NE(codegen::emit_assembly({scale}).find("zmm"), std::string::npos);
}

TEST(LLVMVector, DumpsIRAndAssembly) {
  codegen::LLVMOptions opts;
  test::TestDir dir;
  opts.dump_ir_path = dir.file("loom_ramp_add.ll");
  opts.dump_asm_path = dir.file("loom_ramp_add.s");
  codegen::build_llvm({ramp_add(DataType::Float(32), 64, 16)}, opts);
  std::ifstream ir_file(opts.dump_ir_path), asm_file(opts.dump_asm_path);
  std::string ir_text((std::istreambuf_iterator<char>(ir_file)), std::istreambuf_iterator<char>());
  std::string asm_text((std::istreambuf_iterator<char>(asm_file)), std::istreambuf_iterator<char>());
  EXPECT_NE(ir_text.find("i32 @ramp_add_float32(ptr"), std::string::npos) << ir_text;
  EXPECT_NE(asm_text.find("ramp_add_float32:"), std::string::npos) << asm_text;
}

TEST(LLVMVector, TargetCpuOverride) {
  codegen::LLVMOptions opts;
  opts.target_cpu = "x86-64";  // baseline SSE2 only
  EXPECT_TRUE(matches_interpreter(ramp_add(DataType::Float(32), 256, 16), 1, -10, 10, opts));
  std::string assembly = codegen::emit_assembly({ramp_add(DataType::Float(32), 256, 16)}, opts);
  EXPECT_EQ(assembly.find("ymm"), std::string::npos);
  EXPECT_EQ(assembly.find("zmm"), std::string::npos);
}

}  // namespace
}  // namespace loom::test

namespace loom {
namespace {

// `f` of each element of `x`, by 16-lane vector code (x.size() a multiple of 16); `ir` gets the
// module's LLVM IR.
std::vector<float> vector_math(ir::Expr (*f)(ir::Expr), const std::vector<float>& x, std::string& ir) {
  using namespace loom::ir;
  const int n = static_cast<int>(x.size());
  DataType f32 = DataType::Float(32);
  Buffer A = make_buffer("A", f32, {Expr(n)}), B = make_buffer("B", f32, {Expr(n)});
  Var i("i");
  Stmt body = for_loop(i, 0, n / 16, ForKind::Serial,
                       store(B, f(load(DataType::Float(32, 16), A, ramp(i * 16, 1, 16))), ramp(i * 16, 1, 16)));
  ir = codegen::emit_llvm_ir({LoweredFunc{"vmath", {A, B}, body}});
  runtime::Module m = codegen::build_llvm({LoweredFunc{"vmath", {A, B}, body}});
  NDArray a = NDArray::empty({n}, f32), b = NDArray::zeros({n}, f32);
  std::copy(x.begin(), x.end(), a.data<float>());
  m.call("vmath", {a, b});
  return std::vector<float>(b.data<float>(), b.data<float>() + n);
}

// Vector exp is computed inline (not per-lane libm): check its accuracy against std::exp over the
// whole float range, and its special values.
TEST(LlvmVector, InlineVectorExpAccuracy) {
  const int n = 4096;
  std::vector<float> x(n);
  for (int k = 0; k < n - 8; ++k) x[k] = -87.0f + 175.0f * float(k) / float(n - 9);
  float specials[8] = {0.0f, -0.0f, 1e-30f, 100.0f, -100.0f, INFINITY, -INFINITY, NAN};
  for (int k = 0; k < 8; ++k) x[n - 8 + k] = specials[k];
  std::string ir;
  std::vector<float> y = vector_math(ir::exp, x, ir);
  EXPECT_EQ(ir.find("@expf"), std::string::npos);
  double worst = 0;
  for (int k = 0; k < n - 8; ++k)
    worst = std::max(worst, std::fabs(double(y[k]) - std::exp(double(x[k]))) / std::exp(double(x[k])));
  EXPECT_LT(worst, 4e-7) << "max relative error";
  EXPECT_EQ(y[n - 8], 1.0f);
  EXPECT_EQ(y[n - 7], 1.0f);
  EXPECT_EQ(y[n - 6], 1.0f);
  EXPECT_TRUE(std::isinf(y[n - 5]) && y[n - 5] > 0);
  EXPECT_EQ(y[n - 4], 0.0f);
  EXPECT_TRUE(std::isinf(y[n - 3]));
  EXPECT_EQ(y[n - 2], 0.0f);
  EXPECT_TRUE(std::isnan(y[n - 1]));
}

// Vector tanh likewise: relative error against std::tanh from denormals to saturation, both
// sides of the switch at |x| = 0.5, and its special values.
TEST(LlvmVector, InlineVectorTanhAccuracy) {
  std::vector<float> x;
  for (int k = 0; k < 4000; ++k) x.push_back(-12.0f + 24.0f * float(k) / 3999.0f);
  for (float v = 1e-30f; v < 2.0f; v *= 1.01f) x.push_back(v), x.push_back(-v);
  for (float v : {0.5f, -0.5f, std::nextafter(0.5f, 0.0f), std::nextafter(-0.5f, 0.0f), 9.0f, 20.0f}) x.push_back(v);
  while ((x.size() + 8) % 16) x.push_back(0.25f);
  const size_t finite = x.size();
  for (float v : {0.0f, -0.0f, 100.0f, -100.0f, INFINITY, -INFINITY, NAN, 1e-40f}) x.push_back(v);
  std::string ir;
  std::vector<float> y = vector_math(ir::tanh, x, ir);
  EXPECT_EQ(ir.find("@tanhf"), std::string::npos);
  EXPECT_EQ(ir.find("llvm.tanh"), std::string::npos);
  double worst = 0;
  float at = 0;
  for (size_t k = 0; k < finite; ++k) {
    double want = std::tanh(double(x[k]));
    double err = std::fabs(double(y[k]) - want) / std::fabs(want);
    if (err > worst) worst = err, at = x[k];
  }
  EXPECT_LT(worst, 3e-7) << "max relative error, at x = " << at;
  size_t s = finite;
  EXPECT_TRUE(y[s] == 0.0f && !std::signbit(y[s]));
  EXPECT_TRUE(y[s + 1] == 0.0f && std::signbit(y[s + 1]));
  EXPECT_EQ(y[s + 2], 1.0f);
  EXPECT_EQ(y[s + 3], -1.0f);
  EXPECT_EQ(y[s + 4], 1.0f);
  EXPECT_EQ(y[s + 5], -1.0f);
  EXPECT_TRUE(std::isnan(y[s + 6]));
  EXPECT_LE(std::fabs(y[s + 7]), 2e-40f);
}

}  // namespace
}  // namespace loom
