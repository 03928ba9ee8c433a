// Pass: partition_accel. Chooses what runs on the accelerator:
//   requantize(conv2d(x_int8, W_int8[, b_int32]))  -> accel_conv2d
//   requantize(dense(x_int8, W_int8[, b_int32]))   -> accel_dense
//   (also requantize_channel with power-of-two multipliers: per-channel shifts, a fourth input)
//   requantize(add_shifted(a_int8, b_int8))         -> accel_add (residual connections)
//   requantize(dense(x_int8 [rows, K], ...)) with more rows than the config's batch, and
//   requantize(matmul(a_int8, b_int8)) (attention's QKᵀ and AV, one kernel per batch matrix)
//                                                   -> accel_conv2d, 1x1 over a [1, K, rows, 1] image
// on the config's blocked layout, with weights packed (and zero-padded to whole blocks) and the
// model's round-half-up folded into the bias at compile time. Batch and channels that are not
// whole blocks are zero-padded by accel_pack and cropped by accel_unpack; the padded weights and
// bias are zero, so padded channels never reach a real one. Packs and unpacks sit only at CPU
// boundaries: a pack of an unpack of the same blocked shape cancels, so consecutive accelerator
// layers pass blocked data straight through (the executor keeps it in device memory). What stays
// on the CPU is reported with the reason.
#include <algorithm>
#include <cstring>
#include <map>

#include "loom/graph/layout.h"
#include "loom/graph/op_attrs.h"
#include "loom/graph/passes.h"
#include "loom/graph/quantize.h"
#include "loom/ops/quantized.h"
#include "loom/runtime/error.h"

namespace loom::graph {

namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Each of the O output channels' right shift: requantize's one shift, or requantize_channel's
// power-of-two multipliers read as shifts (empty for other multipliers).
std::vector<int> right_shifts(const Graph& g, const Node& rq, int64_t O) {
  if (rq.op == "requantize") return std::vector<int>(size_t(O), int(rq.attrs.get_int("shift")));
  std::vector<int> s = channel_shifts(g, rq).value_or(std::vector<int>{});
  return int64_t(s.size()) == O ? s : std::vector<int>{};
}

// Digit p (of `passes`, `bits` wide each, signed) of w = sum_p d_p 2^(p bits).
int weight_digit(int64_t w, int bits, int p) {
  const int64_t base = int64_t(1) << bits, half = base / 2;
  for (int k = 0;; ++k) {
    int64_t d = ((w + half) % base + base) % base - half;  // the signed residue in [-half, half)
    if (k == p) return int(d);
    w = (w - d) / base;
  }
}

// How many passes of the config's wgt_bits-bit digits a layer's constant weights need (1: they fit
// the multipliers), 0 when even the widest of AccelConfig::weight_widths does not hold them.
int weight_passes(const NDArray& w, const accel::AccelConfig& cfg) {
  const int8_t* v = static_cast<const int8_t*>(w.raw_data());
  const auto [lo, hi] = std::minmax_element(v, v + w.numel());
  for (int bits : cfg.weight_widths()) {
    auto [rlo, rhi] = cfg.weight_range(bits);
    if (w.numel() == 0 || (*lo >= rlo && *hi <= rhi)) return bits / cfg.wgt_bits;
  }
  return 0;
}

struct Rewriter {
  Graph& g;
  const accel::AccelConfig& cfg;
  std::map<std::pair<int, int64_t>, int> packed;    // (value, padded channels) -> its pack
  std::map<std::pair<int64_t, int64_t>, int> eyes;  // (lshift_a, lshift_b) -> identity blocks; (-1, -1): plain

  // The blocked (padded) form of an NCHW or NC int8 value with channels padded to `c_padded`.
  int pack(int x, int64_t c_padded, const std::string& name, int64_t n = -1) {
    auto key = std::make_pair(x, c_padded);
    auto it = packed.find(key);
    if (it != packed.end()) return it->second;
    if (n < 0) n = g.type_of(x).shape[0];
    Attrs a = Attrs().set("b", int64_t(cfg.batch)).set("bi", int64_t(cfg.block_in));
    a.set("n_padded", round_up(n, cfg.batch)).set("c_padded", c_padded);
    return packed[key] = g.add_op("accel_pack", g.unique_name(name), {x}, a);
  }
  int unpack(int y, const TensorType& want, const std::string& name) {
    return g.add_op("accel_unpack", g.unique_name(name), {y}, Attrs().set("n", want.shape[0]).set("c", want.shape[1]));
  }

