// Internal to loom_graph: every operator's reference implementation (OpDef::reference), plain
// loops over doubles in reference.cc, independent of the tensor expressions; the registry files
// (op_registry_*.cc) attach each to its operator.
#pragma once
#include <functional>
#include <vector>

#include "loom/graph/op_registry.h"
#include "loom/ops/layers.h"

namespace loom::graph::ref {

using Inputs = std::vector<const RefTensor*>;
using ReferenceFn = std::function<RefTensor(const Node&, const Inputs&)>;

RefTensor conv2d(const Node& n, const Inputs& in);  // NCHW, or NCHWc with the layout attribute
RefTensor conv2d_winograd(const Node& n, const Inputs& in);
RefTensor dense(const Node& n, const Inputs& in);
RefTensor matmul(const Node& n, const Inputs& in);
RefTensor batch_norm(const Node& n, const Inputs& in);
RefTensor max_pool2d(const Node& n, const Inputs& in);
RefTensor avg_pool2d(const Node& n, const Inputs& in);
RefTensor global_avg_pool2d(const Node& n, const Inputs& in);
RefTensor softmax(const Node& n, const Inputs& in);
// Every reduction (reduce_sum, reduce_mean, ...): the kind is the operator's.
ReferenceFn reduce(ops::ReduceKind kind);
ReferenceFn arg_reduce(bool max);  // arg_max, arg_min
RefTensor requantize_channel(const Node& n, const Inputs& in);
RefTensor add_shifted(const Node& n, const Inputs& in);
RefTensor layout_transform(const Node& n, const Inputs& in);
RefTensor reshape(const Node& n, const Inputs& in);
RefTensor transpose(const Node& n, const Inputs& in);
RefTensor concat(const Node& n, const Inputs& in);
RefTensor pad(const Node& n, const Inputs& in);
RefTensor resize_nearest(const Node& n, const Inputs& in);
// Data movement (reference_data.cc).
RefTensor cast(const Node& n, const Inputs& in);
RefTensor slice(const Node& n, const Inputs& in);
RefTensor gather(const Node& n, const Inputs& in);
RefTensor gather_elements(const Node& n, const Inputs& in);
RefTensor tile(const Node& n, const Inputs& in);
RefTensor trilu(const Node& n, const Inputs& in);
RefTensor cumsum(const Node& n, const Inputs& in);
RefTensor one_hot(const Node& n, const Inputs& in);
RefTensor resample_axis(const Node& n, const Inputs& in);
RefTensor top_k(const Node& n, const Inputs& in);
// Scatters, N-d gathers and Einstein sums (reference_scatter.cc).
RefTensor scatter_elements(const Node& n, const Inputs& in);
RefTensor scatter_nd(const Node& n, const Inputs& in);
RefTensor gather_nd(const Node& n, const Inputs& in);
RefTensor einsum(const Node& n, const Inputs& in);

// y[i] = f(node, x[i]).
ReferenceFn elementwise(std::function<double(const Node&, double)> f);
// y = f(a, b) with numpy broadcasting.
ReferenceFn broadcast(double (*f)(double, double));
// y = f(node, {x0, x1, ...}) with numpy broadcasting of any number of inputs.
ReferenceFn broadcast_n(std::function<double(const Node&, const std::vector<double>&)> f);

// int8 steps of 2^exponent: round(x * 2^-e) clamped to [min, max], in float32 as the kernels
// compute it (quantize, fake_quantize).
double quantized_steps(const Node& n, double x);
// The integer requantization: exact in double for int32 inputs (requantize).
double requantized(const Node& n, double x);

}  // namespace loom::graph::ref
