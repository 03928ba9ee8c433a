// Quantized models on the accelerator (partition_accel + the model's accelerator image): int8
// layers partitioned onto the accelerator, run by the graph executor on the functional simulator,
// equal the same quantized graph on the CPU bit for bit (and the naive interpreter); blocked data
// stays on the device between consecutive accelerator layers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/error_text.h"
#include "common/temp_dir.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/quantize.h"
#include "loom/graph/reference.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"
#include "quantize_eval.h"

namespace loom::graph {
namespace {

using test::random_inputs;

struct Built {
  BuildResult result;
  runtime::GraphExecutor ex;
};

Built build_for(const Graph& g, std::optional<accel::AccelConfig> cfg, const runtime::ExecutorOptions& eo = {}) {
  BuildOptions o;
  o.accel = std::move(cfg);
  BuildResult r = build(g, o);
  runtime::GraphExecutor ex = runtime::GraphExecutor::from_model_file(r.file, g.name, eo);
  return {std::move(r), std::move(ex)};
}

void expect_equal(const NDArray& got, const NDArray& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_EQ(got.get_as_double(i), want.get_as_double(i)) << what << ": element " << i;
}

int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (auto& node : g.nodes) n += node.is_op() && node.op == op;
  return n;
}

// x -> conv3x3 -> relu -> conv3x3 -> + x -> relu -> conv1x1 s2 -> output, 32 channels.
Graph chain() {
  Graph g;
  g.name = "chain";
  int64_t C = 32;
  int x = g.add_input("x", {{1, C, 14, 14}, DataType::Float(32)});
  auto w = [&](const char* n, int64_t o, int64_t k, uint64_t seed) {
    return g.add_constant(n, test::random_float32({o, C, k, k}, seed, -0.2, 0.2));
  };
  Attrs same = Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1});
  int c1 = g.add_op("conv2d", "conv1", {x, w("w1", C, 3, 1), g.add_constant("b1", test::random_float32({C}, 2))}, same);
  int r1 = g.add_op("relu", "relu1", {c1});
  int c2 = g.add_op("conv2d", "conv2", {r1, w("w2", C, 3, 3)}, same);
  int r2 = g.add_op("relu", "relu2", {g.add_op("add", "residual", {c2, x})});
  g.outputs = {
      g.add_op("conv2d", "conv3", {r2, w("w3", 48, 1, 4)}, Attrs().set("strides", std::vector<int64_t>{2, 2}))};
  return g;
}

// The accelerator requantizes with shifts and runs int8 operators: a graph with per-channel
// fixed-point multipliers or simulated int8 is refused before anything is compiled, naming the node.
TEST(AccelModel, PerChannelAndSimulatedInt8AreRefusedNamingTheNode) {
  Graph g = chain();
  for (bool per_channel : {true, false}) {
    QuantizeOptions qo;
    qo.per_channel = per_channel;
    qo.simulated = !per_channel;
    Graph q = quantize(g, random_inputs(g, 2, 10), qo).graph;
    std::string err = test::error_text<ConfigError>([&] { build_for(q, accel::default_config()); });
    EXPECT_NE(err.find(per_channel ? "' requantizes per output channel by multipliers that are not powers of two; "
                                     "the accelerator requantizes with shifts"
                                   : "' is simulated int8 (fake_quantize); the accelerator runs int8 layers"),
              std::string::npos)
        << err;
    EXPECT_EQ(err.find("node '"), 0u) << err;
    BuildOptions planned;
    planned.accel = accel::default_config();
    err = test::error_text<ConfigError>([&] { check_targets(planned, &qo); });
    EXPECT_NE(err.find(per_channel ? "per-channel scales are for the CPU" : "it needs int8 quantization"),
              std::string::npos)
        << err;
  }
}