  int reshape(int v, Shape shape, const std::string& name) {
    return g.add_op("reshape", g.unique_name(name), {v}, Attrs().set("shape", std::move(shape)));
  }
  int transpose_2d(int v, const std::string& name) {
    return g.add_op("transpose", g.unique_name(name), {v}, Attrs().set("perm", std::vector<int64_t>{1, 0}));
  }

  // Weights [O, I] packed on the CPU at run time (the right operand of a matmul), as a 1x1
  // convolution's [Op/bo, Ip/bi, 1, 1, bo, bi].
  int pack_weights_at_run_time(int w, int64_t O, int64_t I, const std::string& name) {
    int64_t op = round_up(O, cfg.block_out), ip = round_up(I, cfg.block_in);
    int w4 = reshape(w, {O, I, 1, 1}, name + "_oi11");
    Attrs a = Attrs().set("b", int64_t(cfg.block_out)).set("bi", int64_t(cfg.block_in));
    a.set("n_padded", op).set("c_padded", ip);
    return g.add_op("accel_pack", g.unique_name(name), {w4}, a);
  }

  // x [rows, K] int8 (a value of known shape, maybe not typed yet) times blocked weights [N/bo, K/bi, 1, 1, bo, bi],
  // requantized as rq says: a 1x1 convolution over the image [1, K, rows, 1], whose tiles reuse each weight block for a
  // tile of rows (a dense layer's schedule reloads the weights for every batch block). The bias is `layer`'s (or zero)
  // with the rounding folded in. Returns the [rows, N] int8 result.
  int rows_times_weights(int x, int64_t rows, int64_t K, int w_blocked, int64_t N, const Node& rq, const Node& layer,
                         const std::string& name, int passes = 1) {
    int64_t op = round_up(N, cfg.block_out), ip = round_up(K, cfg.block_in);
    int image = reshape(transpose_2d(x, name + "_cols"), {1, K, rows, 1}, name + "_image");
    std::vector<int> in = {pack(image, ip, name + "_pack", 1), w_blocked};
    add_requantization(in, rq, layer, N, op, name);
    Attrs a = requantize_attrs(rq).set("stride", int64_t(1)).set("pad", int64_t(0));
    if (passes > 1) a.set("digit_bits", int64_t(cfg.wgt_bits));
    int y = g.add_op("accel_conv2d", g.unique_name(name + "_accel"), in, a);
    int out = unpack(y, TensorType{{1, N, rows, 1}, DataType::Int(8)}, name + "_unpack");
    return transpose_2d(reshape(out, {N, rows}, name + "_nrows"), name + "_rows");
  }

  // requantize(matmul(a [B..., M, K], b [B..., K, N])): per matrix of the batch, a times bᵀ as
  // weights packed at run time; the results concatenated.
  int product(const Node& rq, const Node& mm) {
    const Shape &as = g.type_of(mm.inputs[0]).shape, &bs = g.type_of(mm.inputs[1]).shape;
    int64_t M = as[as.size() - 2], K = as.back(), N = bs.back(), batch = 1;
    for (size_t d = 0; d + 2 < as.size(); ++d) batch *= as[d];
    int a3 = reshape(mm.inputs[0], {batch, M, K}, mm.name + "_a3"),
        b3 = reshape(mm.inputs[1], {batch, K, N}, mm.name + "_b3");
    std::vector<int> parts;
    for (int64_t i = 0; i < batch; ++i) {
      std::string name = mm.name + (batch > 1 ? "_" + std::to_string(i) : "");
      auto matrix = [&](int v, Shape s, const std::string& suffix) {
        Attrs a = Attrs().set("axes", std::vector<int64_t>{0}).set("starts", std::vector<int64_t>{i});
        a.set("ends", std::vector<int64_t>{i + 1}).set("steps", std::vector<int64_t>{1});
        return reshape(g.add_op("slice", g.unique_name(name + suffix), {v}, a), std::move(s), mm.name + suffix + "_2d");
      };
      int bt = transpose_2d(matrix(b3, {K, N}, "_b"), name + "_bT");
      int y = rows_times_weights(matrix(a3, {M, K}, "_a"), M, K, pack_weights_at_run_time(bt, N, K, name + "_w_pack"),
                                 N, rq, mm, name);
      parts.push_back(reshape(y, {1, M, N}, mm.name + "_part"));
    }
    int y = parts.size() == 1
                ? parts[0]
                : g.add_op("concat", g.unique_name(mm.name + "_concat"), parts, Attrs().set("axis", int64_t(0)));
    return reshape(y, rq.type.shape, mm.name + "_out");
  }

