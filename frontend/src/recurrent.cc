#include "loom/frontend/recurrent.h"

#include <algorithm>

#include "loom/runtime/error.h"

namespace loom::frontend {

namespace {

using graph::Attrs;
using graph::Shape;

// The builder and the spec, with the graph-building shorthands the cells use.
struct Ctx {
  const NodeBuilder& b;
  const RecurrentSpec& s;

  int op(const std::string& name, std::vector<int> in, const std::string& sfx, Attrs a = {}) {
    return b.op(name, in, std::move(a), sfx);
  }
  // Activation `name` of x; with the spec's clip, of x clamped to [-clip, clip] (ONNX: "applied to
  // the input of activations").
  int act(const std::string& name, int x, const std::string& sfx) {
    if (s.clip > 0) x = op("clip", {x}, sfx + "_clip", Attrs().set("min", -s.clip).set("max", s.clip));
    return op(name, {x}, sfx);
  }
  int add(int a, int c, const std::string& sfx) { return op("add", {a, c}, sfx); }
  int mul(int a, int c, const std::string& sfx) { return op("mul", {a, c}, sfx); }
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
  int dense(int x, int w, int bias, const std::string& sfx) {
    std::vector<int> in{x, w};
    if (bias >= 0) in.push_back(bias);
    return op("dense", in, sfx);
  }
  // Rows [from, to) of direction d of weight node `node` ([D, rows, ...]), reshaped to `shape`.
  int weight(int node, int64_t d, int64_t from, int64_t to, const Shape& shape, const std::string& sfx) {
    return reshape(slice(node, {0, 1}, {d, from}, {d + 1, to}, sfx + "_slice"), shape, sfx);
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

Dir direction_weights(Ctx& c, const RecurrentInputs& in, int64_t d) {
  const RecurrentSpec& s = c.s;
  int64_t H = s.hidden, gh = s.gates() * H;
  std::string sfx = "_d" + std::to_string(d);
  Dir w;
  w.d = d;
  w.acts = s.acts[size_t(d)];
  // GRU without linear_before_reset multiplies the h block's input by r first: keep it apart.
  int64_t joint = s.cell == RecurrentCell::Gru && !s.linear_before_reset ? 2 * H : gh;
  w.r = c.weight(in.r, d, 0, joint, {joint, H}, sfx + "_R");
  if (in.b >= 0) w.rb = c.weight(in.b, d, gh, gh + joint, {joint}, sfx + "_Rb");
  if (joint != gh) {
    w.rh = c.weight(in.r, d, joint, gh, {H, H}, sfx + "_Rh");
    if (in.b >= 0) w.rbh = c.weight(in.b, d, gh + joint, 2 * gh, {H}, sfx + "_Rbh");
  }
  if (s.cell == RecurrentCell::Lstm && in.p >= 0) {
    w.pi = c.weight(in.p, d, 0, H, {H}, sfx + "_Pi");
    w.po = c.weight(in.p, d, H, 2 * H, {H}, sfx + "_Po");
    w.pf = c.weight(in.p, d, 2 * H, 3 * H, {H}, sfx + "_Pf");
  }
  return w;
}

struct State {
  int h = -1, c = -1;  // [batch, H]; c: LSTM only
};

// Direction d's part of an initial state node ([D, batch, H], or [batch, D, H] batch first); zeros
// if absent.
int initial_state(Ctx& c, int node, int64_t d, const std::string& sfx) {
  const RecurrentSpec& s = c.s;
  if (node < 0) return c.b.constant(NDArray::zeros({s.batch, s.hidden}, s.dtype), sfx);
  int64_t axis = s.batch_first ? 1 : 0;
  int part = c.slice(node, {axis}, {d}, {d + 1}, sfx + "_slice");
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
  const RecurrentSpec& s = c.s;
  std::vector<int> masks(size_t(s.seq), -1);
  if (s.lens.empty()) return masks;
  for (int64_t t = 0; t < s.seq; ++t) {
    if (*std::min_element(s.lens.begin(), s.lens.end()) > t) continue;
    NDArray m = NDArray::empty({s.batch, 1}, DataType::Bool());
    for (int64_t b = 0; b < s.batch; ++b) m.set_from_double(b, s.lens[size_t(b)] > t);
    masks[size_t(t)] = c.b.constant(m, "_mask_t" + std::to_string(t));
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
  const RecurrentSpec& s = c.s;
  int64_t gh = s.gates() * s.hidden, d = w.d, time_axis = s.batch_first ? 1 : 0;
  bool backwards = s.reverse || d == 1;
  int zero = -1;
  if (!s.lens.empty()) {
    NDArray z = NDArray::empty({}, s.dtype);
    z.set_from_double(0, 0.0);
    zero = c.b.constant(z, "_zero");
  }
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

// Y: [seq, D, batch, H], or [batch, seq, D, H] batch first.
int stack_y(Ctx& c, const std::vector<Run>& runs) {
  const RecurrentSpec& s = c.s;
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

// Y_h or Y_c: [D, batch, H], or [batch, D, H] batch first.
int stack_final(Ctx& c, const std::vector<int>& states, const std::string& sfx) {
  const RecurrentSpec& s = c.s;
  Shape one = s.batch_first ? Shape{s.batch, 1, s.hidden} : Shape{1, s.batch, s.hidden};
  std::vector<int> parts;
  for (size_t d = 0; d < states.size(); ++d) parts.push_back(c.reshape(states[d], one, sfx + "_d" + std::to_string(d)));
  return c.concat(parts, s.batch_first ? 1 : 0, sfx);
}

void expect(const NodeBuilder& b, int node, const std::string& what, const Shape& want, DataType dtype) {
  if (node < 0) return;
  graph::TensorType t = b.type(node);
  if (t.shape != want || t.dtype != dtype)
    LOOM_THROW(ModelError, "recurrent layer: ", what, " is ", t.str(), ", expected ", dtype.str(), shape_str(want));
}

}  // namespace

std::vector<std::string> default_recurrent_activations(RecurrentCell cell) {
  if (cell == RecurrentCell::Rnn) return {"tanh"};
  if (cell == RecurrentCell::Gru) return {"sigmoid", "tanh"};
  return {"sigmoid", "tanh", "tanh"};
}

RecurrentOutputs build_recurrent(const NodeBuilder& b, const RecurrentSpec& s, const RecurrentInputs& in) {
  const int64_t gh = s.gates() * s.hidden;
  if (s.hidden < 1 || s.seq < 1 || s.batch < 1 || s.input < 1 || (s.dirs != 1 && s.dirs != 2) ||
      (s.reverse && s.dirs != 1))
    LOOM_THROW(ModelError,
               "recurrent layer: hidden, sequence, batch and input sizes must be positive and there must "
               "be one direction (forward or reverse) or two");
  if (!s.dtype.is_float())
    LOOM_THROW(ModelError, "recurrent layer: the data must be floating point, is ", s.dtype.str());
  if (in.x < 0 || in.w < 0 || in.r < 0) LOOM_THROW(ModelError, "recurrent layer: X, W and R are required");
  Shape state = s.batch_first ? Shape{s.batch, s.dirs, s.hidden} : Shape{s.dirs, s.batch, s.hidden};
  expect(b, in.x, "X", s.batch_first ? Shape{s.batch, s.seq, s.input} : Shape{s.seq, s.batch, s.input}, s.dtype);
  expect(b, in.w, "W", {s.dirs, gh, s.input}, s.dtype);
  expect(b, in.r, "R", {s.dirs, gh, s.hidden}, s.dtype);
  expect(b, in.b, "B", {s.dirs, 2 * gh}, s.dtype);
  expect(b, in.initial_h, "initial_h", state, s.dtype);
  if (s.cell == RecurrentCell::Lstm) {
    expect(b, in.initial_c, "initial_c", state, s.dtype);
    expect(b, in.p, "P", {s.dirs, 3 * s.hidden}, s.dtype);
  } else if (in.initial_c >= 0 || in.p >= 0) {
    LOOM_THROW(ModelError, "recurrent layer: initial_c and P are the LSTM's");
  }
  const size_t acts = default_recurrent_activations(s.cell).size();
  if (s.acts.size() != size_t(s.dirs))
    LOOM_THROW(ModelError, "recurrent layer: activations for ", s.acts.size(), " directions, expected ", s.dirs);
  for (const auto& dir : s.acts) {
    if (dir.size() != acts) LOOM_THROW(ModelError, "recurrent layer: ", dir.size(), " activations, expected ", acts);
    for (const std::string& a : dir)
      if (a != "sigmoid" && a != "tanh" && a != "relu")
        LOOM_THROW(ModelError, "recurrent layer: activation '", a, "' is not one of sigmoid, tanh, relu");
  }
  if (!s.lens.empty() && int64_t(s.lens.size()) != s.batch)
    LOOM_THROW(ModelError, "recurrent layer: ", s.lens.size(), " sequence lengths for a batch of ", s.batch);
  for (int64_t l : s.lens)
    if (l < 0 || l > s.seq)
      LOOM_THROW(ModelError, "recurrent layer: sequence length ", l, " is outside [0, ", s.seq, "]");

  Ctx c{b, s};
  const Step step = s.cell == RecurrentCell::Rnn ? rnn_step : s.cell == RecurrentCell::Gru ? gru_step : lstm_step;
  // X W^T + Wb for every step and both directions in one dense: [seq, batch, D*G*H] (batch first: [batch, seq, ..]).
  Shape xs = b.type(in.x).shape;
  int x2d = c.reshape(in.x, {s.seq * s.batch, s.input}, "_x2d");
  int w = c.reshape(in.w, {s.dirs * gh, s.input}, "_W");
  int wb = -1;
  if (in.b >= 0) wb = c.reshape(c.slice(in.b, {1}, {0}, {gh}, "_Wb_slice"), {s.dirs * gh}, "_Wb");
  int xw = c.reshape(c.dense(x2d, w, wb, "_xw2d"), {xs[0], xs[1], s.dirs * gh}, "_xw");

  std::vector<int> masks = step_masks(c);
  std::vector<Run> runs;
  for (int64_t d = 0; d < s.dirs; ++d) {
    std::string sfx = "_d" + std::to_string(d);
    State init{initial_state(c, in.initial_h, d, sfx + "_h0"),
               s.cell == RecurrentCell::Lstm ? initial_state(c, in.initial_c, d, sfx + "_c0") : -1};
    runs.push_back(run_direction(c, direction_weights(c, in, d), xw, init, masks, step));
  }
  RecurrentOutputs out;
  out.y = stack_y(c, runs);
  std::vector<int> hs, cs;
  for (const Run& r : runs) {
    hs.push_back(r.last.h);
    cs.push_back(r.last.c);
  }
  out.y_h = stack_final(c, hs, "_Y_h");
  if (s.cell == RecurrentCell::Lstm) out.y_c = stack_final(c, cs, "_Y_c");
  return out;
}

}  // namespace loom::frontend