TEST(AccelModel, ChainOnFsimEqualsCpuInt8BitForBit) {
  Graph g = chain();
  QuantizeOptions qo;
  qo.skip_first_conv = false;
  Graph q = quantize(g, random_inputs(g, 4, 10), qo).graph;
  Built cpu = build_for(q, std::nullopt);
  Built acc = build_for(q, accel::default_config());
  EXPECT_EQ(acc.result.accel_report.offloaded, 4) << acc.result.graph.str();  // three convolutions and the residual add
  EXPECT_TRUE(acc.result.accel_report.kept.empty());
  EXPECT_FALSE(cpu.ex.uses_accelerator());
  EXPECT_TRUE(acc.ex.uses_accelerator());
  EXPECT_EQ(count_ops(acc.result.graph, "accel_conv2d"), 3);
  EXPECT_EQ(count_ops(acc.result.graph, "accel_add"), 1);
  // Everything between the quantized input and the output stays blocked on the device: one pack
  // (read by conv1 and the add), one unpack (the output).
  EXPECT_EQ(count_ops(acc.result.graph, "accel_pack"), 1) << acc.result.graph.str();
  EXPECT_EQ(count_ops(acc.result.graph, "accel_unpack"), 1) << acc.result.graph.str();
  int downloads = 0, uploads = 0;
  for (auto& k : acc.ex.kernels()) downloads += int(k.download.size()), uploads += int(k.upload.size());
  EXPECT_EQ(uploads, 1);
  EXPECT_EQ(downloads, 1);
  for (auto& in : random_inputs(g, 3, 20)) {
    NDArray want = cpu.ex.run(in)[0];
    expect_equal(acc.ex.run(in)[0], want, "accelerator vs CPU int8");
    expect_equal(want, reference_run(q, in)[0], "CPU int8 vs the interpreter");
  }
  uint64_t macs = 0;
  for (auto& s : acc.ex.accel_stats()) macs += s.gemm_macs;
  // The convolutions, and the add's two widening GEMMs (identity blocks).
  EXPECT_EQ(macs, uint64_t(32 * 32 * 9 * 14 * 14 * 2 + 32 * 48 * 7 * 7 + 2 * 32 * 16 * 14 * 14));
}

// Per-channel power-of-two weight steps run on the accelerator as per-channel shifts (the ALU's
// SHR by a second accumulator entry, loaded like the bias): every layer offloaded with a shifts
// input, bit for bit against the CPU and the interpreter. A channel whose shift is beyond the
// ALU's stays on the CPU, the reason naming it, and the model still agrees.
TEST(AccelModel, ChannelExponentsRunAsPerChannelShifts) {
  Graph g = chain();
  // Channels of weights up to 2^5 apart in size (shifts up to 5 apart), one of conv2's 2^40 times
  // smaller still (its shift capped at the ALU's 30: its outputs round to zero either way) and one
  // of conv3's all zero (the largest channel's step).
  for (Node& n : g.nodes)
    if (n.is_constant() && n.value.shape().size() == 4) {
      const int64_t per = n.value.numel() / n.value.shape()[0];
      for (int64_t i = 0; i < n.value.numel(); ++i) {
        const int64_t c = i / per;
        double scale = std::ldexp(1.0, -int(c % 6));
        if (n.name == "w2" && c == 5) scale = std::ldexp(1.0, -40);
        if (n.name == "w3" && c == 7) scale = 0;
        n.value.set_from_double(i, n.value.get_as_double(i) * scale);
      }
    }
  QuantizeOptions qo;
  qo.skip_first_conv = false;
  qo.weight_exponents = QuantizeOptions::WeightExponents::PerChannel;
  Graph q = quantize(g, random_inputs(g, 4, 10), qo).graph;
  ASSERT_EQ(count_ops(q, "requantize_channel"), 3) << q.str();
  Built cpu = build_for(q, std::nullopt);
  Built acc = build_for(q, accel::default_config());
  EXPECT_EQ(acc.result.accel_report.offloaded, 4) << acc.result.graph.str();
  int with_shifts = 0;
  for (const Node& n : acc.result.graph.nodes)
    with_shifts += n.is_op() && n.op == "accel_conv2d" && n.inputs.size() == 4;
  EXPECT_EQ(with_shifts, 3) << acc.result.graph.str();
  const auto inputs = random_inputs(g, 2, 20);
  for (auto& in : inputs) {
    NDArray want = cpu.ex.run(in)[0];
    expect_equal(acc.ex.run(in)[0], want, "accelerator vs CPU, per-channel shifts");
    expect_equal(want, reference_run(q, in)[0], "CPU vs the interpreter, per-channel shifts");
  }
  // conv2's channel 0 shifted by 31: beyond the ALU's 0..30.
  for (Node& n : q.nodes) {
    if (!n.is_op() || n.op != "requantize_channel" || n.name.find("conv2") == std::string::npos) continue;
    std::vector<int> shifts = *channel_shifts(q, n);
    NDArray& m = q.nodes[size_t(n.inputs[1])].value;
    const int S = *std::min_element(shifts.begin() + 1, shifts.end()) + 30;  // every multiplier within int32
    ASSERT_GE(S, 31);
    n.attrs.set("shift", int64_t(S));
    for (size_t c = 0; c < shifts.size(); ++c) m.set_from_double(int64_t(c), std::ldexp(1.0, S - (c ? shifts[c] : 31)));
  }
  Built cpu2 = build_for(q, std::nullopt);
  Built acc2 = build_for(q, accel::default_config());
  ASSERT_EQ(acc2.result.accel_report.kept.size(), 1u) << acc2.result.graph.str();
  EXPECT_NE(
      acc2.result.accel_report.kept[0].find("conv2_int8 (conv2d): channel 0's requantize shift 31 (the accelerator "
                                            "shifts right by 0..30)"),
      std::string::npos)
      << acc2.result.accel_report.kept[0];
  for (auto& in : inputs) expect_equal(acc2.ex.run(in)[0], cpu2.ex.run(in)[0], "one layer kept on the CPU");
}