  // Weights [O, I, ...] -> [Op/bo, Ip/bi, ..., bo, bi], zero-padded; dense weights [O, I] with
  // `kernel_axes` as a 1x1 convolution's [Op/bo, Ip/bi, 1, 1, bo, bi] (the same bytes). With
  // passes > 1, [Op/bo, Ip/bi, passes, ..., bo, bi]: each weight's wgt_bits-bit digits.
  NDArray pack_weight(const NDArray& w, int64_t op, int64_t ip, bool kernel_axes = false, int passes = 1) {
    const auto& s = w.shape();
    int64_t O = s[0], I = s[1], KK = s.size() == 4 ? s[2] * s[3] : 1, bo = cfg.block_out, bi = cfg.block_in;
    Shape shape = {op / bo, ip / bi};
    if (passes > 1) shape.push_back(passes);
    if (s.size() == 4) shape.insert(shape.end(), {s[2], s[3]});
    if (s.size() == 2 && kernel_axes) shape.insert(shape.end(), {1, 1});
    shape.insert(shape.end(), {bo, bi});
    NDArray out = NDArray::zeros(shape, DataType::Int(8));
    auto* src = static_cast<const int8_t*>(w.raw_data());
    auto* dst = static_cast<int8_t*>(out.raw_data());
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < I; ++i)
        for (int p = 0; p < passes; ++p)
          for (int64_t k = 0; k < KK; ++k) {
            const int8_t v = src[(o * I + i) * KK + k];
            dst[((((o / bo) * (ip / bi) + i / bi) * passes + p) * KK + k) * bo * bi + (o % bo) * bi + i % bi] =
                int8_t(passes > 1 ? weight_digit(v, cfg.wgt_bits, p) : v);
          }
    return out;
  }

  // One int32 per output channel, [Op/bo, batch, bo] (the same for every batch lane); padded
  // channels get zero.
  NDArray per_channel_blocks(const std::vector<int32_t>& v, int64_t op) {
    NDArray out = NDArray::zeros({op / cfg.block_out, cfg.batch, cfg.block_out}, DataType::Int(32));
    auto* dst = static_cast<int32_t*>(out.raw_data());
    for (size_t o = 0; o < v.size(); ++o)
      for (int lane = 0; lane < cfg.batch; ++lane)
        dst[((int64_t(o) / cfg.block_out) * cfg.batch + lane) * cfg.block_out + int64_t(o) % cfg.block_out] = v[o];
    return out;
  }

  // The bias input (the layer's, or zeros, with each channel's rounding 2^(shift-1) folded in) and,
  // for requantize_channel, the per-channel shifts input, appended to `in`.
  void add_requantization(std::vector<int>& in, const Node& rq, const Node& layer, int64_t O, int64_t op,
                          const std::string& name) {
    const std::vector<int> shifts = right_shifts(g, rq, O);
    std::vector<int32_t> b(size_t(O), 0);
    if (layer.inputs.size() > 2) std::memcpy(b.data(), g.node(layer.inputs[2]).value.raw_data(), b.size() * 4);
    for (size_t o = 0; o < b.size(); ++o) b[o] = ops::rounding_bias({b[o]}, shifts[o])[0];
    in.push_back(g.add_constant(g.unique_name(name + "_b_blocked"), per_channel_blocks(b, op)));
    if (rq.op == "requantize_channel")
      in.push_back(g.add_constant(g.unique_name(name + "_shifts_blocked"),
                                  per_channel_blocks(std::vector<int32_t>(shifts.begin(), shifts.end()), op)));
  }

