// What `loom compile` (cmd_model.cc) and `loom export` (cmd_export.cc) share.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#ifdef LOOM_HAVE_GRAPH
#include "loom/graph/quantize.h"
#include "loom/runtime/model_file.h"
#endif

namespace loom::tools {

// `loom compile ARGS`, or with export_only `loom export ARGS`: the same import and quantization
// options; export writes the quantized model as QDQ ONNX (-o) and compiles nothing else.
int compile_or_export(const std::vector<std::string>& args, bool export_only);
// `loom export WORKLOAD OUT`: a built-in workload compiled into a shared library (cmd_cpu.cc);
// `loom export` without --onnx-qdq.
int export_workload(const std::vector<std::string>& args);

#ifdef LOOM_HAVE_GRAPH
// How many inputs an export's check runs through ONNX Runtime, and the least cosine between its
// outputs and Loom's int8 model's that counts as the same network: ONNX's rounding of ties (to
// even, where Loom's requantization rounds up; a residual add requantized by one bit ties on every
// odd sum) moves values by steps and keeps the outputs' direction, while a wrong scale or operator
// does not (docs/quantization.md has the measured figures); with the exact rounding only the float
// layers' own rounding remains.
inline constexpr size_t kQdqCheckInputs = 2;
inline constexpr double kQdqMinCosine = 0.99;
inline constexpr double kQdqMinCosineExact = 0.9999;

// Writes `q` as QDQ ONNX to `path` and, where ONNX Runtime is installed and `int8_model` (Loom's
// int8 model compiled for this machine) is given, runs both on the first kQdqCheckInputs of
// `inputs` and reports per output the cosine, the largest error and the top-1 agreement, also into
// result["onnx_qdq"]. False when an output differs beyond rounding; true when it agrees or was not
// checked (the text says why).
// `exact_rounding`: ties rounded up as Loom does (frontend::OnnxExportOptions::round_half_up).
bool export_qdq(const graph::QuantizeResult& q, const std::string& path, bool exact_rounding,
                const runtime::ModelFile* int8_model, const std::vector<std::vector<NDArray>>& inputs,
                std::ostream& text, nlohmann::json& result);
#endif

}  // namespace loom::tools