// Sets the first weight of every int8 conv to 127, the edge of an 8-bit model's range.
void reach_127(Graph& q) {
  for (Node& n : q.nodes)
    if (n.is_op() && n.op == "conv2d") q.nodes[size_t(n.inputs[1])].value.set_from_double(0, 127);
}

accel::AccelConfig shipped_config(const std::string& name) {
  return accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + name + ".json");
}

// The config's precision decides what runs on the accelerator: a model quantized at its widths runs
// there bit for bit against the CPU model at those widths (4-bit activations packed on the way in
// and out); one quantized at 8 bits whose weights reach 127 (beyond two passes of 4-bit digits)
// stays on the CPU, each layer naming the widths;
// 16-bit accumulators take only the layers whose sums provably fit, the others kept with the bound.
TEST(AccelModel, ThePrecisionDecidesWhatRunsOnTheAccelerator) {
  Graph g = chain();
  QuantizeOptions q8;
  q8.skip_first_conv = false;
  const auto calibration = random_inputs(g, 4, 10);
  Graph int8 = quantize(g, calibration, q8).graph;
  reach_127(int8);  // beyond what even two passes of 4-bit digits hold
  accel::AccelConfig w4a4_acc16 = shipped_config("w4a4");
  w4a4_acc16.name = "w4a4_acc16";
  w4a4_acc16.acc_bits = 16;
  w4a4_acc16.acc_buffer_bytes /= 2;
  struct Case {
    accel::AccelConfig cfg;
    bool follow;       // quantized at the config's widths
    int offloaded;     // layers on the accelerator
    std::string kept;  // what a kept layer's reason says
  };
  for (const Case& c : {Case{shipped_config("w4a8"), true, 4, ""}, Case{shipped_config("w4a4"), true, 4, ""},
                        Case{shipped_config("w2a8"), true, 4, ""},
                        Case{shipped_config("w4a8"), false, 1, "beyond the 4-bit weights of config 'w4a8'"},
                        Case{shipped_config("acc16"), true, 1, "beyond the 16-bit accumulators of config 'acc16'"},
                        Case{w4a4_acc16, true, 4, ""}}) {
    SCOPED_TRACE(c.cfg.name + (c.follow ? " at its widths" : " from an 8-bit model"));
    BuildOptions bo;
    bo.accel = c.cfg;
    QuantizeOptions qo = q8;
    if (c.follow) follow_targets(qo, bo);
    Graph q = c.follow ? quantize(g, calibration, qo).graph : int8;
    Built cpu = build_for(q, std::nullopt);
    Built acc = build_for(q, c.cfg);
    EXPECT_EQ(acc.result.accel_report.offloaded, c.offloaded) << acc.result.graph.str();
    for (const std::string& k : acc.result.accel_report.kept) EXPECT_NE(k.find(c.kept), std::string::npos) << k;
    EXPECT_EQ(acc.result.accel_report.kept.size(), size_t(4 - c.offloaded));
    for (auto& in : random_inputs(g, 2, 30)) expect_equal(acc.ex.run(in)[0], cpu.ex.run(in)[0], c.cfg.name);
  }
}