  // The accelerator node's requantization attributes (its shift unused when it shifts per channel).
  Attrs requantize_attrs(const Node& rq) const {
    return Attrs()
        .set("shift", rq.op == "requantize" ? rq.attrs.get_int("shift") : int64_t(0))
        .set("min", rq.attrs.get_int("min", -128))
        .set("max", rq.attrs.get_int("max", 127));
  }

  // conv2d or dense + requantize -> the accelerator layer; returns the unpacked result.
  int layer(const Node& rq, const Node& l) {
    bool conv = op_def(l.op).layer == WeightedLayer::Conv2d;
    int64_t O = g.type_of(l.inputs[1]).shape[0], I = g.type_of(l.inputs[1]).shape[1];
    int64_t op = round_up(O, cfg.block_out), ip = round_up(I, cfg.block_in);
    const int passes = weight_passes(g.node(l.inputs[1]).value, cfg);
    // A dense layer with more rows than the batch, or with weights in passes: a 1x1 convolution.
    if (!conv && (g.type_of(l.inputs[0]).shape[0] > cfg.batch || passes > 1)) {
      NDArray w = pack_weight(g.node(l.inputs[1]).value, op, ip, /*kernel_axes=*/true, passes);
      return rows_times_weights(l.inputs[0], g.type_of(l.inputs[0]).shape[0], I,
                                g.add_constant(g.unique_name(l.name + "_w_blocked"), w), O, rq, l, l.name, passes);
    }
    std::vector<int> in = {pack(l.inputs[0], ip, l.name + "_pack"),
                           g.add_constant(g.unique_name(l.name + "_w_blocked"),
                                          pack_weight(g.node(l.inputs[1]).value, op, ip, false, passes))};
    add_requantization(in, rq, l, O, op, l.name);
    Attrs a = requantize_attrs(rq);
    if (conv) {
      const ConvAttrs c = ConvAttrs::from(l);  // equal strides and pads: layer_unsupported
      a.set("stride", c.strides[0]).set("pad", c.pads[0]);
      if (passes > 1) a.set("digit_bits", int64_t(cfg.wgt_bits));
    }
    int y = g.add_op(conv ? "accel_conv2d" : "accel_dense", g.unique_name(l.name + "_accel"), in, a);
    return unpack(y, rq.type, rq.name + "_unpack");
  }

  // The identity blocks an add widens its operands through: both scaled to the common exponent
  // ([2, b, b], the GEMMs shift) where 2^shift fits the config's signed weights, else one identity
  // (the ALU shifts). One constant per pair of shifts, shared by the adds.
  int identity_blocks(int64_t la, int64_t lb) {
    const int64_t max_shift = std::min<int64_t>(ops::kMaxEyeShift, cfg.wgt_bits - 2);
    const bool scaled = (la || lb) && la <= max_shift && lb <= max_shift;
    const std::pair<int64_t, int64_t> key = scaled ? std::pair{la, lb} : std::pair{int64_t(-1), int64_t(-1)};
    if (auto it = eyes.find(key); it != eyes.end()) return it->second;
    const int n = cfg.block_in;
    std::vector<int8_t> blocks = scaled ? ops::scaled_identity_blocks(n, int(la), int(lb)) : ops::identity_block(n);
    NDArray e = scaled ? NDArray::empty({2, n, n}, DataType::Int(8)) : NDArray::empty({n, n}, DataType::Int(8));
    std::memcpy(e.raw_data(), blocks.data(), blocks.size());
    return eyes[key] =
               g.add_constant(g.unique_name(scaled ? "accel_scaled_identity_blocks" : "accel_identity_block"), e);
  }

