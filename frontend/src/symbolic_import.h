// Internal to the ONNX importer: shape variables (symbolic_import.cc).
#pragma once
#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loom/graph/graph.h"

namespace loom::frontend::onnx_detail {

// An input dimension that shape variables name: one variable (`seq`), or a dim_param that is an
// affine form of them (`past + seq`, as exporters name a mask's length).
struct SymbolicInputDim {
  std::string input;
  int axis = 0;
  runtime::DimExpr dim;
};
// A dim_param as an affine form over the variables: names of variables, whole numbers, + and -,
// and a number times a name ("2*seq", "past + seq + 1"); nullopt for anything else.
std::optional<runtime::DimExpr> dim_param_form(const std::string& text, const std::vector<graph::ShapeVar>& vars);

// The inputs' dimensions that the variables name (ModelError for a variable that names none).
std::vector<SymbolicInputDim> symbolic_input_dims(const onnx::GraphProto& gp, const std::vector<graph::ShapeVar>& vars,
                                                  const std::string& origin);
// Those inputs' shapes with the variables at `at` (the input_shapes of one import).
std::map<std::string, std::vector<int64_t>> shapes_at(const onnx::GraphProto& gp,
                                                      const std::vector<SymbolicInputDim>& dims,
                                                      const std::map<std::string, int64_t>& at,
                                                      const std::string& origin);
// One graph from the model imported at each probe point (the top first): symbolic input dims and
// attributes, typed. ModelError naming the node where the imports differ otherwise.
graph::Graph unify_probes(std::vector<std::pair<std::map<std::string, int64_t>, graph::Graph>> imported,
                          const std::vector<graph::ShapeVar>& vars, const std::vector<SymbolicInputDim>& dims,
                          const std::string& origin);

}  // namespace loom::frontend::onnx_detail
