// Operator family: data movement on run-time data (cast, slice, gather, gather_elements,
// expand, tile, trilu, cumsum, one_hot). Each operator: fusion pattern, input count, type
// inference, tensor expressions, reference implementation (op_registry.h).
#include "loom/ir/simplify.h"
#include "op_registry_util.h"

namespace loom::graph {

using ir::Tensor;

namespace {

ops::SliceAxes slice_of(const Node& n, const Shape& x) {
  return ops::slice_axes(x, n.attrs.get_ints("starts"), n.attrs.get_ints("ends"), n.attrs.get_ints("axes"),
                         n.attrs.get_ints("steps"));
}

// A slice with symbolic extents: of a tensor with symbolic extents, or of a table at starts that
// are affine forms of the shape variables (rows [past, past + seq)). On such an axis the first
// index is the start itself, or from the axis' end for a negative one (step 1; infer_types
// checked at the variables' minima that no clamp bends the extents); elsewhere as at the
// largest shape.
ir::Tensor symbolic_slice(const Node& n, const ir::Tensor& x, const std::string& name) {
  using ir::Expr;
  ops::SliceAxes at_max = slice_of(n, ops::max_shape_of(x));
  std::vector<Expr> begin;
  for (int64_t b : at_max.begin) begin.push_back(Expr(static_cast<int>(b)));
  auto starts = n.attrs.get_ints("starts"), axes = n.attrs.get_ints("axes");
  auto sym_starts = n.sym_attrs.find("starts");
  for (size_t k = 0; k < axes.size(); ++k) {
    size_t d = static_cast<size_t>(axes[k] < 0 ? axes[k] + x.ndim() : axes[k]);
    if (d >= size_t(x.ndim())) continue;
    bool symbolic_start = sym_starts != n.sym_attrs.end() && !sym_starts->second.at(k).terms.empty();
    bool symbolic_count = !n.type.is_static() && !n.type.dims.at(d).terms.empty();
    if (ir::as_const_int(x.shape()[d]) && !symbolic_start && !symbolic_count) continue;
    if (at_max.step[d] != 1)
      LOOM_THROW(ShapeError, "slice '", name, "': axis ", d, " has a symbolic extent and step ", at_max.step[d],
                 "; only step 1 is supported there");
    Expr start = symbolic_start ? ops::shape_var_extent(sym_starts->second[k]) : Expr(static_cast<int>(starts[k]));
    begin[d] = starts[k] >= 0 ? ir::simplify(start) : ir::simplify(x.shape()[d] + start);
  }
  return ops::strided_slice(x, begin, at_max.step,
                            n.type.is_static() ? ops::shape_exprs(n.type.shape) : ops::extents_over(n.type.dims, {x}),
                            name);
}

Shape positive(const Shape& s) {
  for (int64_t d : s)
    if (d <= 0) LOOM_THROW(ShapeError, "the result ", shape_str(s), " is empty (Loom tensors have no zero extents)");
  return s;
}

}  // namespace

void add_data_ops(const AddOp& add) {
  add({"cast", OpPattern::ElemWise, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         return TensorType{in[0].shape, DataType::parse(n.attrs.get_string("to"))};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::cast(in[0], DataType::parse(n.attrs.get_string("to")), name);
       },
       ref::cast});
  OpDef& slice = add({"slice", OpPattern::Injective, 1, 1,
                      [](const Node& n, const std::vector<TensorType>& in) {
                        return TensorType{positive(slice_of(n, in[0].shape).count), in[0].dtype};
                      },
                      [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
                        if (ops::has_symbolic_extent(in[0]) || !n.type.is_static() || !n.sym_attrs.empty())
                          return symbolic_slice(n, in[0], name);
                        return ops::strided_slice(in[0], slice_of(n, ops::shape_of(in[0])), name);
                      },
                      ref::slice});
  slice.int8 = Int8Rule::ScaleInvariant;
  slice.layout_rule = LayoutRule::SpatialSlice;
  add({"gather", OpPattern::Injective, 2, 2,
       [](const Node& n, const std::vector<TensorType>& in) {
         expect_indices(in[1]);
         const Shape& x = in[0].shape;
         int64_t axis = axis_attr(n, static_cast<int64_t>(x.size()), in[0].str());
         Shape out(x.begin(), x.begin() + axis);
         out.insert(out.end(), in[1].shape.begin(), in[1].shape.end());
         out.insert(out.end(), x.begin() + axis + 1, x.end());
         if (out.empty()) LOOM_THROW(ShapeError, "gathering one element of a vector gives a rank-0 tensor");
         return TensorType{out, in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::gather(in[0], in[1], n.attrs.get_int("axis", 0), name);
       },
       ref::gather});
  add({"gather_elements", OpPattern::Injective, 2, 2,
       [](const Node& n, const std::vector<TensorType>& in) {
         expect_indices(in[1]);
         int64_t axis = axis_attr(n, static_cast<int64_t>(in[0].shape.size()), in[0].str());
         if (in[1].shape.size() != in[0].shape.size())
           LOOM_THROW(ShapeError, "indices ", in[1].str(), " and data ", in[0].str(), " differ in rank");
         // Off the axis the indices' coordinates index the data directly: they must fit.
         for (size_t d = 0; d < in[0].shape.size(); ++d)
           if (int64_t(d) != axis && in[1].shape[d] > in[0].shape[d])
             LOOM_THROW(ShapeError, "indices ", in[1].str(), " are larger than the data ", in[0].str(), " on axis ", d);
         return TensorType{in[1].shape, in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::gather_elements(in[0], in[1], n.attrs.get_int("axis", 0), name);
       },
       ref::gather_elements});
  add({"expand", OpPattern::Broadcast, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         return TensorType{positive(ops::broadcast_shape(in[0].shape, n.attrs.get_ints("shape"))), in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         if (!n.type.is_static()) return ops::expand(in[0], ops::extents_over(n.type.dims, in), name);
         return ops::expand(in[0], n.attrs.get_ints("shape"), name);
       },
       ref::broadcast_n([](const Node&, const std::vector<double>& x) { return x[0]; })});
  add({"tile", OpPattern::Injective, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         auto rep = n.attrs.get_ints("repeats");
         if (rep.size() != in[0].shape.size()) LOOM_THROW(ShapeError, rep.size(), " repeats for ", in[0].str());
         Shape out = in[0].shape;
         for (size_t d = 0; d < out.size(); ++d) {
           if (rep[d] < 1) LOOM_THROW(ShapeError, "repeat ", rep[d], " must be positive");
           if (__builtin_mul_overflow(out[d], rep[d], &out[d])) LOOM_THROW(ShapeError, "repeats overflow");
         }
         return TensorType{out, in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::tile(in[0], n.attrs.get_ints("repeats"), name);
       },
       ref::tile});
  add({"trilu", OpPattern::Injective, 1, 1,
       [](const Node&, const std::vector<TensorType>& in) {
         if (in[0].shape.size() < 2) LOOM_THROW(ShapeError, "input must have rank 2 or more, is ", in[0].str());
         return in[0];
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::trilu(in[0], n.attrs.get_int("k", 0), n.attrs.get_int("upper", 1) != 0, name);
       },
       ref::trilu});
  add({"cumsum", OpPattern::Opaque, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         axis_attr(n, static_cast<int64_t>(in[0].shape.size()), in[0].str());
         if (in[0].dtype.is_bool()) LOOM_THROW(TypeError, "input must be numbers, is ", in[0].str());
         return in[0];
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::cumsum(in[0], n.attrs.get_int("axis", 0), n.attrs.get_int("exclusive", 0) != 0,
                            n.attrs.get_int("reverse", 0) != 0, name);
       },
       ref::cumsum});
  add({"resample_axis", OpPattern::Injective, 3, 4,
       [](const Node& n, const std::vector<TensorType>& in) {
         int64_t r = static_cast<int64_t>(in[0].shape.size()), axis = n.attrs.get_int("axis");
         if (axis < 0 || axis >= r) LOOM_THROW(ShapeError, "axis ", axis, " out of range for ", in[0].str());
         expect_indices(in[1]);
         if (in[1].shape.size() != 2 || in[2].shape != in[1].shape || in[2].dtype != in[0].dtype)
           LOOM_THROW(ShapeError, "index and weight must be [taps, out] of the data's type, are ", in[1].str(), " and ",
                      in[2].str());
         if (in.size() > 3 && (in[3].shape != Shape{in[1].shape[1]} || in[3].dtype != in[0].dtype))
           LOOM_THROW(ShapeError, "bias must be [out] of the data's type, is ", in[3].str());
         Shape out = in[0].shape;
         out[size_t(axis)] = in[1].shape[1];
         return TensorType{out, in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::resample_axis(in[0], in[1], in[2], in.size() > 3 ? in[3] : Tensor(), n.attrs.get_int("axis"),
                                   name);
       },
       ref::resample_axis});
  // top_k: attribute "output" = values or indices (the importer adds one node per output).
  add({"top_k", OpPattern::Opaque, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         int64_t axis = axis_attr(n, static_cast<int64_t>(in[0].shape.size()), in[0].str(), -1);
         int64_t k = n.attrs.get_int("k");
         if (k < 1 || k > in[0].shape[size_t(axis)])
           LOOM_THROW(ShapeError, "k = ", k, " is not in [1, ", in[0].shape[size_t(axis)], "]");
         if (in[0].dtype.is_bool()) LOOM_THROW(TypeError, "input must be numbers, is ", in[0].str());
         Shape out = in[0].shape;
         out[size_t(axis)] = k;
         return TensorType{out, n.attrs.get_string("output") == "indices" ? DataType::Int(64) : in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::top_k(in[0], n.attrs.get_int("k"), n.attrs.get_int("axis", -1), n.attrs.get_int("largest", 1) != 0,
                           n.attrs.get_string("output") == "indices", name);
       },
       ref::top_k});
  add({"one_hot", OpPattern::Injective, 2, 2,
       [](const Node& n, const std::vector<TensorType>& in) {
         if (in[0].dtype.is_bool()) LOOM_THROW(TypeError, "indices must be numbers, are ", in[0].str());
         if (in[1].shape != Shape{2}) LOOM_THROW(ShapeError, "values must be [off, on], are ", in[1].str());
         int64_t depth = n.attrs.get_int("depth"), r = static_cast<int64_t>(in[0].shape.size()) + 1;
         int64_t axis = axis_attr(n, r, "rank " + std::to_string(r), -1);
         if (depth < 1) LOOM_THROW(ShapeError, "depth ", depth, " must be positive");
         Shape out = in[0].shape;
         out.insert(out.begin() + axis, depth);
         return TensorType{out, in[1].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::one_hot(in[0], in[1], n.attrs.get_int("depth"), n.attrs.get_int("axis", -1), name);
       },
       ref::one_hot});
}

}  // namespace loom::graph
