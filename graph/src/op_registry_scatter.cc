// Operator family: scatters, N-d gathers and Einstein sums (scatter_elements, scatter_nd,
// gather_nd, einsum). Each operator: fusion pattern, input count, type inference, tensor
// expressions, reference implementation (op_registry.h).
#include "op_registry_util.h"

namespace loom::graph {

using ir::Tensor;

namespace {

// The data and updates of a scatter: one element type; numbers unless the reduction is none.
ops::ScatterReduction scatter_types(const Node& n, const std::vector<TensorType>& in) {
  ops::ScatterReduction r = ops::scatter_reduction(n.attrs.get_string("reduction", "none"));
  expect_indices(in[1]);
  if (in[2].dtype != in[0].dtype)
    LOOM_THROW(TypeError, "updates ", in[2].str(), " and data ", in[0].str(), " differ in element type");
  if (r != ops::ScatterReduction::None && in[0].dtype.is_bool())
    LOOM_THROW(TypeError, "reduction '", ops::to_string(r), "' needs numbers, the data is ", in[0].str());
  return r;
}

}  // namespace

void add_scatter_ops(const AddOp& add) {
  // scatter_elements: attributes axis (default 0), reduction ("none", "add", "mul", "max", "min").
  add({"scatter_elements", OpPattern::Opaque, 3, 3,
       [](const Node& n, const std::vector<TensorType>& in) {
         scatter_types(n, in);
         ops::scatter_elements_check(in[0].shape, in[1].shape, in[2].shape, n.attrs.get_int("axis", 0));
         return in[0];
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::scatter_elements(in[0], in[1], in[2], n.attrs.get_int("axis", 0),
                                      ops::scatter_reduction(n.attrs.get_string("reduction", "none")), name);
       },
       ref::scatter_elements});
  // scatter_nd: attribute reduction (as scatter_elements').
  add({"scatter_nd", OpPattern::Opaque, 3, 3,
       [](const Node& n, const std::vector<TensorType>& in) {
         scatter_types(n, in);
         ops::scatter_nd_check(in[0].shape, in[1].shape, in[2].shape);
         return in[0];
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::scatter_nd(in[0], in[1], in[2], ops::scatter_reduction(n.attrs.get_string("reduction", "none")),
                                name);
       },
       ref::scatter_nd});
  // gather_nd: attribute batch_dims (default 0).
  add({"gather_nd", OpPattern::Injective, 2, 2,
       [](const Node& n, const std::vector<TensorType>& in) {
         expect_indices(in[1]);
         return TensorType{ops::gather_nd_shape(in[0].shape, in[1].shape, n.attrs.get_int("batch_dims", 0)),
                           in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::gather_nd(in[0], in[1], n.attrs.get_int("batch_dims", 0), name);
       },
       ref::gather_nd});
  // einsum: attribute equation (numpy's einsum notation, ops::einsum_spec); a full contraction
  // gives [1].
  add({"einsum", OpPattern::Opaque, 1, 64,
       [](const Node& n, const std::vector<TensorType>& in) {
         same_dtype(in);
         if (in[0].dtype.is_bool()) LOOM_THROW(TypeError, "operands must be numbers, are ", in[0].str());
         std::vector<Shape> shapes;
         for (auto& t : in) shapes.push_back(t.shape);
         return TensorType{ops::einsum_shape(ops::einsum_spec(n.attrs.get_string("equation"), shapes)), in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::einsum(in, n.attrs.get_string("equation"), name);
       },
       ref::einsum});
}

}  // namespace loom::graph
