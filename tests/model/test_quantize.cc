// int8 post-training quantization (graph/quantize.h): the quantization operators compiled vs the
// naive interpreter bit for bit, calibration thresholds on known histograms, realized int8 graphs
// vs the interpreter (bit-exact) and vs the float model (accuracy), the simulated mode, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "common/error_text.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/passes.h"
#include "loom/graph/quantize.h"
#include "loom/graph/reference.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"
#include "quantize_eval.h"

namespace loom::graph {
namespace {

using test::compile;
using test::cosine;
using test::random_inputs;

// Graph of one operator over one input, compiled; returns its output for `x`.
NDArray run_one(const std::string& op, const NDArray& x, Attrs attrs) {
  Graph g;
  int in = g.add_input("x", {x.shape(), x.dtype()});
  g.outputs = {g.add_op(op, op, {in}, std::move(attrs))};
  return compile(g).run({x})[0];
}

NDArray values(DataType t, const std::vector<double>& v) {
  NDArray a = NDArray::empty({int64_t(v.size())}, t);
  for (size_t i = 0; i < v.size(); ++i) a.set_from_double(int64_t(i), v[i]);
  return a;
}

// Hand-computed: shifts right round half up ((x + 2^(s-1)) >> s), left shifts multiply, both clamp.
TEST(QuantizeOps, RequantizeRoundsShiftsAndClamps) {
  NDArray x = values(DataType::Int(32), {-3, 3, -1, 1, 5, -5, 300, -300, 0, 2147483000, -2147483000});
  struct Case {
    int shift, lo, hi;
    std::vector<double> want;
  };
  for (const Case& c : {Case{1, -128, 127, {-1, 2, 0, 1, 3, -2, 127, -128, 0, 127, -128}},
                        Case{3, -128, 127, {0, 0, 0, 0, 1, -1, 38, -37, 0, 127, -128}},
                        Case{0, 0, 127, {0, 3, 0, 1, 5, 0, 127, 0, 0, 127, 0}},
                        Case{-2, -128, 6, {-12, 6, -4, 4, 6, -20, 6, -128, 0, 6, -128}}}) {
    NDArray y = run_one("requantize", x,
                        Attrs().set("shift", int64_t(c.shift)).set("min", int64_t(c.lo)).set("max", int64_t(c.hi)));
    ASSERT_EQ(y.dtype(), DataType::Int(8));
    for (int64_t i = 0; i < x.numel(); ++i)
      EXPECT_EQ(y.get_as_double(i), c.want[i]) << "shift " << c.shift << " x " << x.get_as_double(i);
  }
}

// Per-channel fixed-point requantization, hand-computed: (x * M_c + 2^(S-1)) >> S, clamped, per
// channel of NC, NCHW and NCHWc values (the NCHWc channel is outer * block + inner).
TEST(QuantizeOps, RequantizeChannelMultipliesPerChannel) {
  NDArray m = values(DataType::Int(32), {1 << 29, 3 << 29, -(1 << 30)});  // 0.5, 1.5, -1 at S = 30
  auto run = [&](const NDArray& x, int64_t lo, int64_t hi) {
    Graph g;
    int in = g.add_input("x", {x.shape(), x.dtype()});
    int mult = g.add_constant("m", m);
    g.outputs = {g.add_op("requantize_channel", "rq", {in, mult},
                          Attrs().set("shift", int64_t(30)).set("min", lo).set("max", hi))};
    NDArray y = compile(g).run({x})[0];
    EXPECT_EQ(reference_run(g, {x})[0].get_as_double(0), y.get_as_double(0));
    return y;
  };
  NDArray x = NDArray::empty({2, 3}, DataType::Int(32));
  double xs[] = {5, 5, 5, -7, 100, 2000000000};
  for (int i = 0; i < 6; ++i) x.set_from_double(i, xs[i]);
  NDArray y = run(x, -128, 127);
  // row 0: 5*0.5 = 2.5 -> 3 (half up), 5*1.5 = 7.5 -> 8, 5*-1 = -5; row 1: -3.5 -> -3, 150 -> 127, huge*-1 -> -128
  double want[] = {3, 8, -5, -3, 127, -128};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.get_as_double(i), want[i]) << i;
  y = run(x, 0, 6);
  double relu6[] = {3, 6, 0, 0, 6, 0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.get_as_double(i), relu6[i]) << i;
  NDArray x4 = NDArray::empty({1, 3, 1, 2}, DataType::Int(32));
  for (int i = 0; i < 6; ++i) x4.set_from_double(i, 10 * (i + 1));  // channel c holds 10(2c+1), 10(2c+2)
  NDArray y4 = run(x4, -128, 127);
  double want4[] = {5, 10, 45, 60, -50, -60};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y4.get_as_double(i), want4[i]) << i;
}