  int add(const Node& rq, const Node& s) {
    int64_t cp = round_up(g.type_of(s.inputs[0]).shape[1], cfg.block_in);
    Attrs a = requantize_attrs(rq);
    const int64_t la = s.attrs.get_int("lshift_a", 0), lb = s.attrs.get_int("lshift_b", 0);
    a.set("lshift_a", la).set("lshift_b", lb);
    int y = g.add_op(
        "accel_add", g.unique_name(s.name + "_accel"),
        {pack(s.inputs[0], cp, s.name + "_pack_a"), pack(s.inputs[1], cp, s.name + "_pack_b"), identity_blocks(la, lb)},
        a);
    return unpack(y, rq.type, rq.name + "_unpack");
  }
};

// Why the requantization's shift is beyond the accelerator's (right shifts by 0..30), or "".
std::string shift_unsupported(const Node& rq) {
  int64_t shift = rq.attrs.get_int("shift");
  if (shift < 0 || shift > 30)
    return "requantize shift " + std::to_string(shift) + " (the accelerator shifts right by 0..30)";
  return "";
}

// The same for each channel of a layer's requantization (requantize_channel: its multipliers
// must be powers of two).
std::string shifts_unsupported(const Graph& g, const Node& rq, int64_t O) {
  if (rq.op == "requantize") return shift_unsupported(rq);
  if (O == 0) return "no output channels";
  const std::vector<int> shifts = right_shifts(g, rq, O);
  if (shifts.empty())
    return "per-channel multipliers that are not powers of two (the accelerator requantizes by shifts; quantize "
           "with power-of-two scales)";
  for (size_t c = 0; c < shifts.size(); ++c)
    if (shifts[c] < 0 || shifts[c] > 30)
      return "channel " + std::to_string(c) + "'s requantize shift " + std::to_string(shifts[c]) +
             " (the accelerator shifts right by 0..30)";
  return "";
}

// Why sums that can reach `worst` do not fit the config's accumulators, or "".
std::string beyond_accumulators(int64_t worst, const accel::AccelConfig& cfg) {
  if (cfg.acc_bits == 32 || worst <= (int64_t(1) << (cfg.acc_bits - 1)) - 1) return "";
  return "its accumulators can reach " + std::to_string(worst) + ", beyond the " + std::to_string(cfg.acc_bits) +
         "-bit accumulators of config '" + cfg.name + "'";
}

// Why a layer's constant weights and bias do not suit the config's widths, or "": weights beyond
// its wgt_bits, or an accumulator that could leave its acc_bits (each output channel's sum of
// |weights| times the largest inp_bits input, plus its bias and the requantization's rounding).
std::string precision_unsupported(const Graph& g, const Node& rq, const Node& l, const accel::AccelConfig& cfg) {
  const NDArray& w = g.node(l.inputs[1]).value;
  const int64_t O = w.shape()[0], per = w.numel() / std::max<int64_t>(O, 1);
  const int8_t* wv = static_cast<const int8_t*>(w.raw_data());
  const int passes = weight_passes(w, cfg);
  if (passes == 0) {
    const auto [lo, hi] = std::minmax_element(wv, wv + w.numel());
    const std::vector<int> widths = cfg.weight_widths();
    auto [rlo, rhi] = cfg.weight_range(widths.back());
    return "weights in [" + std::to_string(*lo) + ", " + std::to_string(*hi) + "], beyond the " +
           std::to_string(cfg.wgt_bits) + "-bit weights of config '" + cfg.name + "'" +
           (widths.size() > 1 ? " and its " + std::to_string(widths.back()) + "-bit weights in passes ([" +
                                    std::to_string(rlo) + ", " + std::to_string(rhi) + "])"
                              : "") +
           " (quantize for the config: loom compile --quantize int8 --target accel --config ...)";
  }
  // The accumulators of the whole sum and, in passes, of each partial sum shifted before the next
  // pass is added: sum_k |x| |u_k| 2^digit, u_k the weight's digits from pass k up.
  const int64_t xmax = int64_t(1) << (cfg.inp_bits - 1);
  int64_t worst = 0;
  const std::vector<int> shifts = right_shifts(g, rq, O);
  for (int64_t o = 0; o < O; ++o) {
    const int shift = shifts[size_t(o)];
    int64_t sum = 0;
    std::vector<int64_t> partial(size_t(passes), 0);
    for (int64_t k = 0; k < per; ++k) {
      sum += std::abs(int64_t(wv[o * per + k]));
      int64_t u = 0;
      for (int p = passes - 1; p >= 1; --p) {
        u = u * (int64_t(1) << cfg.wgt_bits) + weight_digit(wv[o * per + k], cfg.wgt_bits, p);
        partial[size_t(p)] += std::abs(u) << cfg.wgt_bits;
      }
    }
    int64_t bias = l.inputs.size() > 2 ? static_cast<const int32_t*>(g.node(l.inputs[2]).value.raw_data())[o] : 0;
    if (shift > 0) bias += int64_t(1) << (shift - 1);
    worst = std::max(worst, sum * xmax + std::abs(bias));
    for (int64_t p : partial) worst = std::max(worst, p * xmax);
  }
  if (std::string why = beyond_accumulators(worst, cfg); !why.empty()) return why;
  return "";
}

