// The graph's operator set: OpDef is the one description of an operator (TVM's op attribute
// maps): its fusion pattern (TVM's kinds), type-inference rule, tensor-expression definition
// (from loom/ops/layers.h), reference implementation (plain C++ loops, reference.h), and the
// traits the passes ask instead of comparing names: layout rule, sign, weighted-layer kind, int8
// rule, clamp interval, device and schedule hooks. The table
// is built explicitly (no static initializers) in op_registry.cc from one file per operator
// family: op_registry_nn.cc, op_registry_elemwise.cc, op_registry_quant.cc,
// op_registry_transform.cc, op_registry_accel.cc.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "loom/graph/graph.h"
#include "loom/ir/tensor.h"
#include "loom/runtime/executor_graph.h"

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

// How an operator meets channel-blocked activations (alter_layout).
enum class LayoutRule : uint8_t {
  PlainOnly,      // reads and writes NCHW: blocked inputs are converted back first
  FollowsInput,   // computes in whatever channel layout its first input has (element-wise maps, pools)
  Broadcasting,   // two operands, brought to one layout (binary element-wise ops)
  ChannelConcat,  // concat: blocked along the channel blocks when it joins channels in whole blocks, or
                  // along rows or columns
  SpatialSlice,   // slice: in its input's channel layout when it cuts rows and columns only
};

// Operators with weights (input 1, [O, I, ...]) and an optional bias (input 2, [O]): what
// BatchNorm folding, quantization, weight packing and the accelerator partition treat alike.
enum class WeightedLayer : uint8_t { None, Conv2d, Dense };

// How int8 quantization treats an operator (quantize/annotate.cc).
enum class Int8Rule : uint8_t {
  Float,            // stays in float
  Accumulate,       // a weighted layer: int8 data and weights, int32 accumulator, then requantized
  Add,              // two operands brought to one exponent and added in int32
  ScaleInvariant,   // f(s*x) = s*f(x) for every s > 0 (relu, max pooling, data movement): int8 values pass through
  Product,          // a product of two activations (matmul): both int8, int32 accumulator, then requantized
  ScaleByConstant,  // multiplies or divides by a constant: by a power-of-two scalar, int8 values pass through
                    // with their exponent moved
};

// The interval a pure clamp (relu, clip) limits its input to; +-infinity where it has no bound.
struct ClampRange {
  double lo, hi;
};

// What an operator's attribute holds (graph.h's AttrValue alternatives).
enum class AttrKind : uint8_t { Int, Float, String, Ints, Floats };
const char* to_string(AttrKind k);  // "an integer", "a float", "a string", "a list of integers", ...

// One attribute an operator takes: its name, what it holds, whether every node must set it, and
// for numbers the closed range each value (each element, for lists) lies in. The schema is the
// operator's contract with everything that builds or rewrites nodes: Graph::verify refuses an
// attribute the operator does not declare, one of another kind, a missing required one and a value
// out of range, naming the node and the key.
inline constexpr double kAttrUnbounded = 1e300;  // AttrSpec::min/max of a side without a bound
struct AttrSpec {
  std::string name;
  AttrKind kind = AttrKind::Int;
  bool required = false;
  double min = -kAttrUnbounded, max = kAttrUnbounded;
  std::string help;  // what it means, and its default when absent
};

// What an operator's schedule hooks see; defined in graph/src/op_schedules.h (the build's
// internals), opaque here.
struct CpuScheduleContext;
struct CudaScheduleContext;
struct AccelScheduleContext;

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
  LayoutRule layout_rule = LayoutRule::PlainOnly;
  // Whether every output element is >= 0, given whether input k's are (`input(k)`); what lets an
  // int8 conv read its input as uint8 (byte groups, alter_layout). Empty: not known to be.
  std::function<bool(const Node&, const std::function<bool(size_t)>& input)> nonnegative = nullptr;
  WeightedLayer layer = WeightedLayer::None;
  Int8Rule int8 = Int8Rule::Float;
  // Set for a pure clamp: its interval. A clamp from 0 folds into the requantization before it.
  std::function<ClampRange(const Node&)> clamp = nullptr;
  // Where the operator's kernels run. An accelerator operator is a fused group of its own,
  // scheduled by schedule_accel.
  runtime::KernelDevice device = runtime::KernelDevice::CPU;
  // Schedules the fused CPU group this operator anchors; empty: the generic schedule.
  std::function<void(const CpuScheduleContext&)> schedule_cpu = nullptr;
  // Schedules the fused GPU group this operator anchors; empty: the generic GPU schedule
  // (ops::schedule_cuda_generic).
  std::function<void(const CudaScheduleContext&)> schedule_cuda = nullptr;
  // Whether the operator has a GPU kernel. In a build with CUDA, a group holding an operator
  // without one runs on the CPU (its values copied across), and a placement that puts it on
  // CUDA is an error naming the node.
  bool cuda = true;
  // Schedules the operator as an accelerator kernel (device == Accel).
  std::function<void(AccelScheduleContext&)> schedule_accel = nullptr;

  // The attributes it takes (AttrSpec); any other key on a node is an error.
  std::vector<AttrSpec> attrs = {};

  // The declared attribute `key`, or null.
  const AttrSpec* attr(const std::string& key) const;
  // ModelError naming the node and the key: an undeclared attribute (with the closest declared
  // name), a value of another kind, a required attribute missing, a number out of range.
  void check_attrs(const Node& n) const;

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
