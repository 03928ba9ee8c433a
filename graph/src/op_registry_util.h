// Internal to loom_graph: what the operator registry's family files (op_registry_*.cc) share:
// the registration callback, attribute readers and type checks.
#pragma once
#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "loom/graph/layout.h"
#include "loom/graph/op_attrs.h"
#include "loom/graph/op_registry.h"
#include "loom/ops/layers.h"
#include "loom/runtime/error.h"
#include "reference_ops.h"

namespace loom::graph {

// Registers an operator; returns it for the attributes that aggregate initialization leaves out.
using AddOp = std::function<OpDef&(OpDef)>;

// OpDef::nonnegative of the operators that pass their input's sign on, and of clamps whose lower
// bound is an attribute "min" (default -128).
inline bool input0_nonnegative(const Node&, const std::function<bool(size_t)>& input) { return input(0); }
inline bool min_attr_nonnegative(const Node& n, const std::function<bool(size_t)>&) {
  return n.attrs.get_int("min", -128) >= 0;
}

// One function per operator family, each in its own file; op_registry.cc calls them all.
void add_nn_ops(const AddOp& add);         // op_registry_nn.cc: conv2d, dense, matmul, batch_norm, pools, softmax
void add_elemwise_ops(const AddOp& add);   // op_registry_elemwise.cc: broadcasting binary and unary ops
void add_quant_ops(const AddOp& add);      // op_registry_quant.cc: int8 quantization
void add_transform_ops(const AddOp& add);  // op_registry_transform.cc: layouts, reshape, transpose, concat, pad, resize
void add_accel_ops(const AddOp& add);      // op_registry_accel.cc: the accelerator partition's operators
void add_reduce_ops(const AddOp& add);     // op_registry_reduce.cc: reductions over sets of axes
void add_data_ops(const AddOp& add);       // op_registry_data.cc: cast, slice, gather, expand, tile, cumsum, ...
void add_logic_ops(const AddOp& add);      // op_registry_logic.cc: comparisons, bool logic, where, mod
void add_scatter_ops(const AddOp& add);    // op_registry_scatter.cc: scatter_elements, scatter_nd, gather_nd, einsum
// op_registry_attrs.cc: every operator's attribute schema (OpDef::attrs), set on the finished table.
void add_attr_schemas(std::map<std::string, OpDef>& table);

inline void expect_float(const TensorType& t, const char* what) {
  if (!t.dtype.is_float()) LOOM_THROW(TypeError, what, " must be floating point, is ", t.str());
}

inline void same_dtype(const std::vector<TensorType>& in) {
  for (auto& t : in)
    if (t.dtype != in[0].dtype)
      LOOM_THROW(TypeError, "inputs have different element types (", in[0].str(), ", ", t.str(), ")");
}

// conv2d/dense: float operands of one type give that type; int8 data and weights (with an
// int32 bias) accumulate and give int32.
inline DataType product_dtype(const std::vector<TensorType>& in) {
  if (in[0].dtype != DataType::Int(8)) {
    same_dtype(in);
    return in[0].dtype;
  }
  // int16 weights: the CPU's int16-pairs form (alter_layout packs int8 weights so).
  bool pairs = in[1].dtype == DataType::Int(16) && ops::int8_conv_weight_group(in[1].shape) == 2;
  if (in[1].dtype != DataType::Int(8) && !pairs)
    LOOM_THROW(TypeError, "int8 data needs int8 weights, got ", in[1].str());
  if (in.size() > 2 && in[2].dtype != DataType::Int(32))
    LOOM_THROW(TypeError, "int8 operands need an int32 bias, got ", in[2].str());
  return DataType::Int(32);
}

// An integer attribute in the range its operator's schema gives it (OpDef::attrs), for type
// inference on nodes that Graph::verify has not seen (the importer and the built-in models infer
// node by node); `def` if given and the attribute is absent.
inline int int_attr(const Node& n, const std::string& key, std::optional<int64_t> def = std::nullopt) {
  const AttrSpec* spec = op_def(n.op).attr(key);
  LOOM_CHECK(spec && spec->kind == AttrKind::Int, "operator '", n.op, "' declares no integer attribute '", key, "'");
  int64_t v = def && !n.attrs.has(key) ? *def : n.attrs.get_int(key);
  if (double(v) < spec->min || double(v) > spec->max)
    LOOM_THROW(ModelError, "attribute '", key, "' = ", v, " is out of range [", int64_t(spec->min), ", ",
               int64_t(spec->max), "]");
  return static_cast<int>(v);
}

// The node's "axis" attribute (`def` if absent) as an index in [0, rank): negative counts from
// the end; ShapeError "axis A out of range for <of>" otherwise.
inline int64_t axis_attr(const Node& n, int64_t rank, const std::string& of, int64_t def = 0) {
  int64_t axis = n.attrs.get_int("axis", def);
  if (axis < -rank || axis >= rank) LOOM_THROW(ShapeError, "axis ", axis, " out of range for ", of);
  return axis < 0 ? axis + rank : axis;
}

inline void expect_indices(const TensorType& t) {
  if (!t.dtype.is_int()) LOOM_THROW(TypeError, "indices must be int32 or int64, are ", t.str());
}

inline void expect_dtype(const TensorType& t, DataType want, const char* what) {
  if (t.dtype != want) LOOM_THROW(TypeError, what, " must be ", want.str(), ", is ", t.str());
}

}  // namespace loom::graph
