// ONNX importer: an ONNX model (up to opset 18; each operator from the oldest opset whose form
// the importer reads, so opsets 11-18 as PyTorch, torchvision and most exporters write
// them) becomes a graph::Graph. Initializers and Constant nodes become constants; external data
// files are read relative to the model; shape computations on constants (Shape, Gather, Slice,
// Concat, Cast, ...) are evaluated during import so shapes stay static. Any unsupported operator,
// attribute or dynamic shape is a ModelError naming the node, its op type and what is supported;
// an input whose value an operator needs at compile time is an InputValuesNeeded.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "loom/graph/graph.h"
#include "loom/runtime/error.h"

namespace loom::frontend {

struct OnnxImportOptions {
  // Shapes for inputs whose dimensions are symbolic (e.g. a batch dimension "N").
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // Named dimensions (dim_param) that stay symbolic, each with its range: the graph's shape
  // variables (docs/dynamic_shapes.md). The model is imported at a few points of the ranges and
  // must have the same structure at each.
  std::vector<graph::ShapeVar> shape_vars;
  // Values of inputs fixed at compile time (axes, shapes, pads or bounds that a model takes as
  // inputs): such an input becomes a constant and is no longer an input of the compiled model.
  // The value must have the input's element type and shape.
  std::map<std::string, NDArray> input_values;
  // Bind an input of input_values only where an operator needs it as a constant (an axis, a
  // shape); the others stay run-time inputs. Off: every input of input_values is bound.
  bool bind_only_where_needed = false;
  // When set, receives each ONNX value's graph node by name (initializers, inputs and node
  // outputs; a value folded at import is a constant node).
  std::map<std::string, int>* value_nodes = nullptr;
};

// What the import throws when an operator needs the value of run-time inputs at compile time (a
// shape, axes, sizes, a bound, a condition): `inputs` names the model's inputs that value is
// computed from. Bind them (OnnxImportOptions::input_values), or let an OnnxSession compile the
// model per value at run time (frontend/session.h).
class InputValuesNeeded : public loom::ModelError {
 public:
  InputValuesNeeded(const std::string& message, std::vector<std::string> inputs)
      : loom::ModelError(message), inputs(std::move(inputs)) {}
  std::vector<std::string> inputs;
};

graph::Graph import_onnx(const std::string& path, const OnnxImportOptions& options = {});
// From the bytes of a .onnx file; `base_dir` resolves external data, `origin` names it in errors.
graph::Graph import_onnx_bytes(const std::string& bytes, const std::string& origin, const std::string& base_dir,
                               const OnnxImportOptions& options = {});

// A serialized ONNX TensorProto (the input_*.pb / output_*.pb files of ONNX's test data, or a
// tensor an exporter wrote) as an NDArray. ModelError naming the file for one that does not parse
// or whose element type Loom does not have.
NDArray read_onnx_tensor(const std::string& path);

// The ONNX model at `path` with the float32 values `outputs` (by name) added to its graph's outputs,
// serialized: what ONNX Runtime needs to return a model's intermediate values (`loom compare`'s
// reference). ModelError naming the file for a model whose weights are in external data files.
std::string onnx_with_outputs(const std::string& path, const std::vector<std::string>& outputs);

// The ONNX operator types the importer accepts.
std::vector<std::string> onnx_supported_ops();

}  // namespace loom::frontend
