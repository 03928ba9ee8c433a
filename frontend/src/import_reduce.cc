// ONNX operator handlers: reductions.
#include "onnx_importer.h"

namespace loom::frontend::onnx_detail {

namespace {

// Reduce*: axes from the attribute (before opset 18; ReduceSum before 13) or the optional second
// input; empty axes reduce everything, unless noop_with_empty_axes makes the node an identity.
Handler reduce(const std::string& op) {
  return [op](Importer& im, const onnx::NodeProto& n) {
    int x = im.input(n, 0);
    std::vector<int64_t> axes = im.has_input(n, 1) ? im.const_ints(n, 1) : im.attr_ints(n, "axes", {});
    if (axes.empty() && im.attr_int(n, "noop_with_empty_axes", 0)) {
      im.output(n, im.add(n, "identity", {x}));
      return;
    }
    Attrs a = Attrs().set("keepdims", im.attr_int(n, "keepdims", 1));
    if (!axes.empty()) a.set("axes", axes);
    im.output(n, im.add(n, op, {x}, a));
  };
}

// ArgMax, ArgMin: the index of the extreme along one axis (int64).
Handler arg_reduce(const std::string& kind) {
  return [kind](Importer& im, const onnx::NodeProto& n) {
    Attrs a = Attrs()
                  .set("axis", im.attr_int(n, "axis", 0))
                  .set("keepdims", im.attr_int(n, "keepdims", 1))
                  .set("select_last_index", im.attr_int(n, "select_last_index", 0));
    im.output(n, im.add(n, "arg_" + kind, {im.input(n, 0)}, a));
  };
}

// TopK: the values (output 0) and int64 indices (output 1) of the k largest or smallest.
void import_top_k(Importer& im, const onnx::NodeProto& n) {
  std::vector<int64_t> k = im.const_ints(n, 1);
  if (k.size() != 1) im.unsupported(n, "K must hold one value");
  int x = im.input(n, 0);
  for (int o = 0; o < 2; ++o) {
    if (!im.has_output(n, o)) continue;
    Attrs a = Attrs()
                  .set("k", k[0])
                  .set("axis", im.attr_int(n, "axis", -1))
                  .set("largest", im.attr_int(n, "largest", 1))
                  .set("output", o == 0 ? "values" : "indices");
    im.output(n, im.add(n, "top_k", {x}, a, o == 0 ? "" : "_indices"), o);
  }
}

}  // namespace

void add_reduce_handlers(HandlerTable& t) {
  for (auto [onnx_name, op] :
       std::vector<std::pair<const char*, const char*>>{{"ReduceSum", "reduce_sum"},
                                                        {"ReduceMean", "reduce_mean"},
                                                        {"ReduceMax", "reduce_max"},
                                                        {"ReduceMin", "reduce_min"},
                                                        {"ReduceSumSquare", "reduce_sum_square"},
                                                        {"ReduceL1", "reduce_l1"},
                                                        {"ReduceL2", "reduce_l2"},
                                                        {"ReduceLogSum", "reduce_log_sum"},
                                                        {"ReduceLogSumExp", "reduce_log_sum_exp"},
                                                        {"ReduceProd", "reduce_prod"}})
    t[onnx_name] = {{"axes", "keepdims", "noop_with_empty_axes"}, reduce(op), 1};
  t["TopK"] = {{"axis", "largest", "sorted"}, import_top_k, 10};
  t["ArgMax"] = {{"axis", "keepdims", "select_last_index"}, arg_reduce("max"), 11};
  t["ArgMin"] = {{"axis", "keepdims", "select_last_index"}, arg_reduce("min"), 11};
}

}  // namespace loom::frontend::onnx_detail
