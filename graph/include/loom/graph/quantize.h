// Post-training int8 quantization of a float graph (TVM's relay.quantize: annotate -> calibrate
// -> realize), with power-of-two scales so that every requantization is an add, an arithmetic
// shift and a clamp — what a GEMM-block accelerator's ALU computes — and the CPU's int8 kernels
// and the accelerator agree bit for bit.
//
//   QuantizeOptions o;                          // percentile calibration, first conv kept float
//   QuantizeResult q = quantize(graph, calibration_inputs, o);
//   build(q.graph) ...                          // int8 conv/dense/add, float elsewhere
//
// A value v is stored as the int8 q with v = q * 2^e; e (the exponent) is chosen per tensor by
// calibration for activations and from the largest magnitude for weights. Convolutions and
// dense layers multiply int8 by int8 into int32 (bias in int32 at exponent e_x + e_w), and
// `requantize` shifts the accumulator to the output's exponent, folding a following relu into
// its clamp. Residual adds align both int8 operands to the smaller exponent (`add_shifted`) and
// requantize. Max pooling and relu stay int8; every other operator reads a `dequantize`d value.
// The simulated mode builds the same graph in float32 with `fake_quantize` (round, clamp,
// rescale) at the same points, so the loss of each layer can be compared with the float model.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "loom/codegen/llvm.h"
#include "loom/graph/graph.h"
#include "loom/runtime/model_file.h"

