// ONNX operator handlers: the recurrent layers RNN, GRU and LSTM, their attributes and inputs
// checked here and unrolled by loom/frontend/recurrent.h.
#include "loom/frontend/recurrent.h"
#include "onnx_importer.h"

namespace loom::frontend::onnx_detail {

namespace {

using Cell = RecurrentCell;

// ONNX input positions.
enum : int { kX = 0, kW, kR, kB, kSeqLens, kInitialH, kInitialC, kP };

std::vector<std::string> default_activations(Cell cell) {
  if (cell == Cell::Rnn) return {"Tanh"};
  if (cell == Cell::Gru) return {"Sigmoid", "Tanh"};
  return {"Sigmoid", "Tanh", "Tanh"};
}

using Spec = RecurrentSpec;

std::string activation_op(Importer& im, const onnx::NodeProto& n, const std::string& name) {
  if (name == "Sigmoid") return "sigmoid";
  if (name == "Tanh") return "tanh";
  if (name == "Relu") return "relu";
  im.unsupported(n, "activation '" + name + "' is not supported (only Sigmoid, Tanh and Relu)");
}

std::vector<std::vector<std::string>> activations(Importer& im, const onnx::NodeProto& n, Cell cell, int64_t dirs) {
  std::vector<std::string> defaults = default_activations(cell), names;
  if (auto* a = im.attr(n, "activations")) {
    if (a->type() != onnx::AttributeProto::STRINGS)
      im.unsupported(n, "attribute 'activations' must be a list of strings");
    names.assign(a->strings().begin(), a->strings().end());
    if (names.size() != defaults.size() * size_t(dirs))
      im.unsupported(n, "activations lists " + std::to_string(names.size()) + " functions, expected " +
                            std::to_string(defaults.size() * size_t(dirs)) + " (" + std::to_string(defaults.size()) +
                            " per direction)");
  } else {
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  std::vector<std::vector<std::string>> ops(static_cast<size_t>(dirs));
  for (size_t i = 0; i < names.size(); ++i) ops[i / defaults.size()].push_back(activation_op(im, n, names[i]));
  return ops;
}

// sequence_lens must be known at import: steps past a sequence's end are masked with constants.
std::vector<int64_t> sequence_lengths(Importer& im, const onnx::NodeProto& n, const Spec& s) {
  if (!im.has_input(n, kSeqLens)) return {};
  im.require_known(n, kSeqLens,
                   "sequence_lens depends on the model's inputs; only constant sequence lengths are supported");
  std::vector<int64_t> lens = im.const_ints(n, kSeqLens);
  if (int64_t(lens.size()) != s.batch)
    im.unsupported(
        n, "sequence_lens has " + std::to_string(lens.size()) + " values for a batch of " + std::to_string(s.batch));
  bool all_full = true;
  for (int64_t l : lens) {
    if (l < 0 || l > s.seq)
      im.unsupported(n, "sequence length " + std::to_string(l) + " is outside [0, " + std::to_string(s.seq) + "]");
    all_full &= l == s.seq;
  }
  return all_full ? std::vector<int64_t>{} : lens;
}

void expect_shape(Importer& im, const onnx::NodeProto& n, int i, const std::string& what, const Shape& want) {
  if (!im.has_input(n, i)) return;
  Shape got = im.type(im.input(n, i)).shape;
  if (got != want) im.unsupported(n, what + " has shape " + shape_str(got) + ", expected " + shape_str(want));
}

Spec read_spec(Importer& im, const onnx::NodeProto& n, Cell cell) {
  Spec s;
  s.cell = cell;
  // hidden_size is optional: R [D, G*H, H] gives it.
  const Shape r_shape = im.type(im.input(n, kR)).shape;
  s.hidden = im.attr(n, "hidden_size") ? im.attr_int(n, "hidden_size", 0) : r_shape.size() == 3 ? r_shape[2] : 0;
  if (s.hidden <= 0) im.unsupported(n, "hidden_size must be a positive integer (or R [D, G*H, H] must give it)");
  std::string direction = im.attr_string(n, "direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    im.unsupported(n, "direction '" + direction + "' is not one of forward, reverse, bidirectional");
  s.dirs = direction == "bidirectional" ? 2 : 1;
  s.reverse = direction == "reverse";
  int64_t layout = im.attr_int(n, "layout", 0);
  if (layout != 0 && layout != 1) im.unsupported(n, "layout must be 0 or 1");
  s.batch_first = layout == 1;
  int64_t lbr = cell == Cell::Gru ? im.attr_int(n, "linear_before_reset", 0) : 0;
  if (lbr != 0 && lbr != 1) im.unsupported(n, "linear_before_reset must be 0 or 1");
  s.linear_before_reset = lbr == 1;
  if (im.attr(n, "clip")) {
    s.clip = im.attr_float(n, "clip", 0);
    if (!(s.clip > 0)) im.unsupported(n, "clip must be a positive threshold");
  }
  if (cell == Cell::Lstm && im.attr_int(n, "input_forget", 0) != 0)
    im.unsupported(n, "input_forget=1 (coupled input and forget gates) is not supported");

  TensorType x = im.type(im.input(n, kX));
  if (x.shape.size() != 3) im.unsupported(n, "X must have rank 3, is " + x.str());
  if (!x.dtype.is_float()) im.unsupported(n, "X must be floating point, is " + x.str());
  s.dtype = x.dtype;
  s.seq = x.shape[s.batch_first ? 1 : 0];
  s.batch = x.shape[s.batch_first ? 0 : 1];
  s.input = x.shape[2];
  int64_t gh = s.gates() * s.hidden;
  Shape state = s.batch_first ? Shape{s.batch, s.dirs, s.hidden} : Shape{s.dirs, s.batch, s.hidden};
  expect_shape(im, n, kW, "W", {s.dirs, gh, s.input});
  expect_shape(im, n, kR, "R", {s.dirs, gh, s.hidden});
  expect_shape(im, n, kB, "B", {s.dirs, 2 * gh});
  expect_shape(im, n, kInitialH, "initial_h", state);
  if (cell == Cell::Lstm) {
    expect_shape(im, n, kInitialC, "initial_c", state);
    expect_shape(im, n, kP, "P", {s.dirs, 3 * s.hidden});
  }
  s.acts = activations(im, n, cell, s.dirs);
  s.lens = sequence_lengths(im, n, s);
  return s;
}

void import_recurrent(Importer& im, const onnx::NodeProto& n, Cell cell) {
  RecurrentSpec s = read_spec(im, n, cell);
  RecurrentInputs in{im.input(n, kX), im.input(n, kW), im.input(n, kR)};
  if (im.has_input(n, kB)) in.b = im.input(n, kB);
  if (im.has_input(n, kInitialH)) in.initial_h = im.input(n, kInitialH);
  if (cell == Cell::Lstm && im.has_input(n, kInitialC)) in.initial_c = im.input(n, kInitialC);
  if (cell == Cell::Lstm && im.has_input(n, kP)) in.p = im.input(n, kP);
  RecurrentOutputs out = build_recurrent(im.builder(n), s, in);
  if (im.has_output(n, 0)) im.output(n, out.y, 0);
  if (im.has_output(n, 1)) im.output(n, out.y_h, 1);
  if (cell == Cell::Lstm && im.has_output(n, 2)) im.output(n, out.y_c, 2);
}

void import_rnn(Importer& im, const onnx::NodeProto& n) { import_recurrent(im, n, Cell::Rnn); }
void import_gru(Importer& im, const onnx::NodeProto& n) { import_recurrent(im, n, Cell::Gru); }
void import_lstm(Importer& im, const onnx::NodeProto& n) { import_recurrent(im, n, Cell::Lstm); }

}  // namespace

// clip, activation_alpha and activation_beta are not listed: the importer refuses them by name.
void add_rnn_handlers(HandlerTable& t) {
  t["RNN"] = {{"hidden_size", "direction", "activations", "layout", "clip"}, import_rnn, 7};
  t["GRU"] = {{"hidden_size", "direction", "activations", "layout", "linear_before_reset", "clip"}, import_gru, 7};
  t["LSTM"] = {{"hidden_size", "direction", "activations", "layout", "input_forget", "clip"}, import_lstm, 7};
}

}  // namespace loom::frontend::onnx_detail
