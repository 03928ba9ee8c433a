// ONNX operator handlers: scatters, N-d gathers and Einstein sums (ScatterElements, Scatter,
// ScatterND, GatherND, Einsum), each one graph operator (op_registry_scatter.cc).
#include "loom/ops/layers.h"
#include "onnx_importer.h"

namespace loom::frontend::onnx_detail {

namespace {

// ScatterElements (reduction from opset 16: add, mul; 18: max, min) and the deprecated Scatter
// of opsets 9-10 (the same without reduction).
void import_scatter_elements(Importer& im, const onnx::NodeProto& n) {
  Attrs a = Attrs().set("axis", im.attr_int(n, "axis", 0)).set("reduction", im.attr_string(n, "reduction", "none"));
  im.output(n, im.add(n, "scatter_elements", {im.input(n, 0), im.input(n, 1), im.input(n, 2)}, a));
}

void import_scatter_nd(Importer& im, const onnx::NodeProto& n) {
  Attrs a = Attrs().set("reduction", im.attr_string(n, "reduction", "none"));
  im.output(n, im.add(n, "scatter_nd", {im.input(n, 0), im.input(n, 1), im.input(n, 2)}, a));
}

void import_gather_nd(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0), i = im.input(n, 1);
  int64_t b = im.attr_int(n, "batch_dims", 0);
  Shape xs = im.type(x).shape, is = im.type(i).shape;
  int y = im.add(n, "gather_nd", {x, i}, Attrs().set("batch_dims", b));
  // gather_nd gives [1] where ONNX's result is rank 0 (every index dimension consumed).
  if (is.size() == 1 && static_cast<int64_t>(xs.size()) == is[0])
    y = im.add(n, "reshape", {y}, Attrs().set("shape", Shape{}), "_scalar");
  im.output(n, y);
}

void import_einsum(Importer& im, const onnx::NodeProto& n) {
  if (!im.attr(n, "equation")) im.unsupported(n, "needs the 'equation' attribute");
  std::string eq = im.attr_string(n, "equation", "");
  std::vector<int> in;
  for (int k = 0; k < n.input_size(); ++k) in.push_back(im.input(n, k));
  if (in.empty()) im.unsupported(n, "needs at least one input");
  int y = im.add(n, "einsum", in, Attrs().set("equation", eq));
  // einsum gives [1] for a full contraction, rank 0 in ONNX.
  std::vector<Shape> shapes;
  for (int id : in) shapes.push_back(im.type(id).shape);
  if (ops::einsum_spec(eq, shapes).output.empty())
    y = im.add(n, "reshape", {y}, Attrs().set("shape", Shape{}), "_scalar");
  im.output(n, y);
}

}  // namespace

void add_scatter_handlers(HandlerTable& t) {
  t["ScatterElements"] = {{"axis", "reduction"}, import_scatter_elements, 11};
  t["Scatter"] = {{"axis"}, import_scatter_elements, 9};
  t["ScatterND"] = {{"reduction"}, import_scatter_nd, 11};
  t["GatherND"] = {{"batch_dims"}, import_gather_nd, 11};
  t["Einsum"] = {{"equation"}, import_einsum, 12};
}

}  // namespace loom::frontend::onnx_detail
