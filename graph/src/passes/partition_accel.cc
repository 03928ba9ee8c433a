// Pass: partition_accel. Chooses what runs on the accelerator: every int8 convolution with its
// requantization (requantize(conv2d(x_int8, W_int8[, b_int32]))) whose shape the accelerator
// config can take becomes one accel_conv2d node on the config's blocked layout, with the weights
// packed and the model's rounding folded into the bias at compile time; every residual add
// (requantize(add_shifted(a_int8, b_int8))) becomes an accel_add. accel_pack/accel_unpack
// sit only at CPU boundaries: a pack of an unpack cancels, so consecutive accelerator layers pass
// blocked data straight through (and the executor keeps it in device memory). What stays on the
// CPU is reported with the reason.
#include <algorithm>
#include <cstring>
#include <map>

#include "loom/graph/passes.h"
#include "loom/ops/quantized.h"
#include "loom/runtime/error.h"

namespace loom::graph {

namespace {

// Why node `conv` (read by requantize `rq`) cannot run on the accelerator, or "" if it can.
std::string unsupported(const Graph& g, const Node& rq, const Node& conv, bool single_reader, const accel::AccelConfig& cfg) {
  if (!single_reader) return "its int32 accumulator has other readers";
  if (conv.inputs.size() < 2) return "no weights";
  const TensorType &x = g.type_of(conv.inputs[0]), &w = g.type_of(conv.inputs[1]);
  if (x.dtype != DataType::Int(8) || w.dtype != DataType::Int(8)) return "not an int8 convolution";
  if (!g.node(conv.inputs[1]).is_constant() || (conv.inputs.size() > 2 && !g.node(conv.inputs[2]).is_constant()))
    return "weights or bias are not constants";
  if (conv.attrs.get_string("layout", "NCHW") != "NCHW" || x.shape.size() != 4 || w.shape.size() != 4) return "not an NCHW convolution";
  if (conv.attrs.get_int("groups", 1) != 1) return "grouped convolution";
  auto s = conv.attrs.get_ints("strides", {1, 1}), p = conv.attrs.get_ints("pads", {0, 0, 0, 0}), d = conv.attrs.get_ints("dilations", {1, 1});
  if (d != std::vector<int64_t>{1, 1}) return "dilated convolution";
  if (s.size() != 2 || s[0] != s[1]) return "unequal strides";
  if (p.size() != 4 || std::any_of(p.begin(), p.end(), [&](int64_t v) { return v != p[0]; })) return "asymmetric padding";
  if (x.shape[0] % cfg.batch) return "batch " + std::to_string(x.shape[0]) + " is not a multiple of the config's batch " + std::to_string(cfg.batch);
  if (x.shape[1] % cfg.block_in || w.shape[0] % cfg.block_out)
    return std::to_string(x.shape[1]) + " -> " + std::to_string(w.shape[0]) + " channels are not multiples of the config's blocks " +
           std::to_string(cfg.block_in) + "/" + std::to_string(cfg.block_out);
  int64_t shift = rq.attrs.get_int("shift");
  if (shift < 0 || shift > 30) return "requantize shift " + std::to_string(shift) + " (the accelerator shifts right by 0..30)";
  return "";
}

NDArray pack_weight(const NDArray& w, int bo, int bi) {
  const auto& s = w.shape();  // O, I, KH, KW
  int64_t O = s[0], I = s[1], KK = s[2] * s[3];
  NDArray out = NDArray::empty({O / bo, I / bi, s[2], s[3], bo, bi}, DataType::Int(8));
  auto* src = static_cast<const int8_t*>(w.raw_data());
  auto* dst = static_cast<int8_t*>(out.raw_data());
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < I; ++i)
      for (int64_t k = 0; k < KK; ++k)
        dst[(((o / bo) * (I / bi) + i / bi) * KK + k) * bo * bi + (o % bo) * bi + i % bi] = src[(o * I + i) * KK + k];
  return out;
}

NDArray block_bias(const Graph& g, const Node& conv, int64_t O, int shift, const accel::AccelConfig& cfg) {
  std::vector<int32_t> b(size_t(O), 0);
  if (conv.inputs.size() > 2) std::memcpy(b.data(), g.node(conv.inputs[2]).value.raw_data(), b.size() * 4);
  b = ops::rounding_bias(b, shift);
  NDArray out = NDArray::empty({O / cfg.block_out, cfg.batch, cfg.block_out}, DataType::Int(32));
  auto* dst = static_cast<int32_t*>(out.raw_data());
  for (int64_t o = 0; o < O; ++o)
    for (int lane = 0; lane < cfg.batch; ++lane) dst[((o / cfg.block_out) * cfg.batch + lane) * cfg.block_out + o % cfg.block_out] = b[size_t(o)];
  return out;
}

// Why requantize(add_shifted) cannot run on the accelerator, or "".
std::string add_unsupported(const Graph& g, const Node& rq, const Node& add, bool single_reader, const accel::AccelConfig& cfg) {
  if (!single_reader) return "its int32 sum has other readers";
  const TensorType &a = g.type_of(add.inputs[0]), &b = g.type_of(add.inputs[1]);
  if (a.dtype != DataType::Int(8) || b.dtype != DataType::Int(8)) return "not an int8 add";
  if (a.shape.size() != 4 || a.shape != b.shape) return "not two NCHW operands of one shape";
  if (cfg.block_in != cfg.block_out) return "the config's blocks differ (the ALU widens int8 through a square identity block)";
  if (a.shape[0] % cfg.batch || a.shape[1] % cfg.block_in)
    return "shape " + a.str() + " is not a whole number of the config's blocks";
  int64_t la = add.attrs.get_int("lshift_a", 0), lb = add.attrs.get_int("lshift_b", 0), shift = rq.attrs.get_int("shift");
  if (la > 14 || lb > 14) return "operand shifts beyond the ALU's 16-bit multiply immediate";
  if (shift < 0 || shift > 15) return "requantize shift " + std::to_string(shift) + " (the rounded accelerator add shifts right by 0..15)";
  return "";
}

}  // namespace