// Mixed precision: layers given wider weights than the config's multipliers run in passes of
// wgt_bits-bit digits (8-bit weights on W4A8 in two, 4- and 8-bit ones on W2A8 in two and four),
// every layer on the accelerator, bit for bit against the CPU model and the interpreter; the wide
// layers take the digits' range (119 levels for two 4-bit passes). A width the config does not run
// is refused, naming the layer; an 8-bit model's weights (127 levels) stay on the CPU, the reason
// naming the range in passes.
TEST(AccelModel, LayersInPassesOfNarrowDigits) {
  Graph g = chain();
  const auto calibration = random_inputs(g, 4, 10);
  struct Case {
    std::string config;
    std::map<std::string, int> widths;
    std::map<std::string, int> passes;  // accel_conv2d node name prefix -> passes
  };
  for (const Case& c :
       {Case{"w4a8", {{"conv2", 8}}, {{"conv2", 2}}},
        Case{"w2a8", {{"conv1", 4}, {"conv3", 8}}, {{"conv1", 2}, {"conv3", 4}}},
        Case{"w4a4", {{"conv1", 8}, {"conv2", 8}, {"conv3", 8}}, {{"conv1", 2}, {"conv2", 2}, {"conv3", 2}}}}) {
    SCOPED_TRACE(c.config);
    BuildOptions bo;
    bo.accel = shipped_config(c.config);
    QuantizeOptions qo;
    qo.skip_first_conv = false;
    qo.layer_weight_bits = c.widths;
    follow_targets(qo, bo);
    Graph q = quantize(g, calibration, qo).graph;
    for (const Node& n : q.nodes)  // the wide layers' weights go beyond the multipliers, within the digits' range
      if (n.is_op() && n.op == "conv2d" && c.widths.count(n.name.substr(0, 5))) {
        const NDArray& w = q.node(n.inputs[1]).value;
        double m = 0;
        for (int64_t i = 0; i < w.numel(); ++i) m = std::max(m, std::fabs(w.get_as_double(i)));
        EXPECT_LE(m, double(bo.accel->weight_range(c.widths.at(n.name.substr(0, 5))).second)) << n.name;
        EXPECT_GT(m, double(bo.accel->weight_range(bo.accel->wgt_bits).second)) << n.name;
      }
    Built cpu = build_for(q, std::nullopt);
    Built acc = build_for(q, bo.accel);
    EXPECT_EQ(acc.result.accel_report.offloaded, 4) << acc.result.graph.str();
    std::map<std::string, int> passes;
    for (const Node& n : acc.result.graph.nodes)
      if (n.is_op() && n.op == "accel_conv2d" && n.attrs.has("digit_bits")) {
        EXPECT_EQ(n.attrs.get_int("digit_bits"), bo.accel->wgt_bits) << n.name;
        passes[n.name.substr(0, 5)] = int(acc.result.graph.type_of(n.inputs[1]).shape[2]);
      }
    EXPECT_EQ(passes, c.passes) << acc.result.graph.str();
    for (auto& in : random_inputs(g, 2, 30)) {
      NDArray want = cpu.ex.run(in)[0];
      expect_equal(acc.ex.run(in)[0], want, c.config + " in passes vs the CPU");
      expect_equal(want, reference_run(q, in)[0], c.config + ": CPU vs the interpreter");
    }
  }
  BuildOptions w4a8;
  w4a8.accel = shipped_config("w4a8");
  QuantizeOptions two_bits;
  two_bits.layer_weight_bits = {{"conv2", 2}};
  std::string e = test::error_text<ConfigError>([&] { follow_targets(two_bits, w4a8); });
  EXPECT_NE(e.find("layer 'conv2' is given 2-bit weights; config 'w4a8' (W4A8, 32-bit accumulators) runs weights of "
                   "4 or 8 bits"),
            std::string::npos)
      << e;
  QuantizeOptions unknown;
  unknown.layer_weight_bits = {{"conv9", 8}};
  e = test::error_text<ModelError>([&] { quantize(g, calibration, unknown); });
  EXPECT_NE(e.find("layer 'conv9' is given 8-bit weights but is no quantized conv2d/dense layer of the model; those "
                   "are: conv2, conv3"),
            std::string::npos)
      << e;
  QuantizeOptions q8;
  q8.skip_first_conv = false;
  Graph int8 = quantize(g, calibration, q8).graph;
  reach_127(int8);
  Built kept = build_for(int8, w4a8.accel);
  ASSERT_FALSE(kept.result.accel_report.kept.empty());
  EXPECT_NE(kept.result.accel_report.kept[0].find("its 8-bit weights in passes ([-136, 119])"), std::string::npos)
      << kept.result.accel_report.kept[0];
}

