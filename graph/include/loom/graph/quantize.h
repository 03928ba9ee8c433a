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
#include <map>
#include <string>
#include <vector>

#include "loom/codegen/llvm.h"
#include "loom/graph/graph.h"

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
  int histogram_bins = 2048;  // for percentile and KL calibration
  codegen::LLVMOptions llvm;  // target of the calibration runs (host by default)
};

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
};

struct QuantizeResult {
  Graph graph;  // the quantized (or simulated) graph, typed, in NCHW
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
// Exponent for a clipping threshold (the smallest e with threshold <= 127 * 2^e).
int exponent_for(double threshold);
// The clipping threshold of a histogram of |x| over [0, max_abs) for the mode.
double choose_threshold(const std::vector<double>& histogram, double max_abs, const QuantizeOptions& options);
Graph realize_quantization(const Graph& g, const QuantizeAnnotation& annotation,
                           const std::vector<PointCalibration>& calibration, const QuantizeOptions& options);

QuantizeResult quantize(Graph g, const std::vector<std::vector<NDArray>>& calibration_inputs,
                        const QuantizeOptions& options = {});

}  // namespace loom::graph