namespace loom::graph {

enum class CalibrationMode { Max, Percentile, KL };
const char* to_string(CalibrationMode m);
CalibrationMode parse_calibration_mode(const std::string& s);  // "max", "percentile", "kl"; ModelError otherwise

struct QuantizeOptions {
  CalibrationMode mode = CalibrationMode::Percentile;
  double percentile = 99.9;     // of |x|, for CalibrationMode::Percentile (99.9: see docs/quantization.md)
  bool skip_first_conv = true;  // the convolution reading the image stays float (TVM's default)
  bool skip_dense = false;      // dense layers (the classifier) stay float
  bool simulated = false;       // fake_quantize in float32 instead of int8 operators
  // Per-output-channel weight scales (max |w_c| / 127), requantized with fixed-point multipliers
  // (requantize_channel): CPU only; the accelerator's requantize is a shift.
  bool per_channel = false;
  // The power-of-two steps of conv2d/dense weights: one exponent per tensor, or one per output
  // channel (its accumulator requantized by its own shift: requantize_channel with power-of-two
  // multipliers, which the accelerator runs as per-channel shifts on its ALU). Auto: per channel
  // below 8-bit weights, where one step for a whole tensor leaves the channels of small weights
  // few levels; per tensor at 8 bits. Auto follows weight_bits, the model's width, for every layer
  // (layers of layer_weight_bits too). per_channel's multipliers take precedence over Auto.
  enum class WeightExponents { Auto, PerTensor, PerChannel };
  WeightExponents weight_exponents = WeightExponents::Auto;
  bool channel_exponents() const;  // weight_exponents resolved
  // Widths of the quantized values, held in int8 containers: conv2d/dense weights in weight_bits
  // (2, 4 or 8) and every int8 activation in activation_bits (4 or 8), each a symmetric range of
  // power-of-two steps (a 4-bit weight: [-7, 7] x 2^e). An accelerator target sets both from its
  // config (follow_targets in build.h); the CPU runs the same narrow model bit for bit.
  int weight_bits = 8;
  int activation_bits = 8;
  // Mixed precision: weight widths per layer, a conv2d/dense node's name -> 2, 4 or 8 (the layers
  // not named take weight_bits). choose_weight_bits picks them from each layer's sensitivity.
  std::map<std::string, int> layer_weight_bits;
  // Weights wider than this (when set) run as passes of signed digits this wide, on an
  // accelerator with narrower multipliers (accel::AccelConfig::weight_widths): they take the
  // symmetric part of the range the digits sum to, 119 levels for 8 bits in two 4-bit passes.
  // follow_targets sets it to the config's wgt_bits when that is narrower than 8 bits.
  int weight_digit_bits = 0;
  // The largest magnitude of a weight (`bits` wide: 2^(bits-1) - 1, or the digits' sum) or an
  // activation (2^(bits-1) - 1).
  int weight_levels() const { return weight_levels(weight_bits); }
  int weight_levels(int bits) const;
  int activation_levels() const { return (1 << (activation_bits - 1)) - 1; }
  // The weight width of a conv2d/dense layer: its entry in layer_weight_bits, else weight_bits.
  int weight_bits_of(const std::string& layer) const;
  // ConfigError naming the field for widths other than the above.
  void validate() const;
  // "W4A8": weight_bits 4, activation_bits 8 (case-insensitive); ConfigError for other spellings
  // or widths. precision() is the inverse.
  void set_precision(const std::string& name);
  std::string precision() const;
  int histogram_bins = 2048;  // for percentile and KL calibration
  // Percentile and KL calibration read every value twice (its largest magnitude, then a histogram
  // over it): the observed values of up to this many bytes stay in memory between the two
  // readings, and only the calibration inputs beyond it run the model a second time.
  int64_t calibration_memory_bytes = int64_t(512) << 20;
  codegen::LLVMOptions llvm;  // target of the calibration runs (host by default)
};

const char* to_string(QuantizeOptions::WeightExponents e);  // "auto", "tensor", "channel"
// ConfigError naming the choices for other spellings.
QuantizeOptions::WeightExponents parse_weight_exponents(const std::string& s);

// The right shift of each output channel a requantize_channel node applies when its multipliers
// are a constant vector of powers of two (channel c: shift - log2(multiplier c), as a quantizer's
// per-channel exponents give); nullopt for any other node.
std::optional<std::vector<int>> channel_shifts(const Graph& g, const Node& requantize_channel);

// Which nodes annotate chose and the values calibration measures.
enum class QuantRole : uint8_t {
  Float,        // stays float
  Accumulate,   // conv2d / dense computed int8 x int8 -> int32, then requantized
  Add,          // residual add of two int8 values
  FoldedRelu,   // relu folded into the requantization of its only input
  PassThrough,  // max_pool2d / relu / data movement on an int8 value, stays int8 with the same exponent
  Product,      // matmul of two activations computed int8 x int8 -> int32, then requantized
  Rescale,      // an int8 value times a power of two: the same int8 values at a moved exponent
};
struct QuantizeAnnotation {
  std::vector<QuantRole> role;  // per node id
  std::vector<int> points;      // values that need an exponent (calibration points), ascending ids
  std::string str(const Graph& g) const;
};

// Calibration statistics per point and the exponents chosen from them.
struct PointCalibration {
  int node = -1;
  double max_abs = 0;    // over the whole calibration set
  double threshold = 0;  // the clipping threshold the mode chose (<= max_abs)
  int exponent = 0;      // value = q * 2^exponent; threshold <= 127 * 2^exponent
  // Counts of |x| over [0, max_abs) in equal bins, kept by percentile and KL calibration (empty
  // after max calibration) so that choose_exponents can apply another mode without a run.
  std::vector<double> histogram;
};

// ---- How far the quantized model is from the float one (quantize_checked) ----

// When a report warns (docs/quantization.md#the-accuracy-report): an output's cosine with the float
// model below min_cosine, a classifier's top-1 agreement below min_top1, or a calibration point
// whose values beyond the int8 range exceed max_saturation of them. Read on the held-out inputs
// (the calibration inputs when there are none).
struct AccuracyThresholds {
  double min_cosine = 0.95;
  double min_top1 = 0.9;
  double max_saturation = 0.01;
};

// One output of the model over one set of inputs.
struct OutputAgreement {
  std::string name;
  double cosine = 1;     // of the quantized and float outputs over the whole set, as one vector
  double max_error = 0;  // largest |quantized - float|
  double max_float = 0;  // largest |float|: the scale max_error is read against
  // Classifiers ([rows, classes] outputs with at least two classes): the share of rows whose
  // largest score is the same class, and how many distinct classes the float model picked.
  int classes = 0;  // 0: not a classifier output
  int rows = 0;
  double top1 = 1;
  int float_classes = 0;
  bool float_constant = false;  // the float output is the same for every input of the set
  // Top-1 agreement means something: a classifier whose float model picks more than one class.
  bool top1_meaningful() const { return classes > 0 && float_classes > 1; }
};
// One output's agreement accumulated over a set of inputs: a reference's values (the float model's
// in the quantization report; Loom's int8 model's in `loom export`'s check) against another
// model's. add() each input's pair of values, then result(): the cosine over the whole set, the
// largest error, and for a float [rows, classes] output with at least two classes the top-1
// agreement (OutputAgreement's "float" is the reference).
class OutputAgreementSums {
 public:
  // `type`: the output's; `several_inputs`: whether a constant reference output is worth noting.
  OutputAgreementSums(std::string name, const TensorType& type, bool several_inputs);
  // Error naming the output when the two have different numbers of values.
  void add(const NDArray& reference, const NDArray& other);
  OutputAgreement result() const;