// round(x / 2^e) half away from zero, clamped to int8; dequantize scales back exactly.
TEST(QuantizeOps, QuantizeRoundsHalfAwayFromZero) {
  NDArray x = values(DataType::Float(32), {0.25, -0.25, 0.74, -0.76, 1.0, 100.0, -100.0, 0.0, 0.2499});
  NDArray q = run_one("quantize", x, Attrs().set("exponent", int64_t(-1)));  // steps of 0.5
  std::vector<double> want{1, -1, 1, -2, 2, 127, -128, 0, 0};
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(q.get_as_double(i), want[i]) << x.get_as_double(i);
  NDArray d = run_one("dequantize", q, Attrs().set("exponent", int64_t(-1)));
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(d.get_as_double(i), want[i] * 0.5);
  NDArray f = run_one("fake_quantize", x, Attrs().set("exponent", int64_t(-1)));
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(f.get_as_double(i), want[i] * 0.5);
}

TEST(QuantizeOps, BadAttributesNameTheNode) {
  Graph g;
  int x = g.add_input("x", {{4}, DataType::Int(32)});
  g.outputs = {g.add_op("requantize", "rq1", {x}, Attrs().set("shift", int64_t(3)).set("max", int64_t(300)))};
  std::string msg = test::error_text<ModelError>([&] { infer_types(g); });
  EXPECT_NE(msg.find("rq1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'max' = 300 is out of range"), std::string::npos) << msg;
  g.node(g.outputs[0]).attrs = Attrs().set("shift", int64_t(40));
  msg = test::error_text<ModelError>([&] { infer_types(g); });
  EXPECT_NE(msg.find("'shift' = 40"), std::string::npos) << msg;
  Graph h;
  int f = h.add_input("x", {{4}, DataType::Float(32)});
  h.outputs = {h.add_op("requantize", "rq2", {f}, Attrs().set("shift", int64_t(1)))};
  msg = test::error_text<ModelError>([&] { infer_types(h); });
  EXPECT_NE(msg.find("rq2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("must be int32"), std::string::npos) << msg;
}

// One 1x1 conv quantized with known numbers, checked against values computed by hand:
// input max |x| = 2 (max calibration) -> step 2^-5 (127 * 2^-5 = 3.97 >= 2, 2^-6 would clip);
// weights max |w| = 1.27 -> 2^-6; int8 weights round(w * 64) = 19, -45, 81, 3 (19.2, -44.8,
// 81.28, 3.2); accumulator step 2^-11, int32 bias round(b * 2048) = 205, -410, 0, 102; outputs
// 0.7, -1.6, 2.54, 0.15 -> max 2.54 -> step 2^-5, so requantize shifts by -5 - (-11) = 6.
TEST(Quantize, StepsWeightsBiasAndShiftMatchHandComputedValues) {
  Graph g;
  int x = g.add_input("x", {{1, 1, 2, 2}, DataType::Float(32)});
  NDArray w = NDArray::empty({4, 1, 1, 1}, DataType::Float(32)), b = NDArray::empty({4}, DataType::Float(32));
  const double ws[] = {0.3, -0.7, 1.27, 0.05}, bs[] = {0.1, -0.2, 0.0, 0.05};
  for (int i = 0; i < 4; ++i) w.set_from_double(i, ws[i]), b.set_from_double(i, bs[i]);
  g.outputs = {g.add_op("conv2d", "conv", {x, g.add_constant("w", w), g.add_constant("b", b)})};
  NDArray two = NDArray::empty({1, 1, 2, 2}, DataType::Float(32));
  for (int i = 0; i < 4; ++i) two.set_from_double(i, 2.0);
  QuantizeOptions o;
  o.mode = CalibrationMode::Max;
  o.skip_first_conv = false;
  QuantizeResult q = quantize(g, {{two}}, o);
  ASSERT_EQ(q.quantized_layers, 1) << q.graph.str();
  std::vector<int64_t> exponents, shifts;
  std::vector<double> int8_consts, int32_consts;
  for (auto& n : q.graph.nodes) {
    if (n.is_op() && n.op == "quantize") exponents.push_back(n.attrs.get_int("exponent"));
    if (n.is_op() && n.op == "requantize") shifts.push_back(n.attrs.get_int("shift"));
    if (n.is_constant() && n.value.dtype() == DataType::Int(8))
      for (int64_t i = 0; i < n.value.numel(); ++i) int8_consts.push_back(n.value.get_as_double(i));
    if (n.is_constant() && n.value.dtype() == DataType::Int(32))
      for (int64_t i = 0; i < n.value.numel(); ++i) int32_consts.push_back(n.value.get_as_double(i));
  }
  EXPECT_EQ(exponents, std::vector<int64_t>{-5}) << q.graph.str();
  EXPECT_EQ(int8_consts, (std::vector<double>{19, -45, 81, 3})) << q.graph.str();
  EXPECT_EQ(int32_consts, (std::vector<double>{205, -410, 0, 102})) << q.graph.str();
  EXPECT_EQ(shifts, std::vector<int64_t>{6}) << q.graph.str();
  // And the exponent rule at its edges: the smallest e with 127 * 2^e >= threshold.
  EXPECT_EQ(exponent_for(127.0), 0);
  EXPECT_EQ(exponent_for(127.5), 1);
  EXPECT_EQ(exponent_for(63.5), -1);
  EXPECT_EQ(exponent_for(2.0), -5);
}

// The percentile threshold by hand: |x| histogram over [0, 10) in 10 bins of width 1 holding 50,
// 30, 10, 5, 5 values; the 85th percentile is reached in bin 2 (80 below it, 90 with it), so the
// threshold is that bin's upper edge, 3.0; Max mode takes max |x| itself.
TEST(Calibration, PercentileThresholdIsTheUpperEdgeOfItsBin) {
  std::vector<double> histogram{50, 30, 10, 5, 5, 0, 0, 0, 0, 0};
  QuantizeOptions o;
  o.mode = CalibrationMode::Percentile;
  o.percentile = 85;
  EXPECT_DOUBLE_EQ(choose_threshold(histogram, 10.0, o), 3.0);
  o.percentile = 80;
  EXPECT_DOUBLE_EQ(choose_threshold(histogram, 10.0, o), 2.0);
  o.percentile = 100;
  EXPECT_DOUBLE_EQ(choose_threshold(histogram, 10.0, o), 5.0);
  o.mode = CalibrationMode::Max;
  EXPECT_DOUBLE_EQ(choose_threshold(histogram, 10.0, o), 10.0);
}

TEST(Calibration, ThresholdsAndExponents) {
  EXPECT_EQ(exponent_for(127.0), 0);
  EXPECT_EQ(exponent_for(127.5), 1);
  EXPECT_EQ(exponent_for(1.0), -6);  // 127 * 2^-7 < 1 <= 127 * 2^-6
  EXPECT_EQ(exponent_for(0.0), -7);
  QuantizeOptions o;
  std::vector<double> uniform(1000, 1.0);
  o.mode = CalibrationMode::Max;
  EXPECT_EQ(choose_threshold(uniform, 10.0, o), 10.0);
  o.mode = CalibrationMode::Percentile;
  o.percentile = 50;
  EXPECT_NEAR(choose_threshold(uniform, 10.0, o), 5.0, 0.011);
  // A peaked distribution with a sparse long tail: KL clips most of the tail, but not the mass.
  std::vector<double> peaked(2048, 0.0);
  for (int b = 0; b < 2048; ++b) peaked[b] = b < 256 ? 1000.0 * std::exp(-b / 40.0) : (b % 97 == 0 ? 1.0 : 0.0);
  o.mode = CalibrationMode::KL;
  double t = choose_threshold(peaked, 2048.0, o);
  EXPECT_LT(t, 1024.0);
  EXPECT_GT(t, 128.0);
  EXPECT_EQ(parse_calibration_mode("kl"), CalibrationMode::KL);
  std::string msg = test::error_text<ModelError>([] { parse_calibration_mode("entropy"); });
  EXPECT_NE(msg.find("supported: max, percentile, kl"), std::string::npos) << msg;
}

// x -> conv3x3 (+bias) -> relu -> + x -> relu -> maxpool -> conv1x1 -> output.
Graph residual_block() {
  Graph g;
  g.name = "block";
  int64_t C = 16;
  int x = g.add_input("x", {{1, C, 9, 10}, DataType::Float(32)});
  int conv = g.add_op("conv2d", "conv",
                      {x, g.add_constant("w", test::random_float32({C, C, 3, 3}, 1, -0.3, 0.3)),
                       g.add_constant("b", test::random_float32({C}, 2))},
                      Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1}));
  int relu = g.add_op("relu", "relu1", {conv});
  int add = g.add_op("add", "residual", {relu, x});
  int relu2 = g.add_op("relu", "relu2", {add});
  int pool = g.add_op("max_pool2d", "pool", {relu2},
                      Attrs().set("kernel", std::vector<int64_t>{2, 2}).set("strides", std::vector<int64_t>{2, 2}));
  g.outputs = {
      g.add_op("conv2d", "conv2", {pool, g.add_constant("w2", test::random_float32({8, C, 1, 1}, 3, -0.5, 0.5))})};
  return g;
}

