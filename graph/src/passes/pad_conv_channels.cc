// Pass: pad_conv_channels. A conv whose output channels are no multiple of a vector block (a
// segmentation head's 21 classes, ShuffleNet's 58-channel branches) cannot be channel-blocked and
// would run as generic loops, far slower; it computes zero-padded output channels instead, up to a
// whole number of `lanes`, and a slice keeps the real ones. Float convs, and int8 convs of quantized
// models (int8 weights, int32 bias and accumulator): the requantization that reads such a conv
// alone runs on the padded channels too (per-channel multipliers padded with zeros), so the
// slice moves int8 values, in the kernel after the conv's. Only where the padding at most doubles
// the work. A depthwise conv pads its input's channels with zeros as well (one group a channel).
#include "loom/graph/op_attrs.h"
#include "loom/graph/passes.h"

namespace loom::graph {

namespace {

// OIHW weights (or a [O] bias) with zero output channels appended up to `padded`.
NDArray pad_outputs(const NDArray& v, int64_t padded) {
  Shape s = v.shape();
  s[0] = padded;
  NDArray out = NDArray::zeros(s, v.dtype());  // output channels outermost: the real ones come first
  std::copy_n(static_cast<const char*>(v.raw_data()), v.numel() * v.dtype().bytes(),
              static_cast<char*>(out.raw_data()));
  return out;
}

}  // namespace

void pad_conv_channels(Graph& g, int lanes) {
  if (lanes < 8) return;  // alter_layout blocks by 8 or more: nothing to gain
  const auto users = g.users();
  const std::vector<std::string> outputs = g.output_names();
  size_t original = g.nodes.size();
  for (size_t id = 0; id < original; ++id) {
    const Node& n = g.nodes[id];
    if (!n.is_op() || n.op != "conv2d" || n.inputs.size() < 2 || n.type.shape.size() != 4) continue;
    // The weights' type for the conv's: float32 -> float32, or int8 -> int32 (a quantized layer).
    const DataType weights = n.type.dtype == DataType::Float(32) ? DataType::Float(32)
                             : n.type.dtype == DataType::Int(32) ? DataType::Int(8)
                                                                 : DataType();
    if (weights == DataType()) continue;
    const Node& w = g.node(n.inputs[1]);
    if (!w.is_constant() || w.value.dtype() != weights || w.value.ndim() != 4) continue;
    const ConvAttrs c = ConvAttrs::from(n);
    // A depthwise conv (ShuffleNetV2's 58 and 116 channels: one input channel per group, as many
    // outputs as groups) pads its input with zero channels too.
    const int64_t C = c.groups;
    const bool depthwise = c.groups > 1 && w.value.shape()[0] == C && w.value.shape()[1] == 1;
    if ((c.groups != 1 && !depthwise) || c.oc_block != 0) continue;
    if (n.inputs.size() > 2 && !g.node(n.inputs[2]).is_constant()) continue;
    const int64_t O = w.value.shape()[0], padded = (O + lanes - 1) / lanes * lanes;
    if (O % 8 == 0 || padded > 2 * O) continue;  // blocks of 8 already fit; or too much waste
    Node conv = n;                               // a copy: adding nodes may move g.nodes
    std::vector<int> inputs = conv.inputs;
    inputs[1] = g.add_constant(g.unique_name(w.name + "_padded"), pad_outputs(w.value, padded));
    if (inputs.size() > 2)
      inputs[2] = g.add_constant(g.unique_name(g.node(conv.inputs[2]).name + "_padded"),
                                 pad_outputs(g.node(conv.inputs[2]).value, padded));
    Attrs attrs = conv.attrs;
    if (depthwise) {
      inputs[0] = g.add_op("pad", g.unique_name(conv.name + "_in_channels"), {conv.inputs[0]},
                           Attrs().set("pads", std::vector<int64_t>{0, 0, 0, 0, 0, padded - C, 0, 0}));
      ConvAttrs wider = c;
      wider.groups = padded;
      wider.write(attrs);
    }
    int wide = g.add_op("conv2d", g.unique_name(conv.name + "_padded"), inputs, attrs);
    // An int8 conv's requantization, when it is the only reader, on the padded channels.
    int replaced = static_cast<int>(id);
    if (weights == DataType::Int(8) && users[id].size() == 1) {
      const Node r = g.node(users[id][0]);
      if (r.is_op() && (r.op == "requantize" || r.op == "requantize_channel") && r.inputs[0] == int(id) &&
          (r.op == "requantize" || g.node(r.inputs[1]).is_constant())) {
        std::vector<int> rq_inputs = r.inputs;
        rq_inputs[0] = wide;
        if (r.op == "requantize_channel")
          rq_inputs[1] = g.add_constant(g.unique_name(g.node(r.inputs[1]).name + "_padded"),
                                        pad_outputs(g.node(r.inputs[1]).value, padded));
        wide = g.add_op(r.op, g.unique_name(r.name + "_padded"), rq_inputs, r.attrs);
        replaced = users[id][0];
      }
    }
    int kept = g.add_op("slice", g.unique_name(conv.name + "_channels"), {wide},
                        Attrs()
                            .set("starts", std::vector<int64_t>{0})
                            .set("ends", std::vector<int64_t>{O})
                            .set("axes", std::vector<int64_t>{1})
                            .set("steps", std::vector<int64_t>{1}));
    g.replace_uses(replaced, kept);
  }
  g.compact();
  g.name_outputs(outputs);
  infer_types(g);
}

}  // namespace loom::graph
