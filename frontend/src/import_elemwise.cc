// ONNX operator handlers: element-wise arithmetic, activations and functions.
#include "onnx_importer.h"

namespace loom::frontend::onnx_detail {

namespace {

Handler unary(const std::string& op) {
  return [op](Importer& im, const onnx::NodeProto& n) { im.output(n, im.add(n, op, {im.input(n, 0)})); };
}

Handler binary(const std::string& op) {
  return [op](Importer& im, const onnx::NodeProto& n) {
    im.output(n, im.add(n, op, {im.input(n, 0), im.input(n, 1)}));
  };
}

// The graph operator of all the node's inputs, with its integer attributes copied (import_node
// has checked their names against the table).
Handler with_int_attrs(const std::string& op) {
  return [op](Importer& im, const onnx::NodeProto& n) {
    std::vector<int> in;
    for (int i = 0; i < n.input_size(); ++i) in.push_back(im.input(n, i));
    Attrs a;
    for (const onnx::AttributeProto& at : n.attribute()) a.set(at.name(), im.attr_int(n, at.name(), 0));
    im.output(n, im.add(n, op, in, a));
  };
}

// Clip: bounds known at import are attributes of `clip` (which int8 quantization folds into a
// requantization); bounds computed at run time are maximum/minimum operators.
void import_clip(Importer& im, const onnx::NodeProto& n) {
  Attrs a;
  int x = im.input(n, 0);
  bool all_known = true;
  for (int i : {1, 2}) {
    if (!im.has_input(n, i)) continue;
    int b = im.input(n, i);
    if (im.type(b).numel() != 1) im.unsupported(n, "the bounds must be scalars, one is " + im.type(b).str());
    all_known &= im.is_const(b);
  }
  // Bounds in order, min then max (numpy's clip: max wins where min > max), as attributes when
  // both are known, else as maximum and minimum operators.
  for (auto [i, key, op] : {std::tuple{1, "min", "maximum"}, std::tuple{2, "max", "minimum"}}) {
    if (!im.has_input(n, i)) continue;
    if (all_known)
      a.set(key, im.scalar_value(n, i));
    else
      x = im.add(n, op, {x, im.input(n, i)}, {}, std::string("_") + key);
  }
  im.output(n, im.add(n, "clip", {x}, a));
}

// Dropout at inference: the identity, and a mask of ones if the node asks for one. Training
// mode (a true training_mode input with a nonzero ratio) drops at random: refused.
void import_dropout(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  if (im.has_input(n, 2)) {
    im.require_known(n, 2, "training_mode is computed at run time; only inference (training_mode false) is supported");
    double ratio = im.has_input(n, 1) ? im.scalar_value(n, 1) : 0.5;
    if (im.scalar_value(n, 2) != 0 && ratio != 0)
      im.unsupported(n, "training_mode=true drops elements at random; only inference is supported");
  }
  im.output(n, im.add(n, "identity", {x}));
  if (im.has_output(n, 1)) {
    NDArray mask = folded_const(im.type(x).shape, DataType::Bool(), im.where(n));
    for (int64_t i = 0; i < mask.numel(); ++i) mask.set_from_double(i, 1);
    im.output(n, im.add_const(n, mask, "_mask"), 1);
  }
}

// PRelu: x where x >= 0, slope * x elsewhere (slope broadcasts to x).
void import_prelu(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0), slope = im.input(n, 1);
  int neg = im.add(n, "less", {x, im.scalar(n, im.type(x).dtype, 0, "_zero")}, {}, "_negative");
  im.output(n, im.add(n, "where", {neg, im.add(n, "mul", {x, slope}, {}, "_sloped"), x}));
}

// Pow: the exponent converted to the base's type; integer powers are computed in float64 and
// rounded back (exact while the result fits 53 bits).
void import_pow(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0), y = im.input(n, 1);
  DataType t = im.type(x).dtype;
  if (t.is_float()) {
    if (im.type(y).dtype != t) y = im.add(n, "cast", {y}, Attrs().set("to", t.str()), "_exponent");
    im.output(n, im.add(n, "pow", {x, y}));
    return;
  }
  std::string f64 = DataType::Float(64).str();
  int xf = im.add(n, "cast", {x}, Attrs().set("to", f64), "_base64");
  int yf = im.type(y).dtype == DataType::Float(64) ? y : im.add(n, "cast", {y}, Attrs().set("to", f64), "_exp64");
  // numpy's power of integers is exact; a float exponent's result is truncated by the cast.
  int p = im.add(n, "pow", {xf, yf}, {}, "_pow64");
  if (!im.type(y).dtype.is_float()) p = im.add(n, "round", {p}, {}, "_round");
  im.output(n, im.add(n, "cast", {p}, Attrs().set("to", t.str())));
}

// BitShift of unsigned integers: x * 2^y (LEFT) or x / 2^y (RIGHT), with 2^y computed in
// float64 (exact for shifts below 53; shifts at or past the width are beyond the spec's use).
void import_bit_shift(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0), y = im.input(n, 1);
  DataType t = im.type(x).dtype;
  if (!t.is_uint() || im.type(y).dtype != t) im.unsupported(n, "the operands must be one unsigned integer type");
  std::string dir = im.attr_string(n, "direction", "");
  if (dir != "LEFT" && dir != "RIGHT") im.unsupported(n, "direction must be LEFT or RIGHT, is '" + dir + "'");
  std::string f64 = DataType::Float(64).str();
  int yf = im.add(n, "cast", {y}, Attrs().set("to", f64), "_shift64");
  int p = im.add(n, "pow", {im.scalar(n, DataType::Float(64), 2.0, "_two"), yf}, {}, "_pow2");
  int factor = im.add(n, "cast", {p}, Attrs().set("to", t.str()), "_factor");
  im.output(n, im.add(n, dir == "LEFT" ? "mul" : "div", {x, factor}));
}