// choose_weight_bits: each layer's sensitivity is the model's agreement with only that layer
// narrow; the most sensitive layers are widened until the budget holds. A budget between the
// all-narrow and the all-wide agreement widens some layers but not all, the most sensitive first,
// and the chosen model, quantized again from the table, agrees as reported (measured here on the
// interpreter); a budget the narrow model meets widens none, one no model meets widens all.
TEST(AccelModel, MixedPrecisionWidensTheMostSensitiveLayers) {
  Graph g = chain();
  const auto calibration = random_inputs(g, 4, 10);
  QuantizeOptions qo;
  qo.skip_first_conv = false;
  qo.set_precision("W2A8");
  WeightBitsChoice all = choose_weight_bits(g, calibration, qo, 8, 0.999999);
  ASSERT_EQ(all.sensitivity.size(), 3u);
  EXPECT_LT(all.narrow_cosine, all.wide_cosine);
  EXPECT_FALSE(all.met);
  EXPECT_EQ(all.layer_weight_bits.size(), 3u);
  for (size_t i = 1; i < all.sensitivity.size(); ++i)
    EXPECT_LE(all.sensitivity[i - 1].cosine, all.sensitivity[i].cosine);
  const double budget = (all.narrow_cosine + all.wide_cosine) / 2;
  WeightBitsChoice mid = choose_weight_bits(g, calibration, qo, 8, budget);
  EXPECT_TRUE(mid.met);
  EXPECT_GE(mid.cosine, budget);
  ASSERT_GE(mid.layer_weight_bits.size(), 1u);
  EXPECT_LT(mid.layer_weight_bits.size(), 3u);
  for (size_t i = 0; i < mid.layer_weight_bits.size(); ++i)
    EXPECT_EQ(mid.layer_weight_bits.count(mid.sensitivity[i].layer), 1u) << mid.str();
  QuantizeOptions chosen = qo;
  chosen.layer_weight_bits = mid.layer_weight_bits;
  Graph q = quantize(g, calibration, chosen).graph;
  double dot = 0, qq = 0, ff = 0;
  for (auto& in : calibration) {
    NDArray a = reference_run(q, in)[0], f = reference_run(g, in)[0];
    for (int64_t i = 0; i < a.numel(); ++i) {
      dot += a.get_as_double(i) * f.get_as_double(i);
      qq += a.get_as_double(i) * a.get_as_double(i);
      ff += f.get_as_double(i) * f.get_as_double(i);
    }
  }
  EXPECT_NEAR(dot / std::sqrt(qq * ff), mid.cosine, 1e-4);
  WeightBitsChoice none = choose_weight_bits(g, calibration, qo, 8, all.narrow_cosine * 0.999);
  EXPECT_TRUE(none.layer_weight_bits.empty());
  EXPECT_NE(test::error_text<ConfigError>([&] { choose_weight_bits(g, calibration, qo, 2, 0.9); }).find("wider than"),
            std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([&] { choose_weight_bits(g, calibration, qo, 8, 1.5); }).find("(0, 1]"),
            std::string::npos);
}

// BuildOptions::accel_conv_tiling (what `loom compile --tuning-log` sets) decides each accelerator
// conv's tiling: every conv is asked with its shape, a non-default tiling computes the same model
// bit for bit, and one that does not divide or fit is an error naming the layer.
// Graph shapes PyTorch's exports rarely have, through every pass (fold, fuse, layout, quantize,
// partition, memory plan) on the CPU and on the accelerator: outputs that other ops also read
// (conv1's output feeds a relu, a residual add and the caller; the add's relu feeds conv3 and the
// caller), a diamond, and an input no node reads. Every output of every build equals the naive
// interpreter: float on the CPU, int8 on the CPU and on fsim bit for bit.
TEST(AccelModel, OutputsReadByOtherOpsAndDiamondsOnCpuAndAccelerator) {
  Graph g;
  g.name = "shapes";
  const int64_t C = 16;
  int x = g.add_input("x", {{1, C, 8, 8}, DataType::Float(32)});
  g.add_input("unused", {{3}, DataType::Float(32)});
  Attrs same = Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1});
  auto w = [&](const char* n, int64_t k, uint64_t seed) {
    return g.add_constant(n, test::random_float32({C, C, k, k}, seed, -0.2, 0.2));
  };
  int c1 = g.add_op("conv2d", "conv1", {x, w("w1", 3, 31), g.add_constant("b1", test::random_float32({C}, 32))}, same);
  int c2 = g.add_op("conv2d", "conv2", {g.add_op("relu", "relu1", {c1}), w("w2", 3, 33)}, same);
  int r2 = g.add_op("relu", "relu2", {g.add_op("add", "diamond", {c2, c1})});
  int c3 = g.add_op("conv2d", "conv3", {r2, w("w3", 1, 34)});
  g.outputs = {c1, r2, c3};
  std::vector<NDArray> in = random_inputs(g, 1, 35)[0];
  auto expect_outputs = [&](runtime::GraphExecutor& ex, const Graph& reference, double tolerance,
                            const std::string& what) {
    std::vector<NDArray> got = ex.run(in), want = reference_run(reference, in);
    ASSERT_EQ(got.size(), 3u) << what;
    for (size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k].shape(), want[k].shape()) << what << ", output " << k;
      auto [err, scale] = test::max_error(got[k], want[k]);
      EXPECT_GT(scale, 0) << what << ", output " << k;
      EXPECT_LE(err, tolerance * scale) << what << ", output " << k;
    }
  };
  Built f = build_for(g, std::nullopt);
  expect_outputs(f.ex, g, 1e-5, "float on the CPU");
  QuantizeOptions qo;
  qo.skip_first_conv = false;
  Graph q = quantize(g, random_inputs(g, 4, 36), qo).graph;
  Built cpu = build_for(q, std::nullopt);
  expect_outputs(cpu.ex, q, 0, "int8 on the CPU");
  Built acc = build_for(q, accel::default_config());
  EXPECT_GE(acc.result.accel_report.offloaded, 3) << acc.result.graph.str();
  expect_outputs(acc.ex, q, 0, "int8 on the accelerator (fsim)");
}