// One calibration run serves every mode: the exponents choose_exponents picks from a percentile
// run's statistics are those of a run in the mode itself, whether the observed values stayed in
// memory between the two readings, only partly, or not at all.
TEST(Calibration, OneRunServesEveryMode) {
  Graph g = residual_block();
  auto inputs = random_inputs(g, 4, 60);
  QuantizeOptions percentile;
  const QuantizeResult first = quantize(g, inputs, percentile);
  const std::vector<PointCalibration>& recorded = first.calibration;
  ASSERT_FALSE(recorded.empty());
  int64_t one_input = 0;  // the bytes one input's observed values take
  for (const PointCalibration& p : recorded) {
    EXPECT_EQ(p.histogram.size(), size_t(percentile.histogram_bins));
    one_input += int64_t(first.float_graph.type_of(p.node).nbytes());
  }
  for (int64_t memory : {int64_t(0), one_input, 2 * one_input + 1}) {
    QuantizeOptions o = percentile;
    o.calibration_memory_bytes = memory;
    const std::vector<PointCalibration> again = quantize(g, inputs, o).calibration;
    ASSERT_EQ(again.size(), recorded.size());
    for (size_t k = 0; k < again.size(); ++k) {
      EXPECT_EQ(again[k].histogram, recorded[k].histogram) << "memory " << memory << ", point " << k;
      EXPECT_EQ(again[k].exponent, recorded[k].exponent) << "memory " << memory << ", point " << k;
    }
  }
  for (CalibrationMode mode : {CalibrationMode::Max, CalibrationMode::Percentile, CalibrationMode::KL})
    for (double pct : {99.9, 90.0}) {
      QuantizeOptions o;
      o.mode = mode;
      o.percentile = pct;
      QuantizeResult direct = quantize(g, inputs, o);
      std::vector<PointCalibration> chosen = choose_exponents(recorded, o);
      ASSERT_EQ(chosen.size(), direct.calibration.size());
      for (size_t k = 0; k < chosen.size(); ++k) {
        EXPECT_EQ(chosen[k].node, direct.calibration[k].node);
        EXPECT_EQ(chosen[k].max_abs, direct.calibration[k].max_abs);
        EXPECT_EQ(chosen[k].threshold, direct.calibration[k].threshold) << to_string(mode) << " " << pct << " " << k;
        EXPECT_EQ(chosen[k].exponent, direct.calibration[k].exponent) << to_string(mode) << " " << pct << " " << k;
      }
      EXPECT_EQ(quantize_calibrated(g, chosen, o).graph.str(), direct.graph.str()) << to_string(mode);
    }
  QuantizeOptions max;
  max.mode = CalibrationMode::Max;
  std::vector<PointCalibration> from_max = quantize(g, inputs, max).calibration;
  EXPECT_TRUE(from_max.front().histogram.empty());
  std::string msg = test::error_text<ModelError>([&] { choose_exponents(from_max, percentile); });
  EXPECT_NE(msg.find("kept no histogram: percentile thresholds need a percentile or KL calibration"), std::string::npos)
      << msg;
}

