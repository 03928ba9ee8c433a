// ONNX export: a Loom graph written back as an ONNX model, so that another runtime runs the very
// network Loom compiled. Float operators become their ONNX operators. In a quantized graph
// (graph::quantize) every int8 value becomes a uint8 tensor with its scale, in the standard
// QuantizeLinear/DequantizeLinear ("QDQ") form ONNX Runtime's int8 kernels fuse:
//
//   q = QuantizeLinear(x, 2^e, zp)          a value quantized from float (zp 128: Loom's int8
//                                           range [-128, 127] exactly; zp 0 after a folded ReLU)
//   y = Conv(DequantizeLinear(q), DequantizeLinear(w int8, 2^e_w), DequantizeLinear(b int32))
//   QuantizeLinear(y, 2^e_out, zp) [Clip]   requantize: the clamp of a folded ReLU6 or of the
//                                           int8 range after a ReLU as a uint8 Clip
//
// with the scales Loom's quantizer chose (graph::QuantizedScales), so the integers are Loom's up to
// rounding: ONNX rounds halves to even where Loom's requantization rounds them up (a residual add
// requantized by one bit ties on every odd sum). With round_half_up the export adds half an
// accumulator unit before each requantizing QuantizeLinear, which makes every tie Loom's: the same
// integers exactly, but ONNX Runtime no longer fuses those groups into its int8 kernels. Max
// pooling, ReLU and data movement on an int8 value act on the uint8 tensor, as Loom's int8
// operators do.
#pragma once
#include <string>

#include "loom/graph/graph.h"
#include "loom/graph/quantize.h"

namespace loom::frontend {

struct OnnxExportOptions {
  int opset = 17;  // of the default domain; 13 is the oldest with per-channel DequantizeLinear
  // Ties rounded up as Loom's requantization rounds them (above): exact, not fused by ONNX Runtime.
  // Needs power-of-two scales (per-channel fixed-point multipliers are ModelError).
  bool round_half_up = false;
};

// The serialized ModelProto of `g` (typed, NCHW: as import_onnx or graph::quantize leave it, not a
// built graph's packed layouts). `scales` gives a quantized graph's scales (QuantizeResult::scales);
// a float graph needs none. ModelError naming the node for an operator or attribute with no ONNX
// form here, an int8 value or constant whose scale `scales` lacks, an int8 output, or shape
// variables.
std::string export_onnx(const graph::Graph& g, const graph::QuantizedScales& scales = {},
                        const OnnxExportOptions& options = {});

}  // namespace loom::frontend
