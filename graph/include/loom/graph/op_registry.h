// The graph's operator set: OpDef is the one description of an operator (TVM's op attribute
// maps): its fusion pattern (TVM's kinds), type-inference rule, tensor-expression definition
// (from loom/ops/layers.h) and reference implementation (plain C++ loops, reference.h). The table
// is built explicitly (no static initializers) in op_registry.cc from one file per operator
// family: op_registry_nn.cc, op_registry_elemwise.cc, op_registry_quant.cc,
// op_registry_transform.cc, op_registry_accel.cc.
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

// A value of the reference interpreter (reference.h): its shape and its elements in double,
// row-major in the layout the graph gives it.
struct RefTensor {
  Shape shape;
  std::vector<double> v;
};

struct OpDef {
  std::string name;
  OpPattern pattern;
  int min_inputs, max_inputs;
  // Output type from the node's attributes and input types; throws (ShapeError, TypeError,
  // ModelError) without naming the node: infer_types adds it.
  std::function<TensorType(const Node&, const std::vector<TensorType>&)> infer;
  // The node as tensor expressions over its inputs.
  std::function<ir::Tensor(const Node&, const std::vector<ir::Tensor>&, const std::string& name)> compute;
  // The node as plain loops over doubles, independent of the tensor expressions: what
  // reference_run computes. Empty for the accelerator's operators (their reference is the same
  // graph on the CPU).
  std::function<RefTensor(const Node&, const std::vector<const RefTensor*>&)> reference;

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
