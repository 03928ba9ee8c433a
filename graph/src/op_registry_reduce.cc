// Operator family: reductions over a set of axes, reduce_<kind> for every ops::ReduceKind (sum,
// mean, max, min, sum_square, l1, l2, log_sum, log_sum_exp). Attributes: axes (ints in
// [-rank, rank), distinct; absent or empty: every axis), keepdims (default 1). Each operator:
// fusion pattern, input count, type inference, tensor expressions, reference implementation
// (op_registry.h).
#include "op_registry_util.h"

namespace loom::graph {

void add_reduce_ops(const AddOp& add) {
  using ops::ReduceKind;
  for (ReduceKind kind :
       {ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Max, ReduceKind::Min, ReduceKind::SumSquare, ReduceKind::L1,
        ReduceKind::L2, ReduceKind::LogSum, ReduceKind::LogSumExp, ReduceKind::Prod}) {
    add({std::string("reduce_") + ops::to_string(kind), OpPattern::CommReduce, 1, 1,
         [kind](const Node& n, const std::vector<TensorType>& in) {
           if (ops::reduce_needs_float(kind)) expect_float(in[0], "input");
           Shape out = ops::reduce_shape(in[0].shape, n.attrs.get_ints("axes", {}), n.attrs.get_int("keepdims", 1));
           if (out.empty()) LOOM_THROW(ShapeError, "a reduction to a scalar needs keepdims = 1 (rank-0 tensors)");
           return TensorType{out, in[0].dtype};
         },
         [kind](const Node& n, const std::vector<ir::Tensor>& in, const std::string& name) {
           return ops::reduce(in[0], kind, n.attrs.get_ints("axes", {}), n.attrs.get_int("keepdims", 1) != 0, name);
         },
         ref::reduce(kind)});
  }
  // arg_max, arg_min: the int64 index of the extreme along `axis` (the first, or the last with
  // select_last_index).
  for (const char* kind : {"max", "min"}) {
    add({std::string("arg_") + kind, OpPattern::CommReduce, 1, 1,
         [](const Node& n, const std::vector<TensorType>& in) {
           if (in[0].dtype.is_bool()) LOOM_THROW(TypeError, "input must be numbers, is ", in[0].str());
           Shape out = ops::reduce_shape(in[0].shape, {n.attrs.get_int("axis", 0)}, n.attrs.get_int("keepdims", 1));
           if (out.empty()) LOOM_THROW(ShapeError, "a reduction to a scalar needs keepdims = 1 (rank-0 tensors)");
           return TensorType{out, DataType::Int(64)};
         },
         [max = std::string(kind) == "max"](const Node& n, const std::vector<ir::Tensor>& in, const std::string& name) {
           return ops::arg_reduce(in[0], max, n.attrs.get_int("axis", 0), n.attrs.get_int("keepdims", 1) != 0,
                                  n.attrs.get_int("select_last_index", 0) != 0, name);
         },
         ref::arg_reduce(std::string(kind) == "max")});
  }
}

}  // namespace loom::graph
