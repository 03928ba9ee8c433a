// Models exported by PyTorch 1.13 (scripts/export_test_models.py; torchvision ResNet-18 and
// MobileNetV2, random weights with BatchNorm statistics taken from real activations), imported
// from ONNX, quantized to int8 with per-tensor and per-channel weight scales and each calibration
// mode; the variant with per-channel weights and percentile calibration is compared with the float
// model over 100 inputs (figures in docs/results.md). Its targets: ResNet-18 cosine >= 0.99 on
// every input and top-1 agreement >= 95%; MobileNetV2's bounds guard what holds today.
#include <gtest/gtest.h>

#include <algorithm>

#include "loom/frontend/onnx.h"
#include "loom/graph/passes.h"
#include "loom/graph/quantize.h"
#include "loom/runtime/npy.h"
#include "quantize_eval.h"

namespace loom::graph {
namespace {

void check_model(const std::string& name, double want_cosine, int want_agree) {
  Graph g = frontend::import_onnx(std::string(LOOM_MODELS_DIR) + "/" + name + ".onnx");
  infer_types(g);
  auto calibration = test::random_inputs(g, 8, 1), eval = test::random_inputs(g, 100, 5000);
  // One calibration run; every variant chooses its exponents from the statistics it kept.
  const std::vector<PointCalibration> recorded = quantize(g, calibration).calibration;
  for (bool per_channel : {false, true})
    for (CalibrationMode mode : {CalibrationMode::Max, CalibrationMode::Percentile, CalibrationMode::KL}) {
      QuantizeOptions o;
      o.mode = mode;
      o.per_channel = per_channel;
      QuantizeResult q = quantize_calibrated(g, choose_exponents(recorded, o), o);
      EXPECT_GT(q.quantized_layers, 10) << name;
      // The targets hold for per-channel weights and percentile calibration; the other variants'
      // agreement is what `loom compile --quantize int8 --calibration-mode M [--per-channel]
      // --holdout 100` reports (docs/results.md).
      if (mode != CalibrationMode::Percentile || !per_channel) continue;
      test::Agreement a = test::int8_agreement(g, q.graph, eval, g.type_of(g.outputs[0]).shape.back());
      std::printf("%s int8 (%d layers int8, %d float), per-channel weights, percentile calibration: %s\n", name.c_str(),
                  q.quantized_layers, q.float_layers, a.str().c_str());
      EXPECT_EQ(a.inputs, 100) << name;
      EXPECT_GE(a.cosine_min, want_cosine) << name;
      EXPECT_GE(a.top1_agree, want_agree) << name;
    }
}

TEST(QuantizePyTorchModels, ResNet18) { check_model("resnet18", 0.99, 95); }

// The BERT-style encoder (4 post-norm layers, width 256, 4 heads, 128 tokens): every projection
// and both attention products in int8 (the defaults: per-tensor power-of-two scales, percentile
// calibration), against the float model on 20 inputs and against PyTorch's own output.
TEST(QuantizePyTorchModels, BertEncoder) {
  std::string base = std::string(LOOM_MODELS_DIR) + "/bert_encoder";
  Graph g = frontend::import_onnx(base + ".onnx");
  infer_types(g);
  QuantizeResult q = quantize(g, test::random_inputs(g, 8, 1), QuantizeOptions());
  EXPECT_EQ(q.quantized_layers, 16);
  EXPECT_EQ(std::count(q.annotation.role.begin(), q.annotation.role.end(), QuantRole::Product), 8);
  test::Agreement a = test::int8_agreement(g, q.graph, test::random_inputs(g, 20, 5000), 256);
  std::printf("bert_encoder int8: %s\n", a.str().c_str());
  EXPECT_GE(a.cosine_min, 0.99);
  NDArray x = runtime::read_npy(base + ".input0.npy"), torch = runtime::read_npy(base + ".output0.npy");
  double c = test::cosine(test::compile(q.graph).run({x})[0], torch);
  std::printf("bert_encoder int8 vs PyTorch float32 on the exported input: cosine %.5f\n", c);
  EXPECT_GE(c, 0.99);
}
TEST(QuantizePyTorchModels, MobileNetV2) { check_model("mobilenet_v2", 0.94, 65); }

}  // namespace
}  // namespace loom::graph
