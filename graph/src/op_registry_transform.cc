// Operator family: layouts and data movement (layout_transform, reshape, transpose, concat, pad, resize_nearest). Each
// operator: fusion pattern, input count, type inference, tensor expressions, reference implementation (op_registry.h).
#include <cmath>

#include "op_registry_util.h"

namespace loom::graph {

using ir::Expr;
using ir::Tensor;

void add_transform_ops(const AddOp& add) {
  add({"layout_transform", OpPattern::Injective, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         const Shape& x = in[0].shape;
         if (Layout to = transform_target(n); to.blocked()) {
           int64_t b = to.block;
           if (x.size() != 4 || b <= 0 || x[1] % b != 0)
             LOOM_THROW(ShapeError, in[0].str(), " cannot be blocked by ", b, " channels");
           return TensorType{{x[0], x[1] / b, x[2], x[3], b}, in[0].dtype};
         }
         if (x.size() != 5) LOOM_THROW(ShapeError, "NCHWc -> NCHW needs a rank-5 input, got ", in[0].str());
         return TensorType{{x[0], x[1] * x[4], x[2], x[3]}, in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         Layout to = transform_target(n);
         return to.blocked() ? ops::to_nchwc(in[0], to.block, name) : ops::from_nchwc(in[0], name);
       },
       ref::layout_transform})
      .nonnegative = input0_nonnegative;
  OpDef& reshape = add({"reshape", OpPattern::Injective, 1, 1,
                        [](const Node& n, const std::vector<TensorType>& in) {
                          Shape s = n.attrs.get_ints("shape");
                          TensorType out{s, in[0].dtype};
                          if (out.numel() != in[0].numel())
                            LOOM_THROW(ShapeError, "cannot reshape ", in[0].str(), " to ", shape_str(s));
                          return out;
                        },
                        [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
                          if (!n.type.is_static())  // the node's own dims: its attribute holds the largest shape
                            return ops::reshape(in[0], ops::extents_over(n.type.dims, in), name);
                          return ops::reshape(in[0], n.attrs.get_ints("shape"), name);
                        },
                        ref::reshape});
  reshape.int8 = Int8Rule::ScaleInvariant;
  OpDef& transpose = add({"transpose", OpPattern::Injective, 1, 1,
                          [](const Node& n, const std::vector<TensorType>& in) {
                            auto perm = n.attrs.get_ints("perm");
                            if (perm.size() != in[0].shape.size())
                              LOOM_THROW(ShapeError, "permutation of ", perm.size(), " axes for ", in[0].str());
                            Shape out;
                            std::vector<bool> seen(perm.size());
                            for (int64_t p : perm) {
                              if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p])
                                LOOM_THROW(ShapeError, "invalid permutation");
                              seen[p] = true;
                              out.push_back(in[0].shape[p]);
                            }
                            return TensorType{out, in[0].dtype};
                          },
                          [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
                            return ops::transpose(in[0], n.attrs.get_ints("perm"), name);
                          },
                          ref::transpose});
  transpose.int8 = Int8Rule::ScaleInvariant;
  add({"concat", OpPattern::Injective, 1, 64,
       [](const Node& n, const std::vector<TensorType>& in) {
         same_dtype(in);
         int64_t r = static_cast<int64_t>(in[0].shape.size()), axis = n.attrs.get_int("axis");
         if (axis < 0) axis += r;
         if (axis < 0 || axis >= r) LOOM_THROW(ShapeError, "axis out of range for rank ", r);
         Shape out = in[0].shape;
         for (size_t i = 1; i < in.size(); ++i) {
           Shape a = in[i].shape, b = in[0].shape;
           if (a.size() != b.size())
             LOOM_THROW(ShapeError, "input ", i, " has rank ", a.size(), ", input 0 has ", b.size());
           a[axis] = b[axis] = 0;
           if (a != b)
             LOOM_THROW(ShapeError, "input ", i, " ", in[i].str(), " differs from input 0 ", in[0].str(), " off axis ",
                        axis);
           out[axis] += in[i].shape[axis];
         }
         return TensorType{out, in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::concat(in, static_cast<int>(n.attrs.get_int("axis")), name);
       },
       ref::concat})
      .layout_rule = LayoutRule::ChannelConcat;
  add({"pad", OpPattern::Injective, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         auto pads = n.attrs.get_ints("pads");
         size_t r = in[0].shape.size();
         if (pads.size() != 2 * r) LOOM_THROW(ShapeError, pads.size(), " pads for rank ", r);
         Shape out = in[0].shape;
         for (size_t d = 0; d < r; ++d) {
           if (pads[d] < 0 || pads[d + r] < 0) LOOM_THROW(ShapeError, "negative pads are not supported");
           if (__builtin_add_overflow(out[d], pads[d], &out[d]) || __builtin_add_overflow(out[d], pads[d + r], &out[d]))
             LOOM_THROW(ShapeError, "pads ", pads[d], " and ", pads[d + r], " overflow dimension ", d);
         }
         std::string mode = n.attrs.get_string("mode", "constant");
         if (mode != "constant" && mode != "reflect" && mode != "edge")
           LOOM_THROW(ModelError, "pad mode '", mode, "' is not supported (constant, reflect, edge)");
         return TensorType{out, in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         std::string mode = n.attrs.get_string("mode", "constant");
         ops::PadMode m = mode == "reflect" ? ops::PadMode::Reflect
                          : mode == "edge"  ? ops::PadMode::Edge
                                            : ops::PadMode::Constant;
         return ops::pad(in[0], n.attrs.get_ints("pads"), m, n.attrs.get_float("value", 0.0), name);
       },
       ref::pad});
  add({"resize_nearest", OpPattern::Injective, 3, 3,
       [](const Node&, const std::vector<TensorType>& in) {
         if (in[0].shape.size() != 4) LOOM_THROW(ShapeError, "input must be NCHW, is ", in[0].str());
         if (in[1].shape.size() != 1 || in[2].shape.size() != 1) LOOM_THROW(ShapeError, "index maps must be 1-D");
         return TensorType{{in[0].shape[0], in[0].shape[1], in[1].shape[0], in[2].shape[0]}, in[0].dtype};
       },
       [](const Node&, const std::vector<Tensor>& in, const std::string& name) {
         return ops::resize_nearest(in[0], in[1], in[2], name);
       },
       ref::resize_nearest});
}

}  // namespace loom::graph
