// The graph's operator set. Each operator has a fusion pattern (TVM's kinds), a type-inference
// rule and a tensor-expression definition (from loom/ops/layers.h). The table is built
// explicitly in op_registry.cc (no static initializers).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "loom/graph/graph.h"
#include "loom/ir/tensor.h"

namespace loom::graph {

// How an operator may fuse (TVM's OpPatternKind): element-wise ops fuse into anything before
// them; "out-element-wise-fusable" ops (conv2d, dense, pools) take element-wise ops after them
// into the same kernel; opaque ops stand alone.
enum class OpPattern : uint8_t {
  ElemWise = 0,
  Broadcast = 1,
  Injective = 2,
  CommReduce = 3,
  OutEWiseFusable = 4,
  Opaque = 8
};
const char* to_string(OpPattern p);

struct OpDef {
  std::string name;
  OpPattern pattern;
  int min_inputs, max_inputs;
  // Output type from the node's attributes and input types; throws (ShapeError, TypeError,
  // ModelError) without naming the node: infer_types adds it.
  std::function<TensorType(const Node&, const std::vector<TensorType>&)> infer;
  // The node as tensor expressions over its inputs.
  std::function<ir::Tensor(const Node&, const std::vector<ir::Tensor>&, const std::string& name)> compute;

  // infer, then TensorType::check_size on the result: what every caller should use.
  TensorType infer_checked(const Node& n, const std::vector<TensorType>& in) const {
    TensorType t = infer(n, in);
    t.check_size();
    return t;
  }
};

// ModelError naming `name` and listing the supported operators if there is no such operator.
const OpDef& op_def(const std::string& name);
bool has_op(const std::string& name);
std::vector<std::string> op_names();

}  // namespace loom::graph