// Why requantize(conv2d/dense) cannot run on the accelerator, or "" if it can.
std::string layer_unsupported(const Graph& g, const Node& rq, const Node& l, const accel::AccelConfig& cfg) {
  if (l.inputs.size() < 2) return "no weights";
  const TensorType &x = g.type_of(l.inputs[0]), &w = g.type_of(l.inputs[1]);
  if (x.dtype != DataType::Int(8) || w.dtype != DataType::Int(8)) return "not int8";
  if (!g.node(l.inputs[1]).is_constant() || (l.inputs.size() > 2 && !g.node(l.inputs[2]).is_constant()))
    return "weights or bias are not constants";
  if (std::string why = shifts_unsupported(g, rq, w.shape.empty() ? 0 : w.shape[0]); !why.empty()) return why;
  if (std::string why = precision_unsupported(g, rq, l, cfg); !why.empty()) return why;
  if (op_def(l.op).layer == WeightedLayer::Dense) {
    if (x.shape.size() != 2 || w.shape.size() != 2) return "not an NC x OI dense layer";
    return "";
  }
  if (conv_layout(l).blocked() || x.shape.size() != 4 || w.shape.size() != 4) return "not an NCHW convolution";
  const ConvAttrs c = ConvAttrs::from(l);
  if (c.groups != 1) return "grouped convolution";
  if (!c.unit_dilations()) return "dilated convolution";
  if (c.strides[0] != c.strides[1]) return "unequal strides";
  if (std::any_of(c.pads.begin(), c.pads.end(), [&](int64_t v) { return v != c.pads[0]; })) return "asymmetric padding";
  return "";
}

// Why requantize(matmul(a, b)) cannot run on the accelerator, or "".
std::string product_unsupported(const Graph& g, const Node& rq, const Node& mm, const accel::AccelConfig& cfg) {
  const TensorType &a = g.type_of(mm.inputs[0]), &b = g.type_of(mm.inputs[1]);
  if (a.dtype != DataType::Int(8) || b.dtype != DataType::Int(8)) return "not int8";
  // b becomes the weights: activations of inp_bits in the config's wgt_bits.
  if (cfg.wgt_bits < cfg.inp_bits)
    return "a product of two activations: the second would be " + std::to_string(cfg.wgt_bits) +
           "-bit weights, narrower than the " + std::to_string(cfg.inp_bits) + "-bit activations of config '" +
           cfg.name + "'";
  const int64_t K = a.shape.empty() ? 0 : a.shape.back(),
                worst = K << (cfg.inp_bits - 1) << (cfg.inp_bits - 1);  // |a| |b| <= 2^(bits-1) each
  if (std::string why = beyond_accumulators(worst, cfg); !why.empty()) return why;
  if (a.shape.size() < 2 || a.shape.size() != b.shape.size() ||
      !std::equal(a.shape.begin(), a.shape.end() - 2, b.shape.begin()))
    return "operands " + a.str() + " and " + b.str() + " are not matrices of one batch (no broadcasting)";
  return shift_unsupported(rq);
}