TEST(Quantize, ResidualBlockRolesAndBitExactInt8) {
  Graph g = residual_block();
  QuantizeOptions o;
  o.skip_first_conv = false;  // the input itself is quantized: everything after it is integer arithmetic
  QuantizeResult q = quantize(g, random_inputs(g, 4, 10), o);
  EXPECT_EQ(q.quantized_layers, 2);
  EXPECT_EQ(q.float_layers, 0);
  std::map<std::string, int> ops;
  for (auto& n : q.graph.nodes)
    if (n.is_op()) ++ops[n.op];
  EXPECT_EQ(ops["quantize"], 1) << q.graph.str();
  EXPECT_EQ(ops["add_shifted"], 1) << q.graph.str();
  EXPECT_EQ(ops["requantize"], 3) << q.graph.str();  // conv+relu, add+relu, conv2
  EXPECT_EQ(ops["relu"], 0) << "both relus fold into requantize clamps\n" << q.graph.str();
  EXPECT_EQ(ops["dequantize"], 1) << q.graph.str();
  for (auto& n : q.graph.nodes)
    if (n.is_op() && n.op == "conv2d") {
      EXPECT_EQ(n.type.dtype, DataType::Int(32));
    }
  auto ex = compile(q.graph);
  for (auto& in : random_inputs(g, 3, 20)) {
    NDArray got = ex.run(in)[0];
    NDArray want = reference_run(q.graph, in)[0];
    for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(got.get_as_double(i), want.get_as_double(i)) << i;
    // And close to the float model.
    EXPECT_GT(cosine(got, reference_run(g, in)[0]), 0.99);
  }
  // The simulated mode computes the same values in float32.
  o.simulated = true;
  QuantizeResult s = quantize(g, random_inputs(g, 4, 10), o);
  for (auto& n : s.graph.nodes) EXPECT_TRUE(n.type.dtype == DataType::Float(32)) << n.name << " " << n.type.str();
  auto sx = compile(s.graph);
  for (auto& in : random_inputs(g, 3, 20)) EXPECT_GT(cosine(sx.run(in)[0], ex.run(in)[0]), 0.9999);
}