 private:
  double dot_ = 0, ff_ = 0, qq_ = 0;
  OutputAgreement a_;
  int agree_ = 0;
  std::set<int64_t> reference_classes_;
  NDArray first_;  // the reference output of the set's first input
};

struct SetAgreement {
  std::string set;     // "calibration" or "held-out"
  std::string source;  // what the inputs are (the caller's words: "16 random inputs, normal(0, 1)")
  int inputs = 0;
  std::vector<OutputAgreement> outputs;
};
// The share of a calibration point's float values beyond the int8 range its exponent gives
// (|v| >= 127.5 * 2^e: clipped by quantization).
struct PointSaturation {
  int node = -1;  // in QuantizeResult::float_graph
  std::string name;
  double calibration = 0, held_out = 0;
};
struct QuantizeReport {
  SetAgreement calibration;
  std::optional<SetAgreement> held_out;
  std::vector<PointSaturation> saturation;  // one per calibration point
  AccuracyThresholds thresholds;
  std::vector<std::string> warnings;  // each a sentence naming the output or layer and the figure
  // The lowest figure of the held-out set (else the calibration set): every output's cosine and
  // each meaningful top-1 agreement.
  double accuracy() const;
  const SetAgreement& judged() const { return held_out ? *held_out : calibration; }
  std::string str() const;      // a table for people
  std::string to_json() const;  // the same figures as a JSON object
};

// The scale of every quantized value and constant of a realized graph, by node name: what an
// export that writes the scales beside the integers needs (frontend/onnx_export.h), since the
// graph's integer operators carry only the shifts between them.
struct QuantizedScales {
  // int8 values (quantize, requantize, requantize_channel, fake_quantize and the int8 data
  // movement after them): value = q * 2^exponent. A value that a power-of-two multiplication
  // rescales keeps its producer's exponent here; its readers' shifts carry the rescaling.
  std::map<std::string, int> exponents;
  // int8 weights and int32 biases: value = q * scale, one scale for the whole constant or one per
  // slice of dimension 0 (per output channel).
  std::map<std::string, std::vector<double>> constants;
};

struct QuantizeResult {
  Graph graph;                           // the quantized (or simulated) graph, typed, in NCHW
  QuantizedScales scales;                // of `graph`'s int8 values and quantized constants
  Graph float_graph;                     // the float graph the annotation and calibration points refer to
  std::optional<QuantizeReport> report;  // quantize_checked only
  QuantizeAnnotation annotation;
  std::vector<PointCalibration> calibration;  // one per annotation point
  int quantized_layers = 0;                   // conv2d/dense nodes computed in int8
  int float_layers = 0;                       // conv2d/dense nodes left in float
  double calibration_seconds = 0;
  std::string str() const;  // a table: point, max, threshold, exponent
};

// The three passes; quantize() runs them in order after infer_types, simplify_inference and
// fold_constants (BatchNorm folded first, as the float model computes it).
QuantizeAnnotation annotate_quantization(const Graph& g, const QuantizeOptions& options);
// Runs the float graph on every calibration input (each a full set of graph inputs), compiled
// with the LLVM backend, and picks one exponent per point. ModelError if `inputs` is empty or an
// input does not match the graph.
std::vector<PointCalibration> calibrate(const Graph& g, const QuantizeAnnotation& annotation,
                                        const std::vector<std::vector<NDArray>>& inputs,
                                        const QuantizeOptions& options);
// The thresholds and exponents of a calibration chosen again for options.mode and
// options.percentile from the statistics it kept: trying every mode costs one calibration run.
// ModelError if the mode needs histograms and the calibration has none (it was recorded in max
// mode, or read back from a file that keeps only exponents).
std::vector<PointCalibration> choose_exponents(std::vector<PointCalibration> calibration,
                                               const QuantizeOptions& options);
// Exponent for a clipping threshold (the smallest e with threshold <= levels * 2^e; 127 for int8).
int exponent_for(double threshold, int levels = 127);
// The clipping threshold of a histogram of |x| over [0, max_abs) for the mode.
double choose_threshold(const std::vector<double>& histogram, double max_abs, const QuantizeOptions& options);
// With `scales`, also the scale of every int8 value and quantized constant of the result.
Graph realize_quantization(const Graph& g, const QuantizeAnnotation& annotation,
                           const std::vector<PointCalibration>& calibration, const QuantizeOptions& options,
                           QuantizedScales* scales = nullptr);

QuantizeResult quantize(Graph g, const std::vector<std::vector<NDArray>>& calibration_inputs,
                        const QuantizeOptions& options = {});
// quantize() with a calibration recorded earlier (QuantizeResult::calibration of the same graph
// and options, or choose_exponents of it for another mode): no calibration runs. ModelError if its
// points are not the graph's.
QuantizeResult quantize_calibrated(Graph g, const std::vector<PointCalibration>& calibration,
                                   const QuantizeOptions& options = {});
// The quantized graph compiled for the CPU, as quantize_checked's report runs it. A caller that
// compiles the quantized graph for the CPU anyway passes its build here, so it is compiled once.
using QuantizedBuild = std::function<runtime::ModelFile(const Graph& quantized)>;
// quantize(), then the quantized model (int8 on the CPU, bit-exact with the accelerator) run
// beside the float model on the calibration inputs and on `held_out` (may be empty), into
// QuantizeResult::report. The float model is compiled once for calibration and the check; the
// quantized one by `build_quantized` (default: graph::build with options.llvm).
QuantizeResult quantize_checked(Graph g, const std::vector<std::vector<NDArray>>& calibration_inputs,
                                const std::vector<std::vector<NDArray>>& held_out, const QuantizeOptions& options = {},
                                const AccuracyThresholds& thresholds = {}, const QuantizedBuild& build_quantized = {});

// ---- Mixed precision: a weight width per layer (choose_weight_bits) ----

struct LayerSensitivity {
  std::string layer;  // a conv2d/dense node of the float graph
  double cosine = 1;  // the model's agreement with the float one with only this layer narrow
};
struct WeightBitsChoice {
  std::map<std::string, int> layer_weight_bits;  // the layers widened (QuantizeOptions::layer_weight_bits)
  std::vector<LayerSensitivity> sensitivity;     // every quantized layer, most sensitive first
  double cosine = 1;                             // the chosen model's agreement on the calibration inputs
  double narrow_cosine = 1;                      // every layer at options.weight_bits
  double wide_cosine = 1;                        // every layer wide
  bool met = true;  // false: even every layer wide misses the budget (then all are widened)
  int models_compiled = 0;
  std::string str() const;  // a table for people
};
// Picks each quantized conv2d/dense layer's weight width, options.weight_bits or `wide`: each
// layer's sensitivity is the model's agreement with the float model (the lowest cosine over its
// outputs, each over the calibration inputs) when only that layer is narrow; the fewest most
// sensitive layers are widened that bring the agreement to min_cosine. The models compared are
// the int8 models compiled for the CPU (one calibration for all: about L + log2 L + 3 compiles for
// L layers). ConfigError for a budget outside (0, 1], `wide` not wider than weight_bits, or options
// that already name layers.
WeightBitsChoice choose_weight_bits(const Graph& g, const std::vector<std::vector<NDArray>>& calibration_inputs,
                                    const QuantizeOptions& options, int wide, double min_cosine);

}  // namespace loom::graph