// Why requantize(add_shifted) cannot run on the accelerator, or "".
std::string add_unsupported(const Graph& g, const Node& rq, const Node& add, const accel::AccelConfig& cfg) {
  const TensorType &a = g.type_of(add.inputs[0]), &b = g.type_of(add.inputs[1]);
  if (a.dtype != DataType::Int(8) || b.dtype != DataType::Int(8)) return "not an int8 add";
  if (a.shape.size() != 4 || a.shape != b.shape) return "not two NCHW operands of one shape";
  if (cfg.block_in != cfg.block_out)
    return "the config's blocks differ (the ALU widens int8 through a square identity block)";
  int64_t la = add.attrs.get_int("lshift_a", 0), lb = add.attrs.get_int("lshift_b", 0),
          shift = rq.attrs.get_int("shift");
  if (la > 14 || lb > 14) return "operand shifts beyond the ALU's 16-bit multiply immediate";
  // The widened operands, shifted and added, with the rounding: within the accumulator.
  const int64_t half = int64_t(1) << (cfg.inp_bits - 1),
                worst = (half << la) + (half << lb) + (shift > 0 ? int64_t(1) << (shift - 1) : 0);
  if (std::string why = beyond_accumulators(worst, cfg); !why.empty()) return why;
  if (shift < 0 || shift > 15)
    return "requantize shift " + std::to_string(shift) + " (the rounded accelerator add shifts right by 0..15)";
  return "";
}

}  // namespace

AccelPartitionReport partition_accel(Graph& g, const accel::AccelConfig& cfg) {
  infer_types(g);
  AccelPartitionReport report;
  auto users = g.users();
  std::vector<int> outputs = g.outputs;
  Rewriter rw{g, cfg, {}, {}};
  for (int id : g.topological_order()) {
    const Node rq = g.node(id);
    if (!rq.is_op() || (rq.op != "requantize" && rq.op != "requantize_channel") || !g.node(rq.inputs[0]).is_op())
      continue;
    int src = rq.inputs[0];
    const Node s = g.node(src);
    bool layer = op_def(s.op).layer != WeightedLayer::None, add = s.op == "add_shifted", product = s.op == "matmul";
    if (rq.op == "requantize_channel") add = product = false;  // only layers' requantizations are per channel
    if (!layer && !add && !product) continue;
    std::string why;
    bool symbolic = !rq.type.is_static();
    for (int i : s.inputs) symbolic |= !g.type_of(i).is_static();
    if (users[size_t(src)].size() != 1 || std::find(outputs.begin(), outputs.end(), src) != outputs.end())
      why = "its int32 result has other readers";
    else if (symbolic)
      // The accelerator's tilings and its image's places need constant shapes.
      why = "its shapes change with the shape variables (the accelerator's tilings need constants)";
    else
      why = add       ? add_unsupported(g, rq, s, cfg)
            : product ? product_unsupported(g, rq, s, cfg)
                      : layer_unsupported(g, rq, s, cfg);
    if (!why.empty()) {
      report.kept.push_back(s.name + " (" + s.op + "): " + why);
      continue;
    }
    g.replace_uses(id, add ? rw.add(rq, s) : product ? rw.product(rq, s) : rw.layer(rq, s));
    infer_types(g);  // later layers read the new nodes' types
    ++report.offloaded;
  }
  // Blocked data goes from one accelerator layer to the next without leaving the blocked layout.
  for (int id = 0; id < static_cast<int>(g.nodes.size()); ++id) {
    const Node& n = g.node(id);
    if (!n.is_op() || n.op != "accel_pack" || !g.node(n.inputs[0]).is_op() || g.node(n.inputs[0]).op != "accel_unpack")
      continue;
    int blocked = g.node(n.inputs[0]).inputs[0];
    if (g.type_of(blocked) == n.type) g.replace_uses(id, blocked);
  }
  eliminate_dead_nodes(g);
  infer_types(g);
  return report;
}

}  // namespace loom::graph