AccelPartitionReport partition_accel(Graph& g, const accel::AccelConfig& cfg) {
  infer_types(g);
  AccelPartitionReport report;
  auto users = g.users();
  std::vector<int> outputs = g.outputs;
  int eye = -1;  // the identity block, shared by every accelerator add
  std::map<int, int> packed;  // one pack per value
  auto pack = [&](int x, const std::string& name) {
    auto it = packed.find(x);
    if (it != packed.end()) return it->second;
    return packed[x] = g.add_op("accel_pack", g.unique_name(name), {x}, Attrs().set("b", int64_t(cfg.batch)).set("bi", int64_t(cfg.block_in)));
  };
  for (int id : g.topological_order()) {
    const Node rq = g.node(id);
    if (!rq.is_op() || rq.op != "requantize" || !g.node(rq.inputs[0]).is_op()) continue;
    if (g.node(rq.inputs[0]).op == "add_shifted") {
      int add_id = rq.inputs[0];
      const Node add = g.node(add_id);
      bool single = users[size_t(add_id)].size() == 1 && std::find(outputs.begin(), outputs.end(), add_id) == outputs.end();
      std::string why = add_unsupported(g, rq, add, single, cfg);
      if (!why.empty()) {
        report.kept.push_back(add.name + ": " + why);
        continue;
      }
      if (eye < 0) {
        NDArray e = NDArray::empty({cfg.block_in, cfg.block_in}, DataType::Int(8));
        auto id_block = ops::identity_block(cfg.block_in);
        std::memcpy(e.raw_data(), id_block.data(), id_block.size());
        eye = g.add_constant(g.unique_name("accel_identity_block"), e);
      }
      Attrs a;
      a.set("lshift_a", add.attrs.get_int("lshift_a", 0)).set("lshift_b", add.attrs.get_int("lshift_b", 0));
      a.set("shift", rq.attrs.get_int("shift")).set("min", rq.attrs.get_int("min", -128)).set("max", rq.attrs.get_int("max", 127));
      int y = g.add_op("accel_add", g.unique_name(add.name + "_accel"),
                       {pack(add.inputs[0], add.name + "_pack_a"), pack(add.inputs[1], add.name + "_pack_b"), eye}, a);
      g.replace_uses(id, g.add_op("accel_unpack", g.unique_name(rq.name + "_unpack"), {y}));
      infer_types(g);
      ++report.offloaded;
      continue;
    }
    if (g.node(rq.inputs[0]).op != "conv2d") continue;
    int conv_id = rq.inputs[0];
    const Node conv = g.node(conv_id);
    bool single = users[size_t(conv_id)].size() == 1 && std::find(outputs.begin(), outputs.end(), conv_id) == outputs.end();
    std::string why = unsupported(g, rq, conv, single, cfg);
    if (!why.empty()) {
      report.kept.push_back(conv.name + ": " + why);
      continue;
    }
    int64_t O = g.type_of(conv.inputs[1]).shape[0];
    int shift = int(rq.attrs.get_int("shift"));
    int xp = pack(conv.inputs[0], conv.name + "_pack");
    int w = g.add_constant(g.unique_name(conv.name + "_w_blocked"), pack_weight(g.node(conv.inputs[1]).value, cfg.block_out, cfg.block_in));
    int b = g.add_constant(g.unique_name(conv.name + "_b_blocked"), block_bias(g, conv, O, shift, cfg));
    Attrs a;
    a.set("stride", conv.attrs.get_ints("strides", {1, 1})[0]).set("pad", conv.attrs.get_ints("pads", {0, 0, 0, 0})[0]);
    a.set("shift", int64_t(shift)).set("min", rq.attrs.get_int("min", -128)).set("max", rq.attrs.get_int("max", 127));
    int y = g.add_op("accel_conv2d", g.unique_name(conv.name + "_accel"), {xp, w, b}, a);
    int u = g.add_op("accel_unpack", g.unique_name(rq.name + "_unpack"), {y});
    g.replace_uses(id, u);
    infer_types(g);  // later layers read the new nodes' types
    ++report.offloaded;
  }
  // Blocked data goes from one accelerator layer to the next without leaving the blocked layout.
  for (Node& n : g.nodes)
    if (n.is_op() && n.op == "accel_pack" && g.node(n.inputs[0]).is_op() && g.node(n.inputs[0]).op == "accel_unpack" &&
        n.attrs.get_int("b") == cfg.batch && n.attrs.get_int("bi") == cfg.block_in && cfg.block_in == cfg.block_out) {
      int packed_src = g.node(n.inputs[0]).inputs[0];
      int self = int(&n - g.nodes.data());
      g.replace_uses(self, packed_src);
    }
  eliminate_dead_nodes(g);
  infer_types(g);
  return report;
}

}  // namespace loom::graph
