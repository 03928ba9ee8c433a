// int8 GEMM on the CPU (ops/gemm_int8.h): exact int32 results against plain C++ loops for uint8
// and int8 A over extreme values (products that saturate an int16 pair sum, as vpmaddubsw
// would), odd shapes with partial register tiles and panels and odd K, in both forms (the byte
// form with weights it is exact for, or any weights on VNNI hosts); the tensorized dot products
// become pmaddwd / vpmaddubsw (AVX2, AVX-512BW), vpdpwssd / vpdpbusd with VNNI, and widening
// multiplies on AArch64, whatever the host (assembly checks); bad operands are clear errors.
#include <gtest/gtest.h>

#include <random>
#include <tuple>

#include "common/error_text.h"
#include "common/test_util.h"
#include "loom/codegen/llvm.h"
#include "loom/ops/gemm_int8.h"
#include "loom/runtime/error.h"
#include "loom/schedule/lower.h"

namespace loom {
namespace {

using namespace loom::ir;

struct Built {
  Tensor A, B, C;
  LoweredFunc f;
};

using ops::Int8GemmForm;

Built build(int64_t M, int64_t N, int64_t K, DataType a_type, const ops::Int8GemmTiling& t) {
  Built b;
  b.A = placeholder({Expr(int(M)), Expr(int(K))}, a_type, "A");
  b.B = placeholder({Expr(int(K)), Expr(int(N))}, DataType::Int(8), "B");
  b.C = ops::gemm_int8(b.A, b.B, t);
  schedule::Schedule s({b.C});
  ops::schedule_gemm_int8_cpu(s, b.C, t);
  b.f = schedule::lower(s, {b.A, b.B, b.C}, "gemm_int8");
  return b;
}

// Fills with values drawn from [lo, hi], the extremes twice as often as the rest.
void fill(NDArray& a, int lo, int hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> d(lo - (hi - lo) / 4, hi + (hi - lo) / 4);
  for (int64_t i = 0; i < a.numel(); ++i) a.set_from_double(i, std::clamp(d(rng), lo, hi));
}

// B from [-b_max - 1, b_max] (full range: 127; 7-bit weights for the byte form without VNNI: 63).
void check_product(int64_t M, int64_t N, int64_t K, DataType a_type, const codegen::TargetInfo& target,
                   Int8GemmForm form = Int8GemmForm::Pairs16, int b_max = 127) {
  SCOPED_TRACE(std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " " + a_type.str() + " " +
               ops::to_string(form));
  ops::Int8GemmTiling t =
      ops::int8_gemm_tiling_for(target.vector_bits / 32, target.vector_registers, M, N, form, target.int8_dot);
  Built b = build(M, N, K, a_type, t);
  runtime::Module m = codegen::build_llvm({b.f});
  NDArray A = NDArray::empty({M, K}, a_type), B = NDArray::empty({K, N}, DataType::Int(8)),
          C = NDArray::empty({M, N}, DataType::Int(32));
  fill(A, a_type.is_uint() ? 0 : -128, a_type.is_uint() ? 255 : 127, 7 + uint64_t(M));
  fill(B, -b_max - 1, b_max, 11 + uint64_t(N));
  if (form == Int8GemmForm::Bytes4 && !target.int8_dot) ASSERT_TRUE(ops::int8_weights_fit_bytes4(B));
  m.call("gemm_int8", {A, B, C});
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      int64_t want = 0;
      for (int64_t k = 0; k < K; ++k) want += int64_t(A.get_as_double(i * K + k)) * int64_t(B.get_as_double(k * N + j));
      ASSERT_EQ(int64_t(C.get_as_double(i * N + j)), want) << "C[" << i << ", " << j << "]";
    }
}

TEST(GemmInt8, ExactOnTheHostForEveryShape) {
  codegen::TargetInfo host = codegen::target_info();
  for (DataType a : {DataType::UInt(8), DataType::Int(8)}) {
    check_product(64, 48, 64, a, host);    // whole tiles
    check_product(17, 31, 13, a, host);    // partial row tile, partial panel, odd K
    check_product(1, 1000, 512, a, host);  // one row
    check_product(100, 1, 33, a, host);    // one column
    check_product(3, 5, 1, a, host);       // K = 1
  }
  // The byte form: uint8 A; full-range weights where the host accumulates bytes exactly (VNNI),
  // else the weights it is exact for.
  const int b_max = host.int8_dot ? 127 : 63;
  for (auto [M, N, K] :
       {std::tuple<int64_t, int64_t, int64_t>{64, 48, 64}, {17, 31, 13}, {1, 1000, 512}, {100, 1, 34}, {3, 5, 1}})
    check_product(M, N, K, DataType::UInt(8), host, Int8GemmForm::Bytes4, b_max);
  // Few rows: no packing.
  for (DataType a : {DataType::UInt(8), DataType::Int(8)})
    for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{1, 1000, 512}, {4, 37, 19}, {3, 5, 1}, {2, 1, 64}})
      check_product(M, N, K, a, host, Int8GemmForm::Direct);
}