TEST(AccelModel, ConvTilingsComeFromTheBuildOptions) {
  Graph g = chain();
  QuantizeOptions qo;
  qo.skip_first_conv = false;
  Graph q = quantize(g, random_inputs(g, 4, 10), qo).graph;
  Built plain = build_for(q, accel::default_config());
  BuildOptions o;
  o.accel = accel::default_config();
  std::vector<ops::ConvShape> asked;
  o.accel_conv_tiling = [&](const ops::ConvShape& c) -> std::optional<ops::AccelConvTiling> {
    asked.push_back(c);
    return ops::AccelConvTiling{1, c.out_w, 1, 1};  // one output row of one block per tile, no virtual threads
  };
  BuildResult r = build(q, o);
  ASSERT_EQ(asked.size(), 3u);
  EXPECT_EQ(asked[0].out_h, 14);
  EXPECT_EQ(asked[2].stride, 2);
  EXPECT_TRUE(asked[0].bias);
  runtime::GraphExecutor ex = runtime::GraphExecutor::from_model_file(r.file, g.name);
  for (auto& in : random_inputs(g, 2, 30))
    expect_equal(ex.run(in)[0], plain.ex.run(in)[0], "row tiles vs the default tiling");
  o.accel_conv_tiling = [](const ops::ConvShape&) {
    return std::optional<ops::AccelConvTiling>(ops::AccelConvTiling{5, 14, 1, 1});
  };
  std::string e = test::error_text<Error>([&] { build(q, o); });
  EXPECT_NE(e.find("node 'conv1_int8_accel'"), std::string::npos) << e;
  EXPECT_NE(e.find("tiling given for this conv2d"), std::string::npos) << e;
  EXPECT_NE(e.find("h_block 5 does not divide the 14 output rows"), std::string::npos) << e;
}

// Whole ResNet-18 (built-in, deterministic random weights; 64x64 images keep CI short): every int8
// convolution and residual add on the accelerator, bit-exact against the CPU int8 model under
// every fsim interleaving of the load, compute and store modules.
TEST(AccelModel, ResNet18OnFsimEqualsCpuInt8BitForBit) {
  Graph g = builtin_model("resnet18", 1, 64);
  Graph q = quantize(g, random_inputs(g, 4, 1)).graph;
  Built cpu = build_for(q, std::nullopt);
  Built acc = build_for(q, accel::default_config());
  auto x = random_inputs(g, 1, 55)[0];
  NDArray want = cpu.ex.run(x)[0];
  for (const char* order : {"load_first", "store_first", "random"}) {
    runtime::ExecutorOptions eo;
    std::string cfg = accel::default_config().to_json();
    cfg = cfg.substr(0, cfg.rfind('}')) + R"(, "fsim": {"interleave": ")" + order + R"(", "seed": 9}})";
    eo.accel_config_json = cfg;
    auto ex = runtime::GraphExecutor::from_model_file(acc.result.file, "resnet18", eo);
    expect_equal(ex.run(x)[0], want, std::string("interleave ") + order);
  }
  runtime::ExecutorOptions bad;
  std::string cfg = accel::default_config().to_json();
  bad.accel_config_json = cfg.substr(0, cfg.rfind('}')) + R"(, "fsim": {"interleave": "sideways"}})";
  std::string msg =
      test::error_text<ConfigError>([&] { runtime::GraphExecutor::from_model_file(acc.result.file, "resnet18", bad); });
  EXPECT_NE(
      msg.find("fsim backend: option \"interleave\" must be one of load_first, store_first, random, got \"sideways\""),
      std::string::npos)
      << msg;
  bad.accel_config_json = cfg.substr(0, cfg.rfind('}')) + R"(, "fsim": {"interleave": "random", "seed": -3}})";
  msg =
      test::error_text<ConfigError>([&] { runtime::GraphExecutor::from_model_file(acc.result.file, "resnet18", bad); });
  EXPECT_NE(msg.find("option \"seed\" must be an integer in [0, 1000000000000000000], got -3"), std::string::npos)
      << msg;
  // All convolutions but the float first one, the 8 residual adds and the classifier.
  EXPECT_EQ(acc.result.accel_report.offloaded, 19 + 8 + 1);
  EXPECT_EQ(count_ops(acc.result.graph, "accel_dense"), 1);
  EXPECT_EQ(count_ops(acc.result.graph, "accel_pack"), 2) << "one pack after the max-pool, one after the global pool:\n"
                                                          << acc.result.graph.str();
  auto inputs = random_inputs(g, 2, 99);
  for (auto& in : inputs) expect_equal(acc.ex.run(in)[0], cpu.ex.run(in)[0], "resnet18 accelerator vs CPU int8");
}

