// ONNX operator handlers: the recurrent layers RNN, GRU and LSTM, unrolled over time into graph
// operators (Loom graphs have no loops, and sequence lengths are static).
#include "onnx_importer.h"

namespace loom::frontend::onnx_detail {

namespace {

enum class Cell { Rnn, Gru, Lstm };

// ONNX input positions.
enum : int { kX = 0, kW, kR, kB, kSeqLens, kInitialH, kInitialC, kP };

int64_t gate_count(Cell cell) { return cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4; }

std::vector<std::string> default_activations(Cell cell) {
  if (cell == Cell::Rnn) return {"Tanh"};
  if (cell == Cell::Gru) return {"Sigmoid", "Tanh"};
  return {"Sigmoid", "Tanh", "Tanh"};
}

// The node's attributes and sizes, checked once.
struct Spec {
  Cell cell = Cell::Rnn;
  int64_t hidden = 0, gates = 0, seq = 0, batch = 0, input = 0, dirs = 1;
  bool reverse = false;              // direction="reverse": the one direction runs from the last step
  bool batch_first = false;          // layout=1: X, Y, initial and final states have batch first
  bool linear_before_reset = false;  // GRU
  double clip = 0;                   // clip > 0: every activation's input is clamped to [-clip, clip]
  DataType dtype;
  std::vector<std::vector<std::string>> acts;  // graph operator of each activation, per direction
  std::vector<int64_t> lens;                   // sequence_lens when some sequence is shorter; else empty
};

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
  if (!im.known(n, kSeqLens))
    im.unsupported(n, "sequence_lens depends on the model's inputs; only constant sequence lengths are supported");
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
  s.gates = gate_count(cell);
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
  int64_t gh = s.gates * s.hidden;
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

// The importer, the node and its spec, with the graph-building shorthands the cells use.
struct Ctx {
  Importer& im;
  const onnx::NodeProto& n;
  Spec s;