TEST(GemmInt8, ByteFormWeightCheck) {
  NDArray B = NDArray::empty({3, 2}, DataType::Int(8));
  int8_t ok[] = {-64, 63, -64, 65, 127, -128};  // column pairs: (-64, -64) and (63, 65); row 2 pairs with nothing
  std::copy(ok, ok + 6, B.data<int8_t>());
  EXPECT_TRUE(ops::int8_weights_fit_bytes4(B));
  B.data<int8_t>()[3] = 66;  // |63| + |66| = 129: vpmaddubsw could saturate
  EXPECT_FALSE(ops::int8_weights_fit_bytes4(B));
}

TEST(GemmInt8, ExtremeValuesDoNotSaturate) {
  // 255 x -128 + 255 x -128 = -65280 does not fit int16 (vpmaddubsw would give -32768): every
  // product of the worst pair, summed over K, must come out exactly.
  ops::Int8GemmTiling t = ops::int8_gemm_tiling_for(codegen::target_info().vector_bits / 32,
                                                    codegen::target_info().vector_registers, 8, 24);
  Built b = build(8, 24, 64, DataType::UInt(8), t);
  runtime::Module m = codegen::build_llvm({b.f});
  NDArray A = NDArray::empty({8, 64}, DataType::UInt(8)), B = NDArray::empty({64, 24}, DataType::Int(8)),
          C = NDArray::empty({8, 24}, DataType::Int(32));
  for (int64_t i = 0; i < A.numel(); ++i) A.set_from_double(i, 255);
  for (int64_t i = 0; i < B.numel(); ++i) B.set_from_double(i, -128);
  m.call("gemm_int8", {A, B, C});
  for (int64_t i = 0; i < C.numel(); ++i) ASSERT_EQ(C.get_as_double(i), 255.0 * -128 * 64) << i;
}

std::string assembly_for(const char* triple, const char* cpu, const char* features, int lanes, int registers,
                         Int8GemmForm form = Int8GemmForm::Pairs16) {
  codegen::LLVMOptions o;
  if (triple) o.target_triple = triple;
  o.target_cpu = cpu;
  o.target_features = features;
  Built b = build(64, 96, 128, DataType::UInt(8), ops::int8_gemm_tiling_for(lanes, registers, 64, 96, form));
  return codegen::emit_assembly({b.f}, o);
}