// The operator traits quantization reads (OpDef::int8, OpDef::clamp): relu6 (clip 0..6) folds
// into the requantization before it with its upper bound in int8 steps; max pooling passes int8
// through; a clip from -1 is not a clamp from 0 and stays float. Bit-exact vs the interpreter.
TEST(Quantize, ClampsFoldWithTheirBoundsAndPoolsPassThrough) {
  Graph g;
  g.name = "relu6_pool";
  int x = g.add_input("x", {{1, 8, 8, 8}, DataType::Float(32)});
  auto weights = [&](const std::string& name, uint64_t seed) {
    NDArray w = test::random_float32({8, 8, 3, 3}, seed);
    for (int64_t i = 0; i < w.numel(); ++i) w.set_from_double(i, 0.8 * w.get_as_double(i));
    return g.add_constant(name, w);
  };
  Attrs conv = Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1});
  int c1 = g.add_op("conv2d", "conv1", {x, weights("w1", 5)}, conv);
  int r6 = g.add_op("clip", "relu6", {c1}, Attrs().set("min", 0.0).set("max", 6.0));
  int pool = g.add_op("max_pool2d", "pool", {r6},
                      Attrs().set("kernel", std::vector<int64_t>{2, 2}).set("strides", std::vector<int64_t>{2, 2}));
  int c2 = g.add_op("conv2d", "conv2", {pool, weights("w2", 6)}, conv);
  g.outputs = {g.add_op("clip", "clip_signed", {c2}, Attrs().set("min", -1.0).set("max", 1.0))};
  std::vector<std::vector<NDArray>> calib = random_inputs(g, 4, 30);
  for (auto& set : calib)
    for (int64_t i = 0; i < set[0].numel(); ++i) set[0].set_from_double(i, 4.0 * set[0].get_as_double(i));
  QuantizeOptions o;
  o.skip_first_conv = false;
  QuantizeResult q = quantize(g, calib, o);
  std::map<std::string, QuantRole> role;
  int relu6_exponent = 99;
  for (size_t id = 0; id < q.annotation.role.size(); ++id) role[g.nodes[id].name] = q.annotation.role[id];
  for (const PointCalibration& p : q.calibration)
    if (g.nodes[size_t(p.node)].name == "relu6") relu6_exponent = p.exponent;
  EXPECT_EQ(role["relu6"], QuantRole::FoldedRelu) << q.annotation.str(g);
  EXPECT_EQ(role["pool"], QuantRole::PassThrough) << q.annotation.str(g);
  EXPECT_EQ(role["clip_signed"], QuantRole::Float) << q.annotation.str(g);
  // The calibrated relu6 output reaches 6: its step is 2^-4 (127 steps of 1/16 = 7.9 >= 6), and
  // the folded clamp stops at 6 / 2^-4 = 96 steps, not at 127.
  ASSERT_EQ(relu6_exponent, -4) << q.str();
  std::vector<int64_t> clamps;
  int clips = 0;
  for (auto& n : q.graph.nodes) {
    if (n.is_op() && n.op == "requantize") clamps.push_back(n.attrs.get_int("max", 127));
    clips += n.is_op() && n.op == "clip";
  }
  EXPECT_NE(std::find(clamps.begin(), clamps.end(), 96), clamps.end()) << q.graph.str();
  EXPECT_EQ(clips, 1) << "only the signed clip stays a float clip\n" << q.graph.str();
  auto ex = compile(q.graph);
  for (auto& in : random_inputs(g, 2, 40)) {
    for (int64_t i = 0; i < in[0].numel(); ++i) in[0].set_from_double(i, 4.0 * in[0].get_as_double(i));
    NDArray got = ex.run(in)[0], want = reference_run(q.graph, in)[0];
    for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(got.get_as_double(i), want.get_as_double(i)) << i;
    EXPECT_GT(cosine(got, reference_run(g, in)[0]), 0.98);
  }
}

