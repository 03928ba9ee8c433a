// ONNX Runtime as `loom compare`'s reference for ONNX files: onnxruntime-node (scripts/bootstrap.sh
// installs it into build/ort; $LOOM_ORT_DIR names another folder holding node_modules) run by
// `node` on a copy of the model whose intermediate values are outputs. The runner script is
// written to a scratch folder with the inputs; values come back as raw files with a manifest.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "loom/runtime/ndarray.h"

namespace loom::tools {

// Why ONNX Runtime cannot run here ("" when it can): no `node`, or no onnxruntime-node.
std::string ort_unavailable();

struct OrtRun {
  std::string version;                    // onnxruntime-node's
  std::map<std::string, NDArray> values;  // the outputs asked for, by name
};

// Runs the serialized model (`model_bytes`) on `inputs` (by input name) and returns the values of
// `outputs` (float32 values of its graph). Error with ONNX Runtime's message when it fails.
// `optimize`: ONNX Runtime's graph optimizations on (its fused int8 kernels for a QDQ model); off,
// each operator computes as written.
OrtRun run_ort(const std::string& model_bytes, const std::vector<std::pair<std::string, NDArray>>& inputs,
               const std::vector<std::string>& outputs, bool optimize = false);

}  // namespace loom::tools