TEST(GemmInt8, DotProductsCrossCompileForEveryTarget) {
  std::string avx2 = assembly_for(nullptr, "x86-64-v3", "", 8, 16);
  EXPECT_NE(avx2.find("vpmaddwd\t%ymm"), std::string::npos) << "AVX2: pmaddwd on ymm";
  EXPECT_EQ(avx2.find("zmm"), std::string::npos);
  std::string avx512 = assembly_for(nullptr, "x86-64-v4", "", 16, 32);
  EXPECT_NE(avx512.find("vpmaddwd\t%zmm"), std::string::npos) << "AVX-512BW: pmaddwd on zmm";
  std::string vnni = assembly_for(nullptr, "x86-64-v4", "+avx512vnni", 16, 32);
  // VNNI: multiply, pairwise add and accumulate in one (LLVM splits a few back into pmaddwd + add).
  EXPECT_NE(vnni.find("vpdpwssd\t%zmm"), std::string::npos);
  EXPECT_GT(test::count_occurrences(vnni, "vpdpwssd"), test::count_occurrences(vnni, "vpmaddwd"));
  std::string neon = assembly_for("aarch64-linux-gnu", "neoverse-n1", "", 4, 32);
  EXPECT_NE(neon.find("smull"), std::string::npos) << "AArch64: widening multiplies";
  EXPECT_EQ(neon.find("ldrsh"), std::string::npos) << "no scalar loads of the pairs";
  // The byte form: vpmaddubsw + pmaddwd without VNNI, vpdpbusd with it.
  std::string bytes = assembly_for(nullptr, "x86-64-v3", "", 8, 16, Int8GemmForm::Bytes4);
  EXPECT_NE(bytes.find("vpmaddubsw\t%ymm"), std::string::npos);
  EXPECT_NE(bytes.find("vpmaddwd\t%ymm"), std::string::npos);
  std::string bytes512 = assembly_for(nullptr, "x86-64-v4", "", 16, 32, Int8GemmForm::Bytes4);
  EXPECT_NE(bytes512.find("vpmaddubsw\t%zmm"), std::string::npos);
  std::string bytes_vnni = assembly_for(nullptr, "x86-64-v4", "+avx512vnni", 16, 32, Int8GemmForm::Bytes4);
  EXPECT_NE(bytes_vnni.find("vpdpbusd\t%zmm"), std::string::npos);
  EXPECT_EQ(bytes_vnni.find("vpmaddubsw"), std::string::npos);
  std::string avxvnni = assembly_for(nullptr, "alderlake", "", 8, 16, Int8GemmForm::Bytes4);
  EXPECT_NE(avxvnni.find("vpdpbusd"), std::string::npos) << "AVX-VNNI (VEX) on 256 bits";
  std::string bytes_neon = assembly_for("aarch64-linux-gnu", "neoverse-n1", "", 4, 32, Int8GemmForm::Bytes4);
  EXPECT_EQ(bytes_neon.find("ymm"), std::string::npos);
  EXPECT_NE(bytes_neon.find("mul"), std::string::npos);
  EXPECT_EQ(neon.find("ymm"), std::string::npos);
}

TEST(GemmInt8, BadOperandsAreClearErrors) {
  ops::Int8GemmTiling t;
  Tensor f = placeholder({4, 4}, DataType::Float(32), "F"), a = placeholder({4, 4}, DataType::Int(8), "A"),
         b = placeholder({5, 4}, DataType::Int(8), "B");
  EXPECT_NE(test::error_text<TypeError>([&] {
              ops::gemm_int8(f, a, t);
            }).find("A must be int8 or uint8 and B int8, got float32"),
            std::string::npos);
  EXPECT_NE(test::error_text<ShapeError>([&] { ops::gemm_int8(a, b, t); }).find("A is 4 x 4 but B has 5 rows"),
            std::string::npos);
  Tensor C = ops::gemm_int8(a, a, t);
  schedule::Schedule s({C});
  ops::Int8GemmTiling other = t;
  other.nv = 3;
  EXPECT_NE(
      test::error_text<ScheduleError>([&] { ops::schedule_gemm_int8_cpu(s, C, other); }).find("panels of 16 columns"),
      std::string::npos);
  ops::Int8GemmTiling bytes = t;
  bytes.form = Int8GemmForm::Bytes4;
  EXPECT_NE(
      test::error_text<TypeError>([&] { ops::gemm_int8(a, a, bytes); }).find("the byte-group form multiplies uint8 A"),
      std::string::npos);
  EXPECT_NE(
      test::error_text<ScheduleError>([&] { ops::schedule_gemm_int8_cpu(s, C, bytes); }).find("packed in groups of 2"),
      std::string::npos);
  ops::Int8GemmTiling direct = t;
  direct.form = Int8GemmForm::Direct;
  EXPECT_NE(test::error_text<ScheduleError>([&] {
              ops::schedule_gemm_int8_cpu(s, C, direct);
            }).find("was not built in the tiling's form (direct)"),
            std::string::npos);
}

}  // namespace
}  // namespace loom