// Shapes that are not whole blocks: 3 and 24 channels, a 13x17 image, a 5x5 stride-2 kernel, a
// residual add on 24 channels and a 40 -> 1000 classifier are zero-padded to the config's blocks
// (and batch 1 to the batch-2 config's 2) and cropped back; bit-exact against the CPU int8 model.
Graph odd_shapes() {
  Graph g;
  g.name = "odd";
  int x = g.add_input("x", {{1, 3, 13, 17}, DataType::Float(32)});
  auto w = [&](const char* n, Shape s, uint64_t seed) {
    return g.add_constant(n, test::random_float32(s, seed, -0.3, 0.3));
  };
  auto b = [&](const char* n, int64_t c, uint64_t seed) {
    return g.add_constant(n, test::random_float32({c}, seed, -0.5, 0.5));
  };
  Attrs p1 = Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1});
  int c1 = g.add_op("relu", "relu1", {g.add_op("conv2d", "conv1", {x, w("w1", {24, 3, 3, 3}, 1), b("b1", 24, 2)}, p1)});
  int c2 = g.add_op("conv2d", "conv2", {c1, w("w2", {24, 24, 3, 3}, 3), b("b2", 24, 4)}, p1);
  int r = g.add_op("relu", "relu2", {g.add_op("add", "residual", {c2, c1})});
  Attrs s2 = Attrs().set("pads", std::vector<int64_t>{2, 2, 2, 2}).set("strides", std::vector<int64_t>{2, 2});
  int c3 =
      g.add_op("relu", "relu3", {g.add_op("conv2d", "conv3", {r, w("w3", {40, 24, 5, 5}, 5), b("b3", 40, 6)}, s2)});
  int pool =
      g.add_op("reshape", "flatten", {g.add_op("global_avg_pool2d", "pool", {c3})}, Attrs().set("shape", Shape{1, 40}));
  g.outputs = {g.add_op("dense", "fc", {pool, w("wf", {1000, 40}, 7), b("bf", 1000, 8)})};
  return g;
}

TEST(AccelModel, ShapesPaddedToBlocksEqualCpuInt8) {
  Graph g = odd_shapes();
  QuantizeOptions qo;
  qo.skip_first_conv = false;
  qo.skip_dense = false;
  Graph q = quantize(g, random_inputs(g, 4, 10), qo).graph;
  Built cpu = build_for(q, std::nullopt);
  for (const char* config : {"default", "batch2", "1x32x32"}) {
    SCOPED_TRACE(config);
    Built acc = build_for(q, accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + config + ".json"));
    EXPECT_EQ(acc.result.accel_report.offloaded, 5)
        << acc.result.graph.str();  // three convolutions, the add, the classifier
    for (auto& in : random_inputs(g, 2, 30))
      expect_equal(acc.ex.run(in)[0], cpu.ex.run(in)[0], std::string("odd shapes on ") + config);
  }
}