  int op(const std::string& name, std::vector<int> in, const std::string& sfx, Attrs a = {}) {
    return im.add(n, name, std::move(in), std::move(a), sfx);
  }
  // Activation `name` of x; with the node's clip, of x clamped to [-clip, clip] (ONNX: "applied to
  // the input of activations").
  int act(const std::string& name, int x, const std::string& sfx) {
    if (s.clip > 0) x = op("clip", {x}, sfx + "_clip", Attrs().set("min", -s.clip).set("max", s.clip));
    return op(name, {x}, sfx);
  }
  int add(int a, int b, const std::string& sfx) { return op("add", {a, b}, sfx); }
  int mul(int a, int b, const std::string& sfx) { return op("mul", {a, b}, sfx); }
  int reshape(int x, const Shape& shape, const std::string& sfx) {
    return op("reshape", {x}, sfx, Attrs().set("shape", shape));
  }
  int slice(int x, const Shape& axes, const Shape& starts, const Shape& ends, const std::string& sfx) {
    Attrs a;
    a.set("starts", starts).set("ends", ends).set("axes", axes).set("steps", Shape(axes.size(), 1));
    return op("slice", {x}, sfx, a);
  }
  // Columns [from, to) of a [batch, K] tensor (gate blocks).
  int cols(int x, int64_t from, int64_t to, const std::string& sfx) { return slice(x, {1}, {from}, {to}, sfx); }
  int dense(int x, int w, int b, const std::string& sfx) {
    std::vector<int> in{x, w};
    if (b >= 0) in.push_back(b);
    return op("dense", in, sfx);
  }
  // Rows [from, to) of direction d of weight input i ([D, rows, ...]), reshaped to `shape`.
  int weight(int i, int64_t d, int64_t from, int64_t to, const Shape& shape, const std::string& sfx) {
    return reshape(slice(im.input(n, i), {0, 1}, {d, from}, {d + 1, to}, sfx + "_slice"), shape, sfx);
  }
  // Concatenation of any number of parts (the graph operator takes at most 64).
  int concat(std::vector<int> parts, int64_t axis, const std::string& sfx) {
    constexpr size_t kMaxParts = 64;
    while (parts.size() > 1) {
      std::vector<int> joined;
      for (size_t i = 0; i < parts.size(); i += kMaxParts) {
        std::vector<int> chunk(parts.begin() + i, parts.begin() + std::min(parts.size(), i + kMaxParts));
        joined.push_back(chunk.size() == 1 ? chunk[0] : op("concat", chunk, sfx, Attrs().set("axis", axis)));
      }
      parts = std::move(joined);
    }
    return parts[0];
  }
};

// One direction's recurrent weights, sliced once (not per step: large constants would be copied).
struct Dir {
  int64_t d = 0;
  int r = -1, rb = -1;            // R [G*H, H], Rb [G*H] (-1: no B); GRU without linear_before_reset: z, r blocks only
  int rh = -1, rbh = -1;          // GRU without linear_before_reset: the h block of R and Rb
  int pi = -1, po = -1, pf = -1;  // LSTM peepholes [H] (-1: no P)
  std::vector<std::string> acts;
};

Dir direction_weights(Ctx& c, int64_t d) {
  const Spec& s = c.s;
  int64_t H = s.hidden, gh = s.gates * H;
  std::string sfx = "_d" + std::to_string(d);
  bool b = c.im.has_input(c.n, kB);
  Dir w;
  w.d = d;
  w.acts = s.acts[size_t(d)];
  // GRU without linear_before_reset multiplies the h block's input by r first: keep it apart.
  int64_t joint = s.cell == Cell::Gru && !s.linear_before_reset ? 2 * H : gh;
  w.r = c.weight(kR, d, 0, joint, {joint, H}, sfx + "_R");
  if (b) w.rb = c.weight(kB, d, gh, gh + joint, {joint}, sfx + "_Rb");
  if (joint != gh) {
    w.rh = c.weight(kR, d, joint, gh, {H, H}, sfx + "_Rh");
    if (b) w.rbh = c.weight(kB, d, gh + joint, 2 * gh, {H}, sfx + "_Rbh");
  }
  if (s.cell == Cell::Lstm && c.im.has_input(c.n, kP)) {
    w.pi = c.weight(kP, d, 0, H, {H}, sfx + "_Pi");
    w.po = c.weight(kP, d, H, 2 * H, {H}, sfx + "_Po");
    w.pf = c.weight(kP, d, 2 * H, 3 * H, {H}, sfx + "_Pf");
  }
  return w;
}

struct State {
  int h = -1, c = -1;  // [batch, H]; c: LSTM only
};

// Direction d's part of initial state input i ([D, batch, H], or [batch, D, H] with layout=1); zeros if absent.
int initial_state(Ctx& c, int i, int64_t d, const std::string& sfx) {
  const Spec& s = c.s;
  if (!c.im.has_input(c.n, i)) return c.im.add_const(c.n, NDArray::zeros({s.batch, s.hidden}, s.dtype), sfx);
  int64_t axis = s.batch_first ? 1 : 0;
  int part = c.slice(c.im.input(c.n, i), {axis}, {d}, {d + 1}, sfx + "_slice");
  return c.reshape(part, {s.batch, s.hidden}, sfx);
}

// A cell's step: the new state from the step's input projection x (X_t W^T + Wb, [batch, G*H]).
using Step = State (*)(Ctx&, const Dir&, int x, const State& prev, const std::string& sfx);

// H_t = f(x + H_{t-1} R^T + Rb).
State rnn_step(Ctx& c, const Dir& w, int x, const State& prev, const std::string& sfx) {
  int pre = c.add(x, c.dense(prev.h, w.r, w.rb, sfx + "_rec"), sfx + "_pre");
  return {c.act(w.acts[0], pre, sfx + "_h")};
}

// z, r = f(x_zr + H_{t-1} R_zr^T + Rb_zr); candidate h~ = g(x_h + r (.) (H_{t-1} R_h^T + Rb_h)) with
// linear_before_reset, else g(x_h + (r (.) H_{t-1}) R_h^T + Rb_h); H_t = h~ + z (.) (H_{t-1} - h~).
State gru_step(Ctx& c, const Dir& w, int x, const State& prev, const std::string& sfx) {
  int64_t H = c.s.hidden;
  int rec = c.dense(prev.h, w.r, w.rb, sfx + "_rec");
  int zr = c.add(c.cols(x, 0, 2 * H, sfx + "_xzr"), w.rh >= 0 ? rec : c.cols(rec, 0, 2 * H, sfx + "_reczr"),
                 sfx + "_zr_pre");
  int z = c.act(w.acts[0], c.cols(zr, 0, H, sfx + "_z_pre"), sfx + "_z");
  int r = c.act(w.acts[0], c.cols(zr, H, 2 * H, sfx + "_r_pre"), sfx + "_r");
  int reset = w.rh >= 0 ? c.dense(c.mul(r, prev.h, sfx + "_rh"), w.rh, w.rbh, sfx + "_rech")
                        : c.mul(r, c.cols(rec, 2 * H, 3 * H, sfx + "_rech"), sfx + "_reset");
  int cand = c.act(w.acts[1], c.add(c.cols(x, 2 * H, 3 * H, sfx + "_xh"), reset, sfx + "_cand_pre"), sfx + "_cand");
  int keep = c.mul(z, c.op("sub", {prev.h, cand}, sfx + "_diff"), sfx + "_keep");
  return {c.add(cand, keep, sfx + "_h")};
}

// Gates i, o, f, c: i = f(.. + Pi (.) C_{t-1}), f = f(.. + Pf (.) C_{t-1}), c~ = g(..),
// C_t = f (.) C_{t-1} + i (.) c~, o = f(.. + Po (.) C_t), H_t = o (.) h(C_t).
State lstm_step(Ctx& c, const Dir& w, int x, const State& prev, const std::string& sfx) {
  int64_t H = c.s.hidden;
  int pre = c.add(x, c.dense(prev.h, w.r, w.rb, sfx + "_rec"), sfx + "_pre");
  auto gate = [&](int64_t k, int peephole, int cell, const std::string& name) {
    int g = c.cols(pre, k * H, (k + 1) * H, sfx + "_" + name + "_pre");
    if (peephole >= 0) g = c.add(g, c.mul(peephole, cell, sfx + "_" + name + "_peep"), sfx + "_" + name + "_sum");
    return g;
  };
  int i = c.act(w.acts[0], gate(0, w.pi, prev.c, "i"), sfx + "_i");
  int f = c.act(w.acts[0], gate(2, w.pf, prev.c, "f"), sfx + "_f");
  int cand = c.act(w.acts[1], gate(3, -1, -1, "c"), sfx + "_cand");
  int cell = c.add(c.mul(f, prev.c, sfx + "_forget"), c.mul(i, cand, sfx + "_write"), sfx + "_c");
  int o = c.act(w.acts[0], gate(1, w.po, cell, "o"), sfx + "_o");
  return {c.mul(o, c.act(w.acts[2], cell, sfx + "_hc"), sfx + "_h"), cell};
}

// Per step, a bool [batch, 1] that is true where the sequence still runs; -1 where all do.
std::vector<int> step_masks(Ctx& c) {
  const Spec& s = c.s;
  std::vector<int> masks(size_t(s.seq), -1);
  if (s.lens.empty()) return masks;
  for (int64_t t = 0; t < s.seq; ++t) {
    if (*std::min_element(s.lens.begin(), s.lens.end()) > t) continue;
    NDArray m = folded_const({s.batch, 1}, DataType::Bool(), c.im.where(c.n));
    for (int64_t b = 0; b < s.batch; ++b) m.set_from_double(b, s.lens[size_t(b)] > t);
    masks[size_t(t)] = c.im.add_const(c.n, m, "_mask_t" + std::to_string(t));
  }
  return masks;
}

struct Run {
  std::vector<int> ys;  // Y_t [batch, H] by t
  State last;
};

// Runs one direction over every step (the reverse one from the last step). Masking past a sequence's
// end keeps the state and zeroes Y, which also starts a reversed sequence at its own last step.
Run run_direction(Ctx& c, const Dir& w, int xw, State state, const std::vector<int>& masks, Step step) {
  const Spec& s = c.s;
  int64_t gh = s.gates * s.hidden, d = w.d, time_axis = s.batch_first ? 1 : 0;
  bool backwards = s.reverse || d == 1;
  int zero = s.lens.empty() ? -1 : c.im.scalar(c.n, s.dtype, 0.0, "_zero");
  Run run;
  run.ys.assign(size_t(s.seq), -1);
  for (int64_t k = 0; k < s.seq; ++k) {
    int64_t t = backwards ? s.seq - 1 - k : k;
    std::string sfx = "_d" + std::to_string(d) + "_t" + std::to_string(t);
    int x = c.slice(xw, {time_axis, 2}, {t, d * gh}, {t + 1, (d + 1) * gh}, sfx + "_xslice");
    State next = step(c, w, c.reshape(x, {s.batch, gh}, sfx + "_x"), state, sfx);
    int y = next.h, m = masks[size_t(t)];
    if (m >= 0) {
      y = c.op("where", {m, next.h, zero}, sfx + "_y");
      next.h = c.op("where", {m, next.h, state.h}, sfx + "_hkeep");
      if (next.c >= 0) next.c = c.op("where", {m, next.c, state.c}, sfx + "_ckeep");
    }
    run.ys[size_t(t)] = y;
    state = next;
  }
  run.last = state;
  return run;
}

// Y: [seq, D, batch, H], or [batch, seq, D, H] with layout=1.
int stack_y(Ctx& c, const std::vector<Run>& runs) {
  const Spec& s = c.s;
  int64_t time_axis = s.batch_first ? 1 : 0;
  Shape one = s.batch_first ? Shape{s.batch, 1, 1, s.hidden} : Shape{1, 1, s.batch, s.hidden};
  std::vector<int> dirs;
  for (size_t d = 0; d < runs.size(); ++d) {
    std::vector<int> steps;
    for (size_t t = 0; t < runs[d].ys.size(); ++t)
      steps.push_back(c.reshape(runs[d].ys[t], one, "_y_d" + std::to_string(d) + "_t" + std::to_string(t)));
    dirs.push_back(c.concat(steps, time_axis, "_Y_d" + std::to_string(d)));
  }
  return c.concat(dirs, time_axis + 1, "_Y");
}

// Y_h or Y_c: [D, batch, H], or [batch, D, H] with layout=1.
int stack_final(Ctx& c, const std::vector<int>& states, const std::string& sfx) {
  const Spec& s = c.s;
  Shape one = s.batch_first ? Shape{s.batch, 1, s.hidden} : Shape{1, s.batch, s.hidden};
  std::vector<int> parts;
  for (size_t d = 0; d < states.size(); ++d) parts.push_back(c.reshape(states[d], one, sfx + "_d" + std::to_string(d)));
  return c.concat(parts, s.batch_first ? 1 : 0, sfx);
}

void import_recurrent(Importer& im, const onnx::NodeProto& n, Cell cell, Step step) {
  Ctx c{im, n, read_spec(im, n, cell)};
  const Spec& s = c.s;
  int64_t gh = s.gates * s.hidden;
  // X W^T + Wb for every step and both directions in one dense: [seq, batch, D*G*H] (batch first with layout=1).
  Shape xs = im.type(im.input(n, kX)).shape;
  int x2d = c.reshape(im.input(n, kX), {s.seq * s.batch, s.input}, "_x2d");
  int w = c.reshape(im.input(n, kW), {s.dirs * gh, s.input}, "_W");
  int wb = -1;
  if (im.has_input(n, kB)) wb = c.reshape(c.slice(im.input(n, kB), {1}, {0}, {gh}, "_Wb_slice"), {s.dirs * gh}, "_Wb");
  int xw = c.reshape(c.dense(x2d, w, wb, "_xw2d"), {xs[0], xs[1], s.dirs * gh}, "_xw");

  std::vector<int> masks = step_masks(c);
  std::vector<Run> runs;
  for (int64_t d = 0; d < s.dirs; ++d) {
    std::string sfx = "_d" + std::to_string(d);
    State init{initial_state(c, kInitialH, d, sfx + "_h0"),
               cell == Cell::Lstm ? initial_state(c, kInitialC, d, sfx + "_c0") : -1};
    runs.push_back(run_direction(c, direction_weights(c, d), xw, init, masks, step));
  }

  if (im.has_output(n, 0)) im.output(n, stack_y(c, runs), 0);
  std::vector<int> hs, cs;
  for (const Run& r : runs) {
    hs.push_back(r.last.h);
    cs.push_back(r.last.c);
  }
  if (im.has_output(n, 1)) im.output(n, stack_final(c, hs, "_Y_h"), 1);
  if (cell == Cell::Lstm && im.has_output(n, 2)) im.output(n, stack_final(c, cs, "_Y_c"), 2);
}

void import_rnn(Importer& im, const onnx::NodeProto& n) { import_recurrent(im, n, Cell::Rnn, rnn_step); }
void import_gru(Importer& im, const onnx::NodeProto& n) { import_recurrent(im, n, Cell::Gru, gru_step); }
void import_lstm(Importer& im, const onnx::NodeProto& n) { import_recurrent(im, n, Cell::Lstm, lstm_step); }

}  // namespace

// clip, activation_alpha and activation_beta are not listed: the importer refuses them by name.
void add_rnn_handlers(HandlerTable& t) {
  t["RNN"] = {{"hidden_size", "direction", "activations", "layout", "clip"}, import_rnn, 7};
  t["GRU"] = {{"hidden_size", "direction", "activations", "layout", "linear_before_reset", "clip"}, import_gru, 7};
  t["LSTM"] = {{"hidden_size", "direction", "activations", "layout", "input_forget", "clip"}, import_lstm, 7};
}

}  // namespace loom::frontend::onnx_detail