// Per-channel weight scales: the CPU int8 model equals the interpreter bit for bit, follows the
// float model more closely than per-tensor scales, and requantizes with requantize_channel.
TEST(Quantize, PerChannelResidualBlockBitExact) {
  Graph g = residual_block();
  QuantizeOptions o;
  o.skip_first_conv = false;
  o.per_channel = true;
  QuantizeResult q = quantize(g, random_inputs(g, 4, 10), o);
  int per_channel = 0;
  for (auto& n : q.graph.nodes) per_channel += n.is_op() && n.op == "requantize_channel";
  EXPECT_EQ(per_channel, 2) << q.graph.str();  // conv+relu and conv2; the residual add keeps its shift
  auto ex = compile(q.graph);
  for (auto& in : random_inputs(g, 3, 20)) {
    NDArray got = ex.run(in)[0];
    NDArray want = reference_run(q.graph, in)[0];
    for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(got.get_as_double(i), want.get_as_double(i)) << i;
    EXPECT_GT(cosine(got, reference_run(g, in)[0]), 0.99);
  }
}

// Per-channel power-of-two weight steps (the default below 8-bit weights): with channels whose
// weights differ by up to 2^7 in size, one 4-bit step per tensor rounds the small channels to a
// level or two, one step per channel gives every channel its range. The requantizations are
// requantize_channel with power-of-two multipliers (one right shift per channel, what the
// accelerator runs), the CPU equals the interpreter bit for bit, and the model is closer to the
// float one than per-tensor steps make it.
TEST(Quantize, ChannelExponentsGiveEveryChannelItsRange) {
  Graph g = residual_block();
  for (Node& n : g.nodes)
    if (n.is_constant() && (n.name == "w" || n.name == "w2")) {
      const int64_t C = n.value.shape()[0], per = n.value.numel() / C;
      for (int64_t i = 0; i < n.value.numel(); ++i)
        n.value.set_from_double(i, n.value.get_as_double(i) * std::ldexp(1.0, -int((i / per) % 8)));
    }
  const auto calibration = random_inputs(g, 4, 10);
  auto quantized = [&](QuantizeOptions::WeightExponents e) {
    QuantizeOptions o;
    o.skip_first_conv = false;
    o.set_precision("W4A8");
    o.weight_exponents = e;
    return quantize(g, calibration, o).graph;
  };
  const Graph channel = quantized(QuantizeOptions::WeightExponents::Auto);
  const Graph tensor = quantized(QuantizeOptions::WeightExponents::PerTensor);
  int per_channel = 0;
  for (const Node& n : channel.nodes) {
    if (!n.is_op() || n.op != "requantize_channel") continue;
    ++per_channel;
    std::optional<std::vector<int>> shifts = channel_shifts(channel, n);
    ASSERT_TRUE(shifts) << n.name << " multipliers are not powers of two";
    EXPECT_GT(*std::max_element(shifts->begin(), shifts->end()), *std::min_element(shifts->begin(), shifts->end()))
        << n.name << ": channels of different sizes shift by different amounts";
  }
  EXPECT_EQ(per_channel, 2) << channel.str();
  EXPECT_EQ(std::count_if(tensor.nodes.begin(), tensor.nodes.end(),
                          [](const Node& n) { return n.is_op() && n.op == "requantize_channel"; }),
            0);
  // Every channel of the 4-bit weights uses at least half its range.
  for (const Node& n : channel.nodes)
    if (n.is_constant() && n.value.dtype() == DataType::Int(8) && n.value.shape().size() == 4) {
      const int64_t C = n.value.shape()[0], per = n.value.numel() / C;
      for (int64_t c = 0; c < C; ++c) {
        double m = 0;
        for (int64_t k = 0; k < per; ++k) m = std::max(m, std::fabs(n.value.get_as_double(c * per + k)));
        EXPECT_GE(m, 4) << n.name << " channel " << c;
        EXPECT_LE(m, 7) << n.name << " channel " << c;
      }
    }
  auto cpu = compile(channel);
  auto cpu_tensor = compile(tensor);
  double closer = 0;
  for (auto& in : random_inputs(g, 3, 20)) {
    NDArray got = cpu.run(in)[0];
    NDArray want = reference_run(channel, in)[0];
    for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(got.get_as_double(i), want.get_as_double(i)) << i;
    const NDArray f = reference_run(g, in)[0];
    closer += cosine(got, f) - cosine(cpu_tensor.run(in)[0], f);
    auto [err, scale] = test::max_error(got, f);
    EXPECT_LT(err, 0.2 * scale) << "largest error against the float model";
    EXPECT_GT(cosine(got, f), 0.99);
  }
  EXPECT_GT(closer, 0) << "per-channel steps are not closer to the float model than per-tensor ones";
}