// One attention block as PyTorch exports it: projections as matmuls by constants with bias adds,
// heads by reshape/transpose, queries scaled by 1/4, QKᵀ, softmax, AV, the output projection and
// a residual add. 20 tokens, width 40, 2 heads of 12: nothing is a whole block.
Graph attention() {
  Graph g;
  g.name = "attention";
  int64_t T = 20, D = 40, H = 2, E = 12;
  int x = g.add_input("x", {{1, T, D}, DataType::Float(32)});
  auto linear = [&](int in, int64_t k, int64_t n, const std::string& name, uint64_t seed) {
    int w = g.add_constant(name + "_w", test::random_float32({k, n}, seed, -0.3, 0.3));
    int b = g.add_constant(name + "_b", test::random_float32({n}, seed + 1, -0.2, 0.2));
    return g.add_op("add", name + "_bias", {g.add_op("matmul", name, {in, w}), b});
  };
  auto heads = [&](int v, std::vector<int64_t> perm, const std::string& name) {
    int r = g.add_op("reshape", name + "_heads", {v}, Attrs().set("shape", Shape{T, H, E}));
    return g.add_op("transpose", name + "_t", {r}, Attrs().set("perm", std::move(perm)));
  };
  int q = heads(linear(x, D, H * E, "q", 1), {1, 0, 2}, "q");
  int k = heads(linear(x, D, H * E, "k", 3), {1, 2, 0}, "k");
  int v = heads(linear(x, D, H * E, "v", 5), {1, 0, 2}, "v");
  NDArray four = NDArray::empty({}, DataType::Float(32));
  four.set_from_double(0, 4.0);
  int qs = g.add_op("div", "q_scaled", {q, g.add_constant("four", four)});
  int p = g.add_op("softmax", "p", {g.add_op("matmul", "qk", {qs, k})}, Attrs().set("axis", int64_t(-1)));
  int o = g.add_op("transpose", "o_t", {g.add_op("matmul", "pv", {p, v})},
                   Attrs().set("perm", std::vector<int64_t>{1, 0, 2}));
  o = g.add_op("reshape", "o", {o}, Attrs().set("shape", Shape{1, T, H * E}));
  g.outputs = {g.add_op("add", "residual", {x, linear(o, H * E, D, "out", 7)})};
  return g;
}

TEST(AccelModel, AttentionOnFsimEqualsCpuInt8) {
  Graph g = attention();
  QuantizeResult r = quantize(g, random_inputs(g, 4, 40), QuantizeOptions());
  auto roles = [&](QuantRole role) { return std::count(r.annotation.role.begin(), r.annotation.role.end(), role); };
  EXPECT_EQ(roles(QuantRole::Product), 2);     // QKᵀ and AV
  EXPECT_EQ(roles(QuantRole::Rescale), 1);     // q / 4
  EXPECT_EQ(roles(QuantRole::Accumulate), 4);  // the projections, as dense layers
  Built cpu = build_for(r.graph, std::nullopt);
  Built fp = build_for(g, std::nullopt);
  for (const char* config : {"default", "batch2", "1x32x32"}) {
    SCOPED_TRACE(config);
    Built acc =
        build_for(r.graph, accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + config + ".json"));
    EXPECT_EQ(acc.result.accel_report.offloaded, 6) << acc.result.graph.str();  // 4 projections, QKᵀ, AV
    EXPECT_EQ(count_ops(acc.result.graph, "accel_conv2d"), 8) << "one kernel per head for QKᵀ and AV";
    for (auto& in : random_inputs(g, 2, 50)) {  // two inputs: weights packed at run time are uploaded every run
      NDArray got = acc.ex.run(in)[0];
      expect_equal(got, cpu.ex.run(in)[0], std::string("attention on ") + config);
      EXPECT_GT(test::cosine(got, fp.ex.run(in)[0]), 0.99);
    }
  }
}

TEST(AccelModel, ModelFileRoundTripAndBackendErrors) {
  Graph g = chain();
  QuantizeOptions qo;
  qo.skip_first_conv = false;
  Graph q = quantize(g, random_inputs(g, 2, 10), qo).graph;
  BuildOptions o;
  o.accel = accel::default_config();
  BuildResult r = build(q, o);
  ASSERT_FALSE(r.file.accel_image.empty());
  test::TestDir dir;
  std::string path = dir.file("chain.loom");
  runtime::save_model_file(path, r.file);
  auto loaded = runtime::GraphExecutor::load(path);
  auto direct = runtime::GraphExecutor::from_model_file(r.file, "chain");
  auto in = random_inputs(g, 1, 5)[0];
  expect_equal(loaded.run(in)[0], direct.run(in)[0], "saved and loaded");
  runtime::ExecutorOptions eo;
  eo.accel_backend = "nonexistent";
  std::string msg = test::error_text<Error>([&] { runtime::GraphExecutor::load(path, eo); });
  EXPECT_NE(msg.find("nonexistent"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fsim"), std::string::npos) << "names the backends there are: " << msg;
}

}  // namespace
}  // namespace loom::graph
