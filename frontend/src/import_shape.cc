// ONNX operator handlers: shapes, constants and data movement.
#include <cmath>
#include <cstring>
#include <set>

#include "onnx_importer.h"

namespace loom::frontend::onnx_detail {

namespace {

// A table of values rather than a shape vector (a short integer vector, which shape computations
// fold): what the shape variables may slice or size at run time.
bool is_table(const Shape& shape, DataType dtype) {
  if (shape.size() > 1 || dtype.is_float()) return true;
  return !shape.empty() && shape[0] > 16;
}

void import_flatten(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  Shape s = im.type(x).shape;
  int64_t r = static_cast<int64_t>(s.size()), axis = im.attr_int(n, "axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r) im.unsupported(n, "axis out of range");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < r; ++d) (d < axis ? outer : inner) *= s[d];
  im.output(n, im.add(n, "reshape", {x}, Attrs().set("shape", Shape{outer, inner})));
}

// Reshape (or a constant reshaped at import).
void emit_reshape(Importer& im, const onnx::NodeProto& n, int x, Shape shape) {
  if (im.is_const(x)) {
    im.output(n, im.add_const(n, reshape_const(im.constant(n, 0), shape)));
    return;
  }
  im.output(n, im.add(n, "reshape", {x}, Attrs().set("shape", shape)));
}

void import_reshape(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  Shape in = im.type(x).shape;
  std::vector<int64_t> spec = im.const_ints(n, 1);
  bool allowzero = im.attr_int(n, "allowzero", 0) != 0;
  Shape out;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0 && !allowzero) {
      if (i >= in.size()) im.unsupported(n, "shape copies dimension " + std::to_string(i) + " that the input lacks");
      d = in[i];
    }
    if (d == -1) {
      if (infer >= 0) im.unsupported(n, "shape has more than one -1");
      infer = static_cast<int>(i);
      out.push_back(1);
      continue;
    }
    if (d < 0) im.unsupported(n, "negative dimension in shape");
    out.push_back(d);
    if (__builtin_mul_overflow(known, d, &known) || known > kMaxElements)
      im.unsupported(n, "shape " + shape_str(spec) + " is too large");
  }
  int64_t total = numel(in, im.where(n));
  if (infer >= 0) {
    if (known == 0 || total % known != 0)
      im.unsupported(n, "cannot infer the -1 dimension of " + shape_str(spec) + " for " + shape_str(in));
    out[infer] = total / known;
  }
  if (numel(out, im.where(n)) != total) im.unsupported(n, "cannot reshape " + shape_str(in) + " to " + shape_str(out));
  emit_reshape(im, n, x, out);
}

std::vector<int64_t> axes_of(Importer& im, const onnx::NodeProto& n) {
  if (im.opset() >= 13) {
    // From opset 13 the axes are an input; an attribute there would be silently ignored.
    if (im.attr(n, "axes"))
      im.unsupported(n, "attribute 'axes' is opset 11's form; from opset 13 the axes are the second input");
    return im.has_input(n, 1) ? im.const_ints(n, 1) : std::vector<int64_t>{};
  }
  return im.attr_ints(n, "axes", {});
}

void import_squeeze(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  Shape in = im.type(x).shape;
  std::vector<int64_t> axes = axes_of(im, n);
  int64_t r = static_cast<int64_t>(in.size());
  std::set<int64_t> drop;
  for (int64_t a : axes) {
    int64_t ax = a < 0 ? a + r : a;
    if (ax < 0 || ax >= r || in[ax] != 1)
      im.unsupported(n, "axis " + std::to_string(a) + " is not a dimension of size 1");
    drop.insert(ax);
  }
  Shape out;
  for (int64_t d = 0; d < r; ++d)
    if (axes.empty() ? in[d] != 1 : !drop.count(d)) out.push_back(in[d]);
  emit_reshape(im, n, x, out);
}

void import_unsqueeze(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  Shape in = im.type(x).shape;
  std::vector<int64_t> axes = axes_of(im, n);
  int64_t r = static_cast<int64_t>(in.size() + axes.size());
  std::set<int64_t> add;
  for (int64_t a : axes) {
    int64_t ax = a < 0 ? a + r : a;
    if (ax < 0 || ax >= r || !add.insert(ax).second) im.unsupported(n, "invalid axes");
  }
  Shape out;
  size_t k = 0;
  for (int64_t d = 0; d < r; ++d) out.push_back(add.count(d) ? 1 : in[k++]);
  emit_reshape(im, n, x, out);
}

void import_transpose(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  size_t r = im.type(x).shape.size();
  std::vector<int64_t> perm;
  for (size_t d = 0; d < r; ++d) perm.push_back(static_cast<int64_t>(r - 1 - d));
  perm = im.attr_ints(n, "perm", perm);
  if (im.is_const(x) && im.type(x).dtype == DataType::Int(64)) {
    im.output(n, im.add_const(n, transpose_const(im.constant(n, 0), perm)));
    return;
  }
  im.output(n, im.add(n, "transpose", {x}, Attrs().set("perm", perm)));
}

void import_concat(Importer& im, const onnx::NodeProto& n) {
  std::vector<int> in;
  bool all_const = true;
  for (int i = 0; i < n.input_size(); ++i) {
    in.push_back(im.input(n, i));
    all_const &= im.is_const(in.back());
  }
  if (in.empty()) im.unsupported(n, "needs at least one input");  // found by fuzz_onnx (read in[0])
  int64_t axis = im.attr_int(n, "axis", 0);
  if (all_const && im.type(in[0]).dtype == DataType::Int(64)) {
    std::vector<NDArray> parts;
    for (int i = 0; i < n.input_size(); ++i) parts.push_back(im.constant(n, i));
    im.output(n, im.add_const(n, concat_const(parts, axis)));
    return;
  }
  im.output(n, im.add(n, "concat", in, Attrs().set("axis", axis)));
}

void import_pad(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  std::string mode = im.attr_string(n, "mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    im.unsupported(n, "mode '" + mode + "' is not supported (constant, reflect, edge)");
  std::vector<int64_t> pads = im.const_ints(n, 1);
  if (im.has_input(n, 3)) im.unsupported(n, "the 'axes' input is not supported");
  double value = im.has_input(n, 2) ? im.scalar_value(n, 2) : 0.0;
  for (int64_t p : pads)
    if (p < 0) im.unsupported(n, "negative pads (cropping) are not supported");
  im.output(n, im.add(n, "pad", {x}, Attrs().set("pads", pads).set("mode", mode).set("value", value)));
}

void import_constant(Importer& im, const onnx::NodeProto& n) {
  if (im.attr(n, "value")) {
    im.output(n, im.add_const(n, im.attr_tensor(n, "value")));
  } else if (auto* a = im.attr(n, "value_float")) {
    NDArray v = NDArray::empty({}, DataType::Float(32));
    v.data<float>()[0] = a->f();
    im.output(n, im.add_const(n, v));
  } else if (auto* a = im.attr(n, "value_int")) {
    im.output(n, im.add_const(n, int64_array({a->i()}, {})));
  } else if (auto* a = im.attr(n, "value_ints")) {
    std::vector<int64_t> v(a->ints().begin(), a->ints().end());
    im.output(n, im.add_const(n, int64_array(v, {static_cast<int64_t>(v.size())})));
  } else if (auto* a = im.attr(n, "value_floats")) {
    NDArray v = NDArray::empty({a->floats_size()}, DataType::Float(32));
    std::copy(a->floats().begin(), a->floats().end(), v.data<float>());
    im.output(n, im.add_const(n, v));
  } else {
    im.unsupported(n, "needs a value, value_float(s) or value_int(s) attribute");
  }
}

void import_shape(Importer& im, const onnx::NodeProto& n) {
  Shape s = im.type(im.input(n, 0)).shape;
  int64_t r = static_cast<int64_t>(s.size());
  int64_t start = im.attr_int(n, "start", 0), end = im.attr_int(n, "end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, start, r);
  std::vector<int64_t> v(s.begin() + start, s.begin() + end);
  im.output(n, im.add_const(n, int64_array(v, {static_cast<int64_t>(v.size())})));
}

void import_gather(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0), i = im.input(n, 1);
  int64_t axis = im.attr_int(n, "axis", 0);
  if (im.is_const(x) && im.is_const(i)) {
    im.output(n, im.add_const(n, gather_const(im.constant(n, 0), im.constant(n, 1), axis)));
    return;
  }
  im.output(n, im.add(n, "gather", {x, i}, Attrs().set("axis", axis)));
}

void import_gather_elements(Importer& im, const onnx::NodeProto& n) {
  im.output(n, im.add(n, "gather_elements", {im.input(n, 0), im.input(n, 1)},
                      Attrs().set("axis", im.attr_int(n, "axis", 0))));
}

void import_slice(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  std::vector<int64_t> starts = im.const_ints(n, 1), ends = im.const_ints(n, 2);
  std::vector<int64_t> axes, steps(starts.size(), 1);
  for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (im.has_input(n, 3)) axes = im.const_ints(n, 3);
  if (im.has_input(n, 4)) steps = im.const_ints(n, 4);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    im.unsupported(n, "starts, ends, axes and steps must have the same length");
  // A table (not a shape vector) sliced where the shape variables say, such as rotary angles at
  // positions [past, past + seq), is sliced at run time.
  const TensorType& xt = im.type(x);
  bool table = !im.from_shapes(x) && is_table(xt.shape, xt.dtype);
  bool at_run_time = table && (im.from_shapes(im.input(n, 1)) || im.from_shapes(im.input(n, 2)));
  if (im.is_const(x) && !at_run_time) {
    im.output(n, im.add_const(n, slice_const(im.constant(n, 0), starts, ends, axes, steps)));
    return;
  }
  im.output(n, im.add(n, "slice", {x},
                      Attrs().set("starts", starts).set("ends", ends).set("axes", axes).set("steps", steps), "",
                      /*fold=*/false));
}

// Cast to `to`: a constant is converted at import, a run-time tensor by the cast operator.
int emit_cast(Importer& im, const onnx::NodeProto& n, int x, DataType to) {
  if (im.type(x).dtype == to) return x;
  return im.add(n, "cast", {x}, Attrs().set("to", to.str()));  // a small constant is folded at once
}

void import_cast(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  im.output(n, emit_cast(im, n, x, onnx_dtype(static_cast<int>(im.attr_int(n, "to", 1)), im.where(n))));
}

void import_cast_like(Importer& im, const onnx::NodeProto& n) {
  im.output(n, emit_cast(im, n, im.input(n, 0), im.type(im.input(n, 1)).dtype));
}

// Split into equal parts or the given sizes (an input from opset 13, an attribute before),
// one strided slice per output.
void import_split(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  Shape s = im.type(x).shape;  // a copy: adding nodes moves the graph's
  int64_t r = static_cast<int64_t>(s.size()), axis = im.attr_int(n, "axis", 0);
  if (axis < -r || axis >= r) im.unsupported(n, "axis " + std::to_string(axis) + " out of range");
  if (axis < 0) axis += r;
  std::vector<int64_t> sizes = im.has_input(n, 1) ? im.const_ints(n, 1) : im.attr_ints(n, "split", {});
  int64_t parts = n.output_size();
  if (sizes.empty()) {
    int64_t num = im.attr_int(n, "num_outputs", parts), dim = s[size_t(axis)];
    if (num != parts) im.unsupported(n, "num_outputs " + std::to_string(num) + " differs from the node's outputs");
    int64_t each = (dim + num - 1) / num;  // the last part may be smaller (opset 18)
    for (int64_t k = 0; k < num; ++k) sizes.push_back(std::min(each, dim - k * each));
  }
  if (static_cast<int64_t>(sizes.size()) != parts)
    im.unsupported(n, std::to_string(sizes.size()) + " sizes for " + std::to_string(parts) + " outputs");
  int64_t begin = 0;
  for (int64_t k = 0; k < parts; ++k) {
    if (sizes[size_t(k)] < 1) im.unsupported(n, "part " + std::to_string(k) + " would be empty");
    int64_t end = begin + sizes[size_t(k)];
    if (end > s[size_t(axis)]) im.unsupported(n, "the sizes add up to more than the dimension");
    Attrs a =
        Attrs().set("starts", Shape{begin}).set("ends", Shape{end}).set("axes", Shape{axis}).set("steps", Shape{1});
    im.output(n, im.add(n, "slice", {x}, a, "_" + std::to_string(k)), static_cast<int>(k));
    begin = end;
  }
  if (begin != s[size_t(axis)]) im.unsupported(n, "the sizes do not add up to the dimension");
}

void import_expand(Importer& im, const onnx::NodeProto& n) {
  im.output(n, im.add(n, "expand", {im.input(n, 0)}, Attrs().set("shape", im.const_ints(n, 1))));
}

void import_tile(Importer& im, const onnx::NodeProto& n) {
  im.output(n, im.add(n, "tile", {im.input(n, 0)}, Attrs().set("repeats", im.const_ints(n, 1))));
}

void import_trilu(Importer& im, const onnx::NodeProto& n) {
  double k = im.has_input(n, 1) ? im.scalar_value(n, 1) : 0.0;
  if (!(std::fabs(k) < 1e15)) im.unsupported(n, "k is out of range");
  im.output(n, im.add(n, "trilu", {im.input(n, 0)},
                      Attrs().set("k", static_cast<int64_t>(k)).set("upper", im.attr_int(n, "upper", 1))));
}

void import_cumsum(Importer& im, const onnx::NodeProto& n) {
  std::vector<int64_t> axis = im.const_ints(n, 1);
  if (axis.size() != 1) im.unsupported(n, "axis must hold one value");
  Attrs a = Attrs()
                .set("axis", axis[0])
                .set("exclusive", im.attr_int(n, "exclusive", 0))
                .set("reverse", im.attr_int(n, "reverse", 0));
  im.output(n, im.add(n, "cumsum", {im.input(n, 0)}, a));
}

void import_one_hot(Importer& im, const onnx::NodeProto& n) {
  std::vector<int64_t> depth = im.const_ints(n, 1);
  if (depth.size() != 1) im.unsupported(n, "depth must hold one value");
  Attrs a = Attrs().set("depth", depth[0]).set("axis", im.attr_int(n, "axis", -1));
  im.output(n, im.add(n, "one_hot", {im.input(n, 0), im.input(n, 2)}, a));
}

// DepthToSpace (modes DCR, CRD) and SpaceToDepth: a reshape to 6-D, a transpose, a reshape back.
void import_depth_space(Importer& im, const onnx::NodeProto& n, bool to_space) {
  int x = im.input(n, 0);
  Shape s = im.type(x).shape;
  int64_t b = im.attr_int(n, "blocksize", 0);
  if (s.size() != 4) im.unsupported(n, "the input must be NCHW");
  if (b < 1) im.unsupported(n, "blocksize must be positive");
  int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  Shape mid, out;
  std::vector<int64_t> perm;
  if (to_space) {
    if (b > C || C % (b * b)) im.unsupported(n, "the channels are not a multiple of blocksize^2");
    std::string mode = im.attr_string(n, "mode", "DCR");
    if (mode != "DCR" && mode != "CRD") im.unsupported(n, "mode '" + mode + "' is not DCR or CRD");
    bool crd = mode == "CRD";
    mid = crd ? Shape{N, C / (b * b), b, b, H, W} : Shape{N, b, b, C / (b * b), H, W};
    perm = crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2};
    out = {N, C / (b * b), H * b, W * b};
  } else {
    if (b > H || b > W || H % b || W % b) im.unsupported(n, "the height and width are not multiples of blocksize");
    mid = {N, C, H / b, b, W / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    out = {N, C * b * b, H / b, W / b};
  }
  int r = im.add(n, "reshape", {x}, Attrs().set("shape", mid), "_split");
  int t = im.add(n, "transpose", {r}, Attrs().set("perm", perm), "_move");
  im.output(n, im.add(n, "reshape", {t}, Attrs().set("shape", out)));
}
void import_depth_to_space(Importer& im, const onnx::NodeProto& n) { import_depth_space(im, n, true); }
void import_space_to_depth(Importer& im, const onnx::NodeProto& n) { import_depth_space(im, n, false); }

// If with a condition known at import: the chosen branch, inlined. A condition computed at run
// time would need both branches' shapes to agree and control flow: refused.
void import_if(Importer& im, const onnx::NodeProto& n) {
  im.require_known(n, 0, "the condition is computed at run time (only known conditions are inlined)");
  bool cond = im.scalar_value(n, 0) != 0;
  const onnx::AttributeProto* branch = im.attr(n, cond ? "then_branch" : "else_branch");
  if (!branch || branch->type() != onnx::AttributeProto::GRAPH)
    im.unsupported(n, std::string("has no ") + (cond ? "then_branch" : "else_branch") + " graph");
  if (branch->g().initializer_size() > 0) im.unsupported(n, "initializers inside a branch are not supported");
  std::vector<int> outs = im.inline_subgraph(branch->g(), im.where(n) + " branch output");
  if (static_cast<int>(outs.size()) != n.output_size())
    im.unsupported(
        n, "the branch has " + std::to_string(outs.size()) + " outputs, the node " + std::to_string(n.output_size()));
  for (size_t k = 0; k < outs.size(); ++k) im.output(n, outs[k], static_cast<int>(k));
}

// ReverseSequence with lengths known at import: a gather along the time axis whose index
// reverses the first len[b] steps of each batch entry.
void import_reverse_sequence(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  Shape s = im.type(x).shape;
  int64_t time = im.attr_int(n, "time_axis", 0), batch = im.attr_int(n, "batch_axis", 1);
  if (s.size() < 2 || (time != 0 && time != 1) || batch != 1 - time)
    im.unsupported(n, "time_axis and batch_axis must be 0 and 1 (either way round)");
  std::vector<int64_t> len = im.const_ints(n, 1);
  if (static_cast<int64_t>(len.size()) != s[size_t(batch)]) im.unsupported(n, "sequence_lens must have one per batch");
  NDArray index = folded_const(s, DataType::Int(64), im.where(n));
  int64_t inner = index.numel() / (s[0] * s[1]);
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j) {
      int64_t t = time == 0 ? i : j, b = time == 0 ? j : i, L = len[size_t(b)];
      if (L < 1 || L > s[size_t(time)]) im.unsupported(n, "a sequence length is out of range");
      for (int64_t k = 0; k < inner; ++k)
        index.set_from_double((i * s[1] + j) * inner + k, double(t < L ? L - 1 - t : t));
    }
  im.output(n, im.add(n, "gather_elements", {x, im.add_const(n, index, "_index")}, Attrs().set("axis", time)));
}

// Range, EyeLike, Size: values that depend only on constants and shapes, computed at import.
// The rows a range whose bounds come from shapes reads from its table (positions [past, past +
// seq) of a sequence): at most this many.
constexpr int64_t kRunTimeRangeTable = int64_t(1) << 14;

void import_range(Importer& im, const onnx::NodeProto& n) {
  double s = im.scalar_value(n, 0), l = im.scalar_value(n, 1), d = im.scalar_value(n, 2);
  DataType t = im.type(im.input(n, 0)).dtype;
  if (d == 0) im.unsupported(n, "delta is 0");
  double count = std::max(0.0, std::ceil((l - s) / d));
  if (!(count >= 1 && count <= double(kMaxElements))) im.unsupported(n, "the range is empty or too large");
  // Bounds from shapes (shape variables), counting up by 1 from 0 or more: rows [start, limit) of a
  // table of 0, 1, 2, ..., sliced at run time where the variables say. Other ranges are folded: one
  // that changes with the variables is then an error naming it where the probes are unified.
  const bool exact_type = t == DataType::Int(64) || t == DataType::Int(32) || t == DataType::Float(32);
  if ((im.input_from_shapes(n, 0) || im.input_from_shapes(n, 1)) && d == 1 && s >= 0 &&
      l <= double(kRunTimeRangeTable) && s == std::floor(s) && l == std::floor(l) && exact_type) {
    NDArray table = NDArray::empty({kRunTimeRangeTable}, t);
    for (int64_t i = 0; i < kRunTimeRangeTable; ++i) table.set_from_double(i, double(i));
    std::vector<int64_t> starts{int64_t(s)}, ends{int64_t(l)}, axes{0}, steps{1};
    im.output(n, im.add(n, "slice", {im.add_const(n, table, "_table")},
                        Attrs().set("starts", starts).set("ends", ends).set("axes", axes).set("steps", steps), "",
                        /*fold=*/false));
    return;
  }
  NDArray out = folded_const({static_cast<int64_t>(count)}, t, im.where(n));
  for (int64_t i = 0; i < out.numel(); ++i) out.set_from_double(i, s + double(i) * d);
  im.output(n, im.add_const(n, out));
}

void import_eye_like(Importer& im, const onnx::NodeProto& n) {
  const TensorType& t = im.type(im.input(n, 0));
  if (t.shape.size() != 2) im.unsupported(n, "the input must be 2-D");
  DataType dt = im.attr(n, "dtype") ? onnx_dtype(static_cast<int>(im.attr_int(n, "dtype", 1)), im.where(n)) : t.dtype;
  int64_t k = im.attr_int(n, "k", 0);
  NDArray out = folded_const(t.shape, dt, im.where(n));
  for (int64_t i = 0; i < t.shape[0]; ++i)
    for (int64_t j = 0; j < t.shape[1]; ++j) out.set_from_double(i * t.shape[1] + j, j - i == k ? 1.0 : 0.0);
  im.output(n, im.add_const(n, out));
}

// HannWindow, HammingWindow, BlackmanWindow of a known size: a0 - a1 cos(2 pi k/N) + a2 cos(4 pi k/N).
Handler window(double a0, double a1, double a2) {
  return [=](Importer& im, const onnx::NodeProto& n) {
    std::vector<int64_t> size = im.const_ints(n, 0);
    if (size.size() != 1 || size[0] < 1) im.unsupported(n, "size must be one positive value");
    DataType t = onnx_dtype(static_cast<int>(im.attr_int(n, "output_datatype", 1)), im.where(n));
    double N = double(im.attr_int(n, "periodic", 1) ? size[0] : size[0] - 1);
    NDArray w = folded_const({size[0]}, t, im.where(n));
    const double kPi = 3.14159265358979323846;
    for (int64_t k = 0; k < size[0]; ++k) {
      double x = N > 0 ? 2 * kPi * double(k) / N : 0.0;
      w.set_from_double(k, a0 - a1 * std::cos(x) + a2 * std::cos(2 * x));
    }
    im.output(n, im.add_const(n, w));
  };
}

void import_size(Importer& im, const onnx::NodeProto& n) {
  im.output(n, im.add_const(n, int64_array({im.type(im.input(n, 0)).numel()}, {})));
}

void import_constant_of_shape(Importer& im, const onnx::NodeProto& n) {
  std::vector<int64_t> shape = im.const_ints(n, 0);
  NDArray fill = im.attr(n, "value") ? im.attr_tensor(n, "value") : NDArray::zeros({1}, DataType::Float(32));
  if (fill.numel() != 1)
    im.unsupported(n, "value must hold exactly one element, it has " + std::to_string(fill.numel()));
  int64_t count = 1;
  for (int64_t d : shape) count = count < 0 || d < 0 || (d > 0 && count > (int64_t(1) << 40) / d) ? -1 : count * d;
  // A table of a shape that comes from shapes (shape variables).
  const bool table_of_shapes = im.input_from_shapes(n, 0) && is_table(shape, fill.dtype());
  if ((count > kMaxFoldedElements && !shape.empty()) || table_of_shapes) {
    // Large, or a table whose shape changes with the shape variables: a kernel fills it at run
    // time (folding would compute and store it at import).
    NDArray one = NDArray::empty({}, fill.dtype());
    std::memcpy(one.raw_data(), fill.raw_data(), fill.dtype().bytes());
    im.output(n, im.add(n, "expand", {im.add_const(n, one, "_value")}, Attrs().set("shape", shape), "",
                        /*fold=*/!table_of_shapes));
    return;
  }
  NDArray out = folded_const(shape, fill.dtype(), im.where(n));
  for (int64_t i = 0; i < out.numel(); ++i)
    std::memcpy(static_cast<char*>(out.raw_data()) + i * fill.dtype().bytes(), fill.raw_data(), fill.dtype().bytes());
  im.output(n, im.add_const(n, out));
}

}  // namespace

