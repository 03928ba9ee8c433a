// What quantization tells its user (graph::quantize_checked's report, frontend/load.h's inputs):
// the report's figures recomputed here from the two models, saturation and warnings where they
// must appear, the model's names and input checks kept by the quantized build, the calibration
// reused, and the distributions random inputs are drawn from.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/error_text.h"
#include "loom/accel/config.h"
#include "loom/frontend/load.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/quantize.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"
#include "quantize_eval.h"

namespace loom::graph {
namespace {

using test::compile;
using test::error_text;
using test::random_inputs;

std::vector<std::vector<NDArray>> scaled(std::vector<std::vector<NDArray>> sets, double k) {
  for (auto& set : sets)
    for (NDArray& a : set) {
      a = a.copy();
      for (int64_t i = 0; i < a.numel(); ++i) a.set_from_double(i, a.get_as_double(i) * k);
    }
  return sets;
}

// The report's cosine, largest error and top-1 agreement, recomputed from the float model and the
// quantized graph compiled here (not through the report's own code).
TEST(QuantizeReport, FiguresAreTheModelsOwn) {
  Graph g = builtin_model("mlp", 2);
  frontend::CalibrationSets sets = frontend::calibration_sets("6", "5", g);  // normal(0, 1)
  auto &calib = sets.calibration, &held = sets.held_out;
  QuantizeResult q = quantize_checked(g, calib, held);
  ASSERT_TRUE(q.report);
  ASSERT_TRUE(q.report->held_out);
  auto fl = compile(g), in8 = compile(q.graph);
  for (auto [set, inputs] : {std::pair{&q.report->calibration, &calib}, std::pair{&*q.report->held_out, &held}}) {
    double dot = 0, ff = 0, qq = 0, max_err = 0;
    int agree = 0, rows = 0;
    for (const auto& in : *inputs) {
      NDArray f = fl.run(in)[0], y = in8.run(in)[0];
      for (int64_t i = 0; i < f.numel(); ++i) {
        double a = f.get_as_double(i), b = y.get_as_double(i);
        dot += a * b, ff += a * a, qq += b * b;
        max_err = std::max(max_err, std::fabs(a - b));
      }
      for (int64_t r = 0; r < 2; ++r, ++rows) agree += test::argmax(f, r, 10) == test::argmax(y, r, 10);
    }
    ASSERT_EQ(set->outputs.size(), 1u);
    const OutputAgreement& o = set->outputs[0];
    EXPECT_EQ(set->inputs, int(inputs->size()));
    EXPECT_EQ(o.name, "fc3");
    EXPECT_NEAR(o.cosine, dot / std::sqrt(ff * qq), 1e-12) << set->set;
    EXPECT_DOUBLE_EQ(o.max_error, max_err) << set->set;
    EXPECT_EQ(o.classes, 10);
    EXPECT_EQ(o.rows, rows);
    EXPECT_DOUBLE_EQ(o.top1, double(agree) / rows) << set->set;
    EXPECT_GT(o.float_classes, 1);
  }
  double lowest = std::min(q.report->held_out->outputs[0].cosine, q.report->held_out->outputs[0].top1);
  EXPECT_DOUBLE_EQ(q.report->accuracy(), lowest);
  nlohmann::json j = nlohmann::json::parse(q.report->to_json());
  EXPECT_DOUBLE_EQ(j["held_out"]["outputs"][0]["cosine"].get<double>(), q.report->held_out->outputs[0].cosine);
  EXPECT_DOUBLE_EQ(j["accuracy"].get<double>(), lowest);
}

// Max calibration clips nothing it saw; held-out inputs eight times larger clip, and the report
// says so with the worst point named. Cosine and top-1 warnings appear at their thresholds.
TEST(QuantizeReport, SaturationAndWarningsAtTheirThresholds) {
  Graph g = builtin_model("mlp", 2);
  auto calib = random_inputs(g, 4, 5);
  QuantizeOptions o;
  o.mode = CalibrationMode::Max;
  QuantizeResult same = quantize_checked(g, calib, calib, o);
  for (const PointSaturation& p : same.report->saturation) {
    EXPECT_EQ(p.calibration, 0) << p.name;
    EXPECT_EQ(p.held_out, 0) << p.name;
  }
  for (const std::string& w : same.report->warnings) EXPECT_EQ(w.find("clip"), std::string::npos) << w;

  QuantizeResult big = quantize_checked(g, calib, scaled(calib, 8), o);
  double worst = 0;
  for (const PointSaturation& p : big.report->saturation) worst = std::max(worst, p.held_out);
  EXPECT_GT(worst, 0.01);
  bool warned = false;
  for (const std::string& w : big.report->warnings) warned |= w.find("clip more than 1.0%") != std::string::npos;
  EXPECT_TRUE(warned) << big.report->str();

  // The input's point (the first dense layer reads the model's input): its clipped share is the
  // share of held-out values at or past 127.5 steps of its exponent, counted here.
  const Node& input = big.float_graph.node(big.float_graph.inputs[0]);
  int exponent = 0;
  for (const PointCalibration& p : big.calibration)
    if (big.float_graph.node(p.node).name == input.name) exponent = p.exponent;
  double limit = 127.5 * std::ldexp(1.0, exponent), clipped = 0, values = 0;
  for (const auto& set : scaled(calib, 8))
    for (int64_t i = 0; i < set[0].numel(); ++i, ++values) clipped += std::fabs(set[0].get_as_double(i)) >= limit;
  bool found = false;
  for (const PointSaturation& p : big.report->saturation)
    if (p.name == input.name) {
      found = true;
      EXPECT_DOUBLE_EQ(p.held_out, clipped / values);
      EXPECT_GT(p.held_out, 0.1);
    }
  EXPECT_TRUE(found) << "no calibration point at the input '" << input.name << "'";

  // A threshold just above the measured cosine warns; just below, it does not.
  double c = same.report->held_out->outputs[0].cosine;
  for (double threshold : {c + 1e-9, c - 1e-9}) {
    AccuracyThresholds t;
    t.min_cosine = threshold;
    t.min_top1 = 0;
    QuantizeResult r = quantize_checked(g, calib, calib, o, t);
    bool cos_warned = false;
    for (const std::string& w : r.report->warnings) cos_warned |= w.find("cosine") != std::string::npos;
    EXPECT_EQ(cos_warned, threshold > c) << threshold;
  }
}

// A float model whose output is the same whatever the input: the report says agreement means
// little, and top-1 agreement (one class for every row) means nothing.
TEST(QuantizeReport, DegenerateFloatModelIsNamed) {
  Graph g;
  int x = g.add_input("x", {{1, 16}, DataType::Float(32)});
  NDArray w = NDArray::zeros({4, 16}, DataType::Float(32)), b = NDArray::zeros({4}, DataType::Float(32));
  b.set_from_double(2, 3.0);
  int d = g.add_op("dense", "scores", {x, g.add_constant("w", w), g.add_constant("b", b)});
  g.outputs = {d};
  auto calib = random_inputs(g, 4, 1);
  QuantizeResult q = quantize_checked(g, calib, random_inputs(g, 4, 2));
  const OutputAgreement& o = q.report->held_out->outputs[0];
  EXPECT_TRUE(o.float_constant);
  EXPECT_EQ(o.float_classes, 1);
  EXPECT_FALSE(o.top1_meaningful());
  std::string all;
  for (const std::string& s : q.report->warnings) all += s + "\n";
  EXPECT_NE(all.find("picks one class for all 4 rows"), std::string::npos) << all;
  EXPECT_NE(all.find("the same for every input"), std::string::npos) << all;
}

// Outputs keep the model's names through quantization (the dequantize that now produces them) and
// the build, on the CPU and with accelerator layers.
TEST(QuantizeReport, OutputNamesSurviveQuantizationAndBuild) {
  Graph g = builtin_model("resnet18", 1, 32);
  g.node(g.outputs[0]).name = "logits";
  QuantizeResult q = quantize(g, random_inputs(g, 2, 3));
  ASSERT_EQ(q.graph.output_names(), std::vector<std::string>{"logits"});
  EXPECT_EQ(compile(q.graph).output_spec(0).name, "logits");
  BuildOptions bo;
  bo.accel = accel::default_config();
  auto ex = runtime::GraphExecutor::from_model_file(build(q.graph, bo).file, "accel");
  ASSERT_TRUE(ex.uses_accelerator());
  EXPECT_EQ(ex.output_spec(0).name, "logits");
}

// NaN or infinity into a quantized model is an error naming the input (its int8 layers would make
// plausible numbers of it), unless allowed; the float model propagates NaN.
TEST(QuantizeReport, QuantizedModelsRefuseNonFiniteInputs) {
  Graph g = builtin_model("mlp");
  g.node(g.inputs[0]).name = "pixels";
  QuantizeResult q = quantize(g, random_inputs(g, 2, 3));
  runtime::ModelFile file = build(q.graph).file;
  NDArray x = random_inputs(g, 1, 9)[0][0];
  x.set_from_double(17, std::numeric_limits<double>::quiet_NaN());
  x.set_from_double(30, std::numeric_limits<double>::infinity());
  auto ex = runtime::GraphExecutor::from_model_file(file, "int8");
  std::string e = error_text<RuntimeError>([&] { ex.run({x}); });
  EXPECT_NE(e.find("input 'pixels' holds 2 NaN or infinite values (the first at element 17"), std::string::npos) << e;
  EXPECT_NE(e.find("--allow-non-finite"), std::string::npos) << e;
  runtime::ExecutorOptions allow;
  allow.allow_non_finite = true;
  auto lenient = runtime::GraphExecutor::from_model_file(file, "int8", allow);
  EXPECT_NO_THROW(lenient.run({x}));
  NDArray y = compile(g).run({x})[0];
  bool nan = false;
  for (int64_t i = 0; i < y.numel(); ++i) nan |= std::isnan(y.get_as_double(i));
  EXPECT_TRUE(nan) << "the float model lets NaN through";
}

// A recorded calibration gives the same quantized model without running the float model again;
// one recorded from other options is refused.
TEST(QuantizeReport, RecordedCalibrationGivesTheSameModel) {
  Graph g = builtin_model("resnet18", 1, 32);
  auto calib = random_inputs(g, 2, 4);
  QuantizeResult q = quantize(g, calib);
  QuantizeResult again = quantize_calibrated(g, q.calibration);
  NDArray x = random_inputs(g, 1, 77)[0][0];
  NDArray a = compile(q.graph).run({x})[0], b = compile(again.graph).run({x})[0];
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.get_as_double(i), b.get_as_double(i)) << i;
  QuantizeOptions all_convs;
  all_convs.skip_first_conv = false;
  std::string e = error_text<ModelError>([&] { quantize_calibrated(g, q.calibration, all_convs); });
  EXPECT_NE(e.find("not this graph's"), std::string::npos) << e;
}

// Random inputs come from normal(0, 1) by default, from what the model records, or from what the
// caller chooses; a malformed distribution is an error naming where it came from.
TEST(CalibrationInputs, DistributionsDefaultsAndErrors) {
  Graph g;
  g.add_input("image", {{1, 3, 32, 32}, DataType::Float(32)});
  g.outputs = {g.add_op("relu", "y", {g.inputs[0]})};
  auto stats = [](const std::vector<std::vector<NDArray>>& sets) {
    double sum = 0, sq = 0, lo = 1e30, hi = -1e30, n = 0;
    for (auto& s : sets)
      for (int64_t i = 0; i < s[0].numel(); ++i) {
        double v = s[0].get_as_double(i);
        sum += v, sq += v * v, lo = std::min(lo, v), hi = std::max(hi, v), ++n;
      }
    double mean = sum / n;
    return std::array<double, 4>{mean, std::sqrt(sq / n - mean * mean), lo, hi};
  };
  frontend::CalibrationSets d = frontend::calibration_sets("8", "auto", g);
  ASSERT_EQ(d.calibration.size(), 8u);
  ASSERT_EQ(d.held_out.size(), 8u);
  auto s = stats(d.calibration);
  EXPECT_NEAR(s[0], 0, 0.03);
  EXPECT_NEAR(s[1], 1, 0.03);
  EXPECT_LT(s[2], -3);  // a normal's tails, which uniform(-1, 1) never had
  EXPECT_NE(d.calibration[0][0].get_as_double(0), d.held_out[0][0].get_as_double(0));

  g.metadata["loom.input_distribution.image"] = "uniform(0, 1)";
  s = stats(frontend::calibration_set("4", g));
  EXPECT_GE(s[2], 0);
  EXPECT_LE(s[3], 1);
  EXPECT_NEAR(s[0], 0.5, 0.03);
  s = stats(frontend::calibration_set("4", g, frontend::InputDistribution::parse("normal(5, 0.5)", "test")));
  EXPECT_NEAR(s[0], 5, 0.03);
  EXPECT_NEAR(s[1], 0.5, 0.03);

  g.metadata["loom.input_distribution.image"] = "uniform(1, 0)";
  std::string e = error_text<ModelError>([&] { frontend::calibration_set("4", g); });
  EXPECT_NE(e.find("metadata 'loom.input_distribution.image': 'uniform(1, 0)' needs LO < HI"), std::string::npos) << e;
  for (const char* bad : {"gauss(0, 1)", "normal(0)", "normal(0, -1)", "uniform(a, 1)", "normal(0, 1"})
    EXPECT_NE(error_text<Error>([&] {
                frontend::InputDistribution::parse(bad, "--input-distribution");
              }).find("--input-distribution: '"),
              std::string::npos)
        << bad;
  EXPECT_NE(error_text<Error>([&] { frontend::check_calibration_options("16", "lots"); }).find("--holdout 'lots'"),
            std::string::npos);
  EXPECT_NE(error_text<Error>([&] { frontend::check_calibration_options("0", "auto"); }).find("--calibrate '0'"),
            std::string::npos);
}

}  // namespace
}  // namespace loom::graph