TEST(Quantize, WeightExponentsAreNamedAndNotCombinedWithMultipliers) {
  QuantizeOptions o;
  EXPECT_FALSE(o.channel_exponents());
  o.weight_bits = 4;
  EXPECT_TRUE(o.channel_exponents());
  o.per_channel = true;
  EXPECT_FALSE(o.channel_exponents());  // the fixed-point multipliers take precedence over Auto
  o.weight_exponents = QuantizeOptions::WeightExponents::PerChannel;
  EXPECT_NE(test::error_text<ConfigError>([&] { o.validate(); }).find("choose one"), std::string::npos);
  EXPECT_EQ(parse_weight_exponents("channel"), QuantizeOptions::WeightExponents::PerChannel);
  EXPECT_EQ(parse_weight_exponents("tensor"), QuantizeOptions::WeightExponents::PerTensor);
  EXPECT_NE(
      test::error_text<ConfigError>([] { parse_weight_exponents("row"); }).find("expected auto, tensor or channel"),
      std::string::npos);
}

// The CPU computes int8 convolutions in the grouped forms: byte groups (vpmaddubsw / vpdpbusd)
// where the input is known non-negative (conv2 reads a max pool of a folded ReLU), int16 pairs
// (pmaddwd) elsewhere (conv reads the quantized input). Every form equals the interpreter bit for
// bit, the widened products too.
TEST(Quantize, Int8ConvsRunInGroupedFormsOnTheCpu) {
  Graph g = residual_block();
  QuantizeOptions o;
  o.skip_first_conv = false;
  QuantizeResult q = quantize(g, random_inputs(g, 4, 10), o);
  auto weights_in_groups_of = [](const BuildResult& r, int64_t group) {
    int n = 0;
    for (auto& node : r.graph.nodes)
      n += node.is_constant() && node.type.shape.size() == 7 && node.type.shape[6] == group;
    return n;
  };
  std::vector<runtime::GraphExecutor> forms;
  for (int largest : {4, 2, 0}) {
    BuildOptions b;
    b.pipeline.layout.int8_conv_group = largest;
    BuildResult r = build(q.graph, b);
    EXPECT_EQ(weights_in_groups_of(r, 4), largest == 4 ? 1 : 0) << r.graph.str();
    EXPECT_EQ(weights_in_groups_of(r, 2), largest == 4 ? 1 : largest == 2 ? 2 : 0) << r.graph.str();
    forms.push_back(runtime::GraphExecutor::from_model_file(r.file, "block"));
  }
  for (auto& in : random_inputs(g, 3, 30)) {
    NDArray want = reference_run(q.graph, in)[0];
    for (auto& ex : forms) {
      NDArray got = ex.run(in)[0];
      for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(got.get_as_double(i), want.get_as_double(i)) << i;
    }
  }
}

// An int8 3x3 conv of 16 outputs (seeded random weights and bias) on the 8-channel int8 value `in`,
// as `g`'s output, built; with the weight group alter_layout chose (4: byte groups, 2: int16
// pairs), and checked equal to the interpreter on two random inputs.
struct BuiltConv {
  BuildResult r;
  int64_t group = 0;
};
BuiltConv built_int8_conv_on(Graph& g, int in, uint64_t seed) {
  NDArray w = NDArray::empty({16, 8, 3, 3}, DataType::Int(8)), b = NDArray::empty({16}, DataType::Int(32));
  w.fill_random(seed, -128, 127);
  b.fill_random(seed + 1, -1000, 1000);
  g.outputs = {g.add_op("conv2d", "conv", {in, g.add_constant("w", w), g.add_constant("b", b)},
                        Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1}))};
  infer_types(g);
  BuiltConv c{build(g)};
  for (auto& n : c.r.graph.nodes)
    if (n.is_constant() && n.type.shape.size() == 7) c.group = n.type.shape[6];
  auto ex = runtime::GraphExecutor::from_model_file(c.r.file, "g");
  for (auto& x : random_inputs(g, 2, int(seed) + 37)) {
    NDArray got = ex.run(x)[0], want = reference_run(g, x)[0];
    int64_t i = 0;
    while (i < want.numel() && got.get_as_double(i) == want.get_as_double(i)) ++i;
    EXPECT_EQ(i, want.numel()) << "first difference at element " << i;
  }
  return c;
}