void add_shape_handlers(HandlerTable& t) {
  t["Flatten"] = {{"axis"}, import_flatten, 1};
  t["Reshape"] = {{"allowzero"}, import_reshape};
  t["Squeeze"] = {{"axes"}, import_squeeze, 1};
  t["Unsqueeze"] = {{"axes"}, import_unsqueeze, 1};
  t["Transpose"] = {{"perm"}, import_transpose, 1};
  t["Concat"] = {{"axis"}, import_concat, 4};
  t["Pad"] = {{"mode"}, import_pad};
  t["Constant"] = {{"value", "value_float", "value_floats", "value_int", "value_ints"}, import_constant, 1};
  t["Shape"] = {{"start", "end"}, import_shape, 1};
  t["Gather"] = {{"axis"}, import_gather, 1};
  t["Slice"] = {{}, import_slice};
  t["Cast"] = {{"to"}, import_cast, 6};
  t["CastLike"] = {{}, import_cast_like, 15};
  t["GatherElements"] = {{"axis"}, import_gather_elements, 11};
  t["Split"] = {{"axis", "split", "num_outputs"}, import_split, 11};
  t["Expand"] = {{}, import_expand, 8};
  t["Tile"] = {{}, import_tile, 6};
  t["Trilu"] = {{"upper"}, import_trilu, 14};
  t["CumSum"] = {{"exclusive", "reverse"}, import_cumsum, 11};
  t["OneHot"] = {{"axis"}, import_one_hot, 11};
  t["Range"] = {{}, import_range, 11};
  t["EyeLike"] = {{"dtype", "k"}, import_eye_like, 9};
  t["Size"] = {{}, import_size, 1};
  t["If"] = {{"then_branch", "else_branch"}, import_if, 11};
  t["ReverseSequence"] = {{"time_axis", "batch_axis"}, import_reverse_sequence, 10};
  t["HannWindow"] = {{"output_datatype", "periodic"}, window(0.5, 0.5, 0.0), 17};
  t["HammingWindow"] = {{"output_datatype", "periodic"}, window(25.0 / 46.0, 21.0 / 46.0, 0.0), 17};
  t["BlackmanWindow"] = {{"output_datatype", "periodic"}, window(0.42, 0.5, 0.08), 17};
  t["DepthToSpace"] = {{"blocksize", "mode"}, import_depth_to_space, 11};
  t["SpaceToDepth"] = {{"blocksize"}, import_space_to_depth, 1};
  t["ConstantOfShape"] = {{"value"}, import_constant_of_shape, 9};
}

}  // namespace loom::frontend::onnx_detail