// Max, Min, Sum, Mean of any number of inputs (numpy broadcasting): a chain of the binary graph
// operator, divided by the count for Mean.
Handler variadic(const std::string& op, bool mean = false) {
  return [op, mean](Importer& im, const onnx::NodeProto& n) {
    if (n.input_size() < 1) im.unsupported(n, "needs at least one input");
    int acc = im.input(n, 0);
    for (int i = 1; i < n.input_size(); ++i) acc = im.add(n, op, {acc, im.input(n, i)});
    if (n.input_size() == 1) acc = im.add(n, "identity", {acc});
    if (mean && n.input_size() > 1) {
      DataType t = im.type(acc).dtype;
      if (!t.is_float()) im.unsupported(n, "Mean of integer inputs");
      NDArray k = NDArray::empty({1}, t);
      k.set_from_double(0, 1.0 / n.input_size());
      acc = im.add(n, "mul", {acc, im.add_const(n, k)});
    }
    im.output(n, acc);
  };
}

// An element-wise operator with float attributes (alpha, beta, gamma): those the node sets are
// copied (import_node has checked their names against the table); the graph operator has ONNX's
// defaults for the rest.
Handler unary_with_floats(const std::string& op) {
  return [op](Importer& im, const onnx::NodeProto& n) {
    Attrs a;
    for (const onnx::AttributeProto& at : n.attribute()) a.set(at.name(), im.attr_float(n, at.name(), 0.0));
    im.output(n, im.add(n, op, {im.input(n, 0)}, a));
  };
}

}  // namespace

void add_elemwise_handlers(HandlerTable& t) {
  for (auto [onnx_name, op, since] : std::vector<std::tuple<const char*, const char*, int>>{
           {"Relu", "relu", 6},         {"Sigmoid", "sigmoid", 6},   {"Tanh", "tanh", 6},
           {"Exp", "exp", 6},           {"Sqrt", "sqrt", 6},         {"Neg", "neg", 6},
           {"Abs", "abs", 6},           {"Identity", "identity", 1}, {"HardSwish", "hard_swish", 14},
           {"Softplus", "softplus", 1}, {"Softsign", "softsign", 1}, {"Reciprocal", "reciprocal", 6},
           {"Log", "log", 6},           {"Sign", "sign", 9},         {"Floor", "floor", 6},
           {"Ceil", "ceil", 6},         {"Round", "round", 11},      {"Sin", "sin", 7},
           {"Cos", "cos", 7},           {"Tan", "tan", 7},           {"Erf", "erf", 9},
           {"Asin", "asin", 7},         {"Acos", "acos", 7},         {"Atan", "atan", 7},
           {"Sinh", "sinh", 9},         {"Cosh", "cosh", 9},         {"Asinh", "asinh", 9},
           {"Acosh", "acosh", 9},       {"Atanh", "atanh", 9},       {"Not", "logical_not", 1},
           {"IsNaN", "is_nan", 9}})
    t[onnx_name] = {{}, unary(op), since};
  t["Dropout"] = {{"seed", "ratio"}, import_dropout, 7};  // ratio: the attribute before opset 12
  for (auto [onnx_name, op, attrs, since] :
       std::vector<std::tuple<const char*, const char*, std::vector<std::string>, int>>{
           {"LeakyRelu", "leaky_relu", {"alpha"}, 6},
           {"Elu", "elu", {"alpha"}, 6},
           {"Selu", "selu", {"alpha", "gamma"}, 6},
           {"Celu", "celu", {"alpha"}, 12},
           {"HardSigmoid", "hard_sigmoid", {"alpha", "beta"}, 6},
           {"ThresholdedRelu", "thresholded_relu", {"alpha"}, 10},
           {"Shrink", "shrink", {"lambd", "bias"}, 9}})
    t[onnx_name] = {attrs, unary_with_floats(op), since};
  for (auto [onnx_name, op] :
       std::vector<std::pair<const char*, const char*>>{{"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}, {"Div", "div"}})
    t[onnx_name] = {{}, binary(op), 7};
  for (auto [onnx_name, op] : std::vector<std::pair<const char*, const char*>>{{"Equal", "equal"},
                                                                               {"Less", "less"},
                                                                               {"LessOrEqual", "less_equal"},
                                                                               {"Greater", "greater"},
                                                                               {"GreaterOrEqual", "greater_equal"},
                                                                               {"And", "logical_and"},
                                                                               {"Or", "logical_or"},
                                                                               {"Xor", "logical_xor"}})
    t[onnx_name] = {{}, binary(op), 7};
  t["Pow"] = {{}, import_pow, 7};
  t["PRelu"] = {{}, import_prelu, 9};
  t["BitShift"] = {{"direction"}, import_bit_shift, 11};
  t["Where"] = {{}, with_int_attrs("where"), 9};
  t["Mod"] = {{"fmod"}, with_int_attrs("mod"), 10};
  t["IsInf"] = {{"detect_negative", "detect_positive"}, with_int_attrs("is_inf"), 10};
  t["Max"] = {{}, variadic("maximum"), 6};
  t["Min"] = {{}, variadic("minimum"), 6};
  t["Sum"] = {{}, variadic("add"), 6};
  t["Mean"] = {{}, variadic("add", true), 6};
  t["Clip"] = {{}, import_clip};
}

}  // namespace loom::frontend::onnx_detail