// Byte groups only where every input value is in [0, 127]: after a max pool whose windows all
// hold an input element; a dilated pool whose padding (read as -128) fills whole windows makes the
// conv fall back to int16 pairs, and both equal the interpreter. A byte-group conv without the
// attribute alter_layout proves it with is a type error.
TEST(Quantize, ByteGroupsOnlyForInputsKnownNonNegative) {
  for (int64_t pad : {0, 3}) {
    SCOPED_TRACE("pool padding " + std::to_string(pad));
    Graph g;
    int x = g.add_input("x", {{1, 8, 9, 9}, DataType::Float(32)});
    int q = g.add_op("quantize", "q", {x}, Attrs().set("exponent", int64_t(-5)).set("min", int64_t(0)));
    int pool = g.add_op("max_pool2d", "pool", {q},
                        Attrs()
                            .set("kernel", std::vector<int64_t>{2, 2})
                            .set("dilations", std::vector<int64_t>{2, 2})
                            .set("pads", std::vector<int64_t>{pad, pad, pad, pad}));
    // With pad 3 some windows lie wholly in the padding: -128 in the kernel and the interpreter.
    auto [r, group] = built_int8_conv_on(g, pool, 3);
    EXPECT_EQ(group, pad == 0 ? 4 : 2) << r.graph.str();
    if (group == 4) {
      Graph bad = r.graph;
      for (auto& n : bad.nodes)
        if (n.is_op() && n.op == "conv2d") n.attrs.set("input_nonnegative", int64_t(0));
      std::string msg = test::error_text<ModelError>([&] { infer_types(bad); });
      EXPECT_NE(msg.find("need attribute input_nonnegative = 1"), std::string::npos) << msg;
    }
  }
}

// A quantize keeps its float input's sign: after a ReLU and a max pool in float (ResNet's stem
// before its first int8 conv) the conv reads byte groups, where without the ReLU, or with a clamp
// whose upper bound is below 0, it reads int16 pairs; each form equals the interpreter.
TEST(Quantize, AQuantizeOfANonNegativeFloatFeedsByteGroups) {
  struct Case {
    bool relu;
    int64_t max;
    int64_t group;
  };
  for (Case c : {Case{true, 127, 4}, Case{false, 127, 2}, Case{true, -1, 2}}) {
    SCOPED_TRACE(std::string(c.relu ? "relu" : "no relu") + ", max " + std::to_string(c.max));
    Graph g;
    int x = g.add_input("x", {{1, 8, 9, 9}, DataType::Float(32)});
    int v = c.relu ? g.add_op("relu", "relu", {x}) : x;
    int pool =
        g.add_op("max_pool2d", "pool", {v},
                 Attrs().set("kernel", std::vector<int64_t>{3, 3}).set("pads", std::vector<int64_t>{1, 1, 1, 1}));
    int q = g.add_op("quantize", "q", {pool}, Attrs().set("exponent", int64_t(-5)).set("max", c.max));
    auto [r, group] = built_int8_conv_on(g, q, 5);
    EXPECT_EQ(group, c.group) << r.graph.str();
  }
}

TEST(Quantize, Errors) {
  Graph g = residual_block();
  std::string msg = test::error_text<ModelError>([&] { quantize(g, {}); });
  EXPECT_NE(msg.find("at least one input"), std::string::npos) << msg;
  msg = test::error_text<ModelError>([&] { quantize(g, {{}}); });
  EXPECT_NE(msg.find("calibration input 0 has 0 tensors, the model takes 1"), std::string::npos) << msg;
}

// Whole ResNet-18 (built-in, 224x224, deterministic random weights and inputs): int8 vs float
// over 40 inputs per calibration mode. Targets (the issue's, for percentile calibration): cosine
// of the logits >= 0.99 on every input and top-1 agreement >= 95%.
TEST(Quantize, ResNet18Int8AgreesWithFloat) {
  Graph g = builtin_model("resnet18", 1, 224);
  const auto eval = random_inputs(g, 40, 777);
  const std::vector<NDArray> float_outputs = test::first_outputs(g, eval);  // once for the three modes
  const std::vector<PointCalibration> recorded = quantize(g, random_inputs(g, 8, 1)).calibration;
  for (CalibrationMode mode : {CalibrationMode::Max, CalibrationMode::Percentile, CalibrationMode::KL}) {
    QuantizeOptions o;
    o.mode = mode;
    QuantizeResult q = quantize_calibrated(g, choose_exponents(recorded, o), o);
    EXPECT_EQ(q.quantized_layers, 20);  // every conv but the first, and the classifier
    test::Agreement a = test::int8_agreement(float_outputs, q.graph, eval, 1000);
    std::printf("resnet18 int8, %s calibration: %s\n", to_string(mode), a.str().c_str());
    // KL clips the most and loses the most, hence its lower bound.
    EXPECT_GE(a.cosine_min, mode == CalibrationMode::KL ? 0.98 : 0.99) << to_string(mode);
    EXPECT_EQ(a.inputs, 40);
    EXPECT_GE(100 * a.top1_agree, 95 * a.inputs) << to_string(mode);  // >= 95%
  }
}

}  // namespace
}  // namespace loom::graph
