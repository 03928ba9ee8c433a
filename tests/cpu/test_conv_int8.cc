// int8 convolutions on the CPU in the grouped forms (ops/layers.h: conv2d_nchwc with weights
// packed by pack_conv_weights_int8_groups, scheduled by schedule_conv2d_nchwc_cpu onto the CPU's
// dot products): exact int32 results against plain C++ loops on OIHW weights, int16 pairs with
// full-range operands (-128 x -128), byte groups with inputs in [0, 127] and full-range weights
// (127 x -128 pairs, which vpmaddubsw must not saturate), padding, strides, dilation, partial
// register tiles and blocks of half the vector; the dot products become pmaddwd / vpdpwssd /
// vpmaddubsw / vpdpbusd / AArch64 widening multiplies whatever the host (assembly checks); bad
// weights are clear errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "common/error_text.h"
#include "loom/codegen/llvm.h"
#include "loom/ops/cpu_schedules.h"
#include "loom/ops/layers.h"
#include "loom/runtime/error.h"
#include "loom/schedule/lower.h"

namespace loom {
namespace {

using namespace loom::ir;

struct ConvCase {
  int64_t n, c, h, w, o, kh, kw, ib, ob;
  ops::Conv2dParams p;
  int group = 2;
};

struct BuiltConv {
  Tensor X, W, bias, out;
  LoweredFunc f;
};

BuiltConv build(const ConvCase& k, int lanes, int registers) {
  BuiltConv b;
  b.X = placeholder({Expr(int(k.n)), Expr(int(k.c / k.ib)), Expr(int(k.h)), Expr(int(k.w)), Expr(int(k.ib))},
                    DataType::Int(8), "X");
  b.W = placeholder({Expr(int(k.o / k.ob)), Expr(int(k.c / k.ib)), Expr(int(k.kh)), Expr(int(k.kw)),
                     Expr(int(k.ib / k.group)), Expr(int(k.ob)), Expr(k.group)},
                    k.group == 2 ? DataType::Int(16) : DataType::Int(8), "W");
  b.bias = placeholder({Expr(int(k.o))}, DataType::Int(32), "bias");
  ops::Conv2dParams p = k.p;
  p.oc_block = k.ob;
  b.out = ops::conv2d_nchwc(b.X, b.W, b.bias, p, "conv");
  schedule::Schedule s({b.out});
  ops::schedule_conv2d_nchwc_cpu(s, b.out.op()->input_tensors()[0], b.out, lanes, registers);
  b.f = schedule::lower(s, {b.X, b.W, b.bias, b.out}, "conv_int8");
  return b;
}

// Values from [lo, 127], the extremes twice as often as the rest.
void fill(NDArray& a, int lo, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int quarter = (127 - lo) / 4;
  std::uniform_int_distribution<int> d(lo - quarter, 127 + quarter);
  for (int64_t i = 0; i < a.numel(); ++i) a.set_from_double(i, std::clamp(d(rng), lo, 127));
}

void check_conv(const ConvCase& k) {
  SCOPED_TRACE("groups of " + std::to_string(k.group) + ", C " + std::to_string(k.c) + " -> O " + std::to_string(k.o) +
               ", " + std::to_string(k.kh) + "x" + std::to_string(k.kw) + ", stride " + std::to_string(k.p.strides[0]) +
               ", blocks " + std::to_string(k.ib) + "/" + std::to_string(k.ob));
  codegen::TargetInfo host = codegen::target_info();
  BuiltConv b = build(k, host.vector_bits / 32, host.vector_registers);
  runtime::Module m = codegen::build_llvm({b.f});
  NDArray x = NDArray::empty({k.n, k.c, k.h, k.w}, DataType::Int(8)),
          w = NDArray::empty({k.o, k.c, k.kh, k.kw}, DataType::Int(8));
  // Byte groups read the input as uint8: it must be in [0, 127].
  const int x_min = k.group == 4 ? 0 : -128;
  fill(x, x_min, 3 + uint64_t(k.c));
  fill(w, -128, 5 + uint64_t(k.o));
  // The worst groups: input channels 0-3 at their extreme everywhere (-128, or 127 for byte
  // groups) against -128 weights of output channel 0, so every pair the instructions sum is
  // -128 x -128 x 2 (pmaddwd) or 127 x -128 x 2 (vpmaddubsw, the most it sums without saturating).
  for (int64_t c = 0; c < std::min<int64_t>(4, k.c); ++c) {
    for (int64_t nn = 0; nn < k.n; ++nn)
      for (int64_t p = 0; p < k.h * k.w; ++p)
        x.set_from_double((nn * k.c + c) * k.h * k.w + p, k.group == 4 ? 127 : -128);
    for (int64_t t = 0; t < k.kh * k.kw; ++t) w.set_from_double(c * k.kh * k.kw + t, -128);
  }
  NDArray xb = NDArray::empty({k.n, k.c / k.ib, k.h, k.w, k.ib}, DataType::Int(8)),
          bias = NDArray::empty({k.o}, DataType::Int(32));
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t xx = i % k.w, y = i / k.w % k.h, c = i / (k.w * k.h) % k.c, nn = i / (k.w * k.h * k.c);
    xb.set_from_double((((nn * (k.c / k.ib) + c / k.ib) * k.h + y) * k.w + xx) * k.ib + c % k.ib, x.get_as_double(i));
  }
  for (int64_t o = 0; o < k.o; ++o) bias.set_from_double(o, double(o * 1000 - 7777));
  ops::Shape os = ops::conv2d_nchwc_shape(xb.shape(), {k.o / k.ob, k.c / k.ib, k.kh, k.kw, k.ib / 2, k.ob, 2}, [&] {
    ops::Conv2dParams p = k.p;
    p.oc_block = k.ob;
    return p;
  }());
  NDArray out = NDArray::empty(os, DataType::Int(32));
  m.call("conv_int8", {xb, ops::pack_conv_weights_int8_groups(w, k.ib, k.ob, k.group), bias, out});
  const auto& p = k.p;
  for (int64_t nn = 0; nn < os[0]; ++nn)
    for (int64_t o = 0; o < k.o; ++o)
      for (int64_t oy = 0; oy < os[2]; ++oy)
        for (int64_t ox = 0; ox < os[3]; ++ox) {
          int64_t want = o * 1000 - 7777;
          for (int64_t c = 0; c < k.c; ++c)
            for (int64_t ky = 0; ky < k.kh; ++ky)
              for (int64_t kx = 0; kx < k.kw; ++kx) {
                int64_t iy = oy * p.strides[0] + ky * p.dilations[0] - p.pads[0],
                        ix = ox * p.strides[1] + kx * p.dilations[1] - p.pads[1];
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                want += int64_t(x.get_as_double(((nn * k.c + c) * k.h + iy) * k.w + ix)) *
                        int64_t(w.get_as_double(((o * k.c + c) * k.kh + ky) * k.kw + kx));
              }
          int64_t got = int64_t(
              out.get_as_double((((nn * (k.o / k.ob) + o / k.ob) * os[2] + oy) * os[3] + ox) * k.ob + o % k.ob));
          ASSERT_EQ(got, want) << "out[" << nn << ", " << o << ", " << oy << ", " << ox << "]";
        }
}

ops::Conv2dParams params(int64_t stride, std::array<int64_t, 4> pads, int64_t dilation = 1) {
  ops::Conv2dParams p;
  p.strides = {stride, stride};
  p.pads = pads;
  p.dilations = {dilation, dilation};
  return p;
}

TEST(ConvInt8, GroupedFormsExactOnTheHost) {
  const int64_t L = codegen::target_info().vector_bits / 32;  // output block = int32 lanes
  for (int G : {2, 4}) {
    check_conv({1, 16, 13, 13, 2 * L, 3, 3, 8, L, params(1, {1, 1, 1, 1}), G});   // ResNet-like 3x3, odd width
    check_conv({1, 32, 14, 14, 2 * L, 1, 1, 16, L, params(2, {0, 0, 0, 0}), G});  // strided 1x1
    check_conv({2, 8, 9, 15, 3 * L, 3, 3, 8, L, params(2, {1, 1, 1, 1}), G});     // batch 2, strided 3x3
    check_conv({1, 8, 1, 1, L, 1, 1, 8, L, params(1, {0, 0, 0, 0}), G});          // one pixel
  }
  check_conv(
      {1, 6, 10, 11, L, 5, 3, 2, L / 2, params(1, {1, 2, 0, 1}, 2), 2});  // blocks of 2 and L/2, uneven pads, dilation
  check_conv({1, 12, 10, 11, L, 5, 3, 4, L / 2, params(1, {1, 2, 0, 1}, 2), 4});  // the same in byte groups
}

std::string conv_assembly(const char* triple, const char* cpu, const char* features, int lanes, int registers,
                          int group = 2) {
  codegen::LLVMOptions o;
  if (triple) o.target_triple = triple;
  o.target_cpu = cpu;
  o.target_features = features;
  BuiltConv b = build({1, 64, 28, 28, 4 * lanes, 3, 3, 16, lanes, params(1, {1, 1, 1, 1}), group}, lanes, registers);
  return codegen::emit_assembly({b.f}, o);
}

TEST(ConvInt8, DotProductsOnEveryTarget) {
  std::string avx2 = conv_assembly(nullptr, "x86-64-v3", "", 8, 16);
  EXPECT_NE(avx2.find("vpmaddwd\t%ymm"), std::string::npos) << "AVX2: pmaddwd on ymm";
  EXPECT_EQ(avx2.find("vpmulld"), std::string::npos) << "no widened 32-bit multiplies";
  EXPECT_EQ(avx2.find("zmm"), std::string::npos);
  std::string avx512 = conv_assembly(nullptr, "x86-64-v4", "", 16, 32);
  EXPECT_NE(avx512.find("vpmaddwd\t%zmm"), std::string::npos) << "AVX-512BW: pmaddwd on zmm";
  std::string vnni = conv_assembly(nullptr, "x86-64-v4", "+avx512vnni", 16, 32);
  EXPECT_NE(vnni.find("vpdpwssd\t%zmm"), std::string::npos) << "VNNI: multiply, add pairs and accumulate in one";
  std::string neon = conv_assembly("aarch64-linux-gnu", "neoverse-n1", "", 4, 32);
  EXPECT_NE(neon.find("smull"), std::string::npos) << "AArch64: widening multiplies";
  EXPECT_EQ(neon.find("ymm"), std::string::npos);
  // Byte groups: vpmaddubsw + pmaddwd by ones without VNNI, vpdpbusd with it.
  std::string bytes = conv_assembly(nullptr, "x86-64-v3", "", 8, 16, 4);
  EXPECT_NE(bytes.find("vpmaddubsw\t%ymm"), std::string::npos);
  EXPECT_EQ(bytes.find("vpmulld"), std::string::npos);
  std::string bytes_vnni = conv_assembly(nullptr, "x86-64-v4", "+avx512vnni", 16, 32, 4);
  EXPECT_NE(bytes_vnni.find("vpdpbusd\t%zmm"), std::string::npos);
  EXPECT_EQ(bytes_vnni.find("vpmaddubsw"), std::string::npos);
  std::string bytes_neon = conv_assembly("aarch64-linux-gnu", "neoverse-n1", "", 4, 32, 4);
  // Vector instructions only: a scalar smull also computes addresses.
  const bool widened_products =
      bytes_neon.find("sshll\tv") != std::string::npos && bytes_neon.find("mul\tv") != std::string::npos;
  EXPECT_TRUE(widened_products || bytes_neon.find("smull\tv") != std::string::npos ||
              bytes_neon.find("smlal\tv") != std::string::npos || bytes_neon.find("sdot\tv") != std::string::npos)
      << "AArch64: vector multiplies of the widened byte groups (or widening ones, or dot products)";
  EXPECT_EQ(bytes_neon.find("ymm"), std::string::npos);
}

TEST(ConvInt8, BadGroupedWeightsAreClearErrors) {
  NDArray w = NDArray::empty({16, 6, 3, 3}, DataType::Int(8));
  EXPECT_NE(test::error_text<ShapeError>([&] {
              ops::pack_conv_weights_int8_groups(w, 3, 8, 2);
            }).find("groups of 2 (2 or 4) must divide the input block 3"),
            std::string::npos);
  EXPECT_NE(test::error_text<ShapeError>([&] {
              ops::pack_conv_weights_int8_groups(w, 6, 8, 3);
            }).find("groups of 3 (2 or 4)"),
            std::string::npos);
  NDArray f = NDArray::empty({16, 6, 3, 3}, DataType::Float(32));
  EXPECT_NE(test::error_text<TypeError>([&] {
              ops::pack_conv_weights_int8_groups(f, 2, 8, 2);
            }).find("need OIHW int8, got float32"),
            std::string::npos);
  Tensor X = placeholder({1, 3, 8, 8, 2}, DataType::Int(8), "X"),
         W = placeholder({2, 3, 3, 3, 2, 8, 2}, DataType::Int(16), "W");
  ops::Conv2dParams p;
  p.oc_block = 8;
  EXPECT_NE(test::error_text<ShapeError>([&] {
              ops::conv2d_nchwc(X, W, Tensor(), p, "c");
            }).find("grouped int8 weights [2, 3, 3, 3, 2, 8, 2] do not match input"),
            std::string::npos);
  Tensor Xf = placeholder({1, 3, 8, 8, 4}, DataType::Float(32), "Xf");
  EXPECT_NE(test::error_text<TypeError>([&] {
              ops::conv2d_nchwc(Xf, W, Tensor(), p, "c");
            }).find("(groups of 2) takes int8 data and int16 weights, got float32"),
            std::string::npos);
}

}  // namespace
}  // namespace loom
