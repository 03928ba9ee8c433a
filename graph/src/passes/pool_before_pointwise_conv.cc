// Pass: pool_before_pointwise_conv. An average pool of a 1x1 convolution's output is the 1x1
// convolution of the pooled input: the convolution is the same affine map at every pixel, and an
// average whose weights sum to one (a window's in-bounds values over their count) commutes with
// it, bias included. Pooling first runs the convolution on the smaller map: DenseNet's
// transitions (BN, ReLU, 1x1 conv, 2x2 average pool) do a quarter of their multiply-adds.
#include "loom/graph/op_attrs.h"
#include "loom/graph/passes.h"

namespace loom::graph {

namespace {

// A 1x1, stride-1, unpadded float convolution on plain NCHW data: one affine map per pixel.
bool is_pointwise_conv(const Graph& g, const Node& n) {
  if (!n.is_op() || n.op != "conv2d" || n.inputs.size() < 2) return false;
  const Shape &x = g.type_of(n.inputs[0]).shape, &w = g.type_of(n.inputs[1]).shape;
  if (x.size() != 4 || w.size() != 4 || w[2] != 1 || w[3] != 1 || n.type.dtype != DataType::Float(32)) return false;
  const ConvAttrs c = ConvAttrs::from(n);
  return c.unit_strides() && c.zero_pads();
}

// Each output of the pool is its window's in-bounds values over their count: no padding, or
// padding left out of the count where the window's taps are consecutive (the divisor counts a
// clipped range, which for dilated taps is not their number).
bool averages_in_bounds(const Node& pool) {
  if (pool.op == "global_avg_pool2d") return true;
  if (pool.op != "avg_pool2d") return false;
  const PoolAttrs p = PoolAttrs::from(pool);
  if (p.zero_pads()) return true;
  return !p.count_include_pad && p.dilations[0] == 1 && p.dilations[1] == 1;
}

// Additions a pool of `channels` channels does (taps per output).
double pool_adds(const Node& pool, double channels, double out_pixels, double in_pixels) {
  if (pool.op == "global_avg_pool2d") return channels * in_pixels;
  const PoolAttrs p = PoolAttrs::from(pool);
  return channels * out_pixels * double(p.kernel[0]) * double(p.kernel[1]);
}

}  // namespace

void pool_before_pointwise_conv(Graph& g) {
  bool changed = false;
  const size_t original = g.nodes.size();
  std::vector<std::vector<int>> users = g.users();
  std::vector<char> is_output(original, 0);
  for (int o : g.outputs) is_output[size_t(o)] = 1;
  for (size_t id = 0; id < original; ++id) {
    const Node& pool = g.nodes[id];
    if (!pool.is_op() || !averages_in_bounds(pool) || pool.inputs.size() != 1) continue;
    int conv_id = pool.inputs[0];
    if (conv_id >= static_cast<int>(original)) continue;  // a conv this pass made: one move at a time
    const Node& conv = g.node(conv_id);
    if (!is_pointwise_conv(g, conv) || users[size_t(conv_id)].size() != 1 || is_output[size_t(conv_id)]) continue;
    const Shape x = g.type_of(conv.inputs[0]).shape, y = pool.type.shape;  // copies: add_op moves g.nodes
    if (y.size() != 4) continue;
    // Worth it where the multiply-adds saved outweigh the pool's extra additions over the
    // convolution's input channels (a pool that does not shrink the map saves nothing).
    double in_channels = double(x[1]), out_channels = double(conv.type.shape[1]);
    double group_in = double(g.type_of(conv.inputs[1]).shape[1]);  // input channels per output
    double in_pixels = double(x[2] * x[3]), out_pixels = double(y[2] * y[3]);
    double before = out_channels * group_in * in_pixels + pool_adds(pool, out_channels, out_pixels, in_pixels);
    double after = pool_adds(pool, in_channels, out_pixels, in_pixels) + out_channels * group_in * out_pixels;
    if (after >= before) continue;
    // The new nodes take the old names (profiles read the same), except that a graph output
    // keeps its name on the node that now produces it; the old nodes, dead once the pool's
    // readers move, are renamed out of the way.
    Node old_pool = pool, old_conv = conv;  // copies: adding nodes moves g.nodes
    g.node(static_cast<int>(id)).name += "_replaced";
    g.node(conv_id).name += "_replaced";
    bool pool_is_output = is_output[id];
    int pooled = g.add_op(old_pool.op, pool_is_output ? g.unique_name(old_conv.name + "_input_pooled") : old_pool.name,
                          {old_conv.inputs[0]}, old_pool.attrs);
    std::vector<int> conv_inputs = old_conv.inputs;
    conv_inputs[0] = pooled;
    int pointwise = g.add_op("conv2d", pool_is_output ? old_pool.name : old_conv.name, conv_inputs, old_conv.attrs);
    // Typed at once: a later pool of this pass may read them (a pool of a conv of this pool).
    g.node(pooled).type = TensorType{{x[0], x[1], y[2], y[3]}, g.type_of(old_conv.inputs[0]).dtype};
    g.node(pointwise).type = old_pool.type;
    g.node(pooled).typed = g.node(pointwise).typed = true;
    g.replace_uses(static_cast<int>(id), pointwise);
    changed = true;
  }
  if (changed) {
    eliminate_dead_nodes(g);
    infer_types(g);
  }
}

}  // namespace loom::graph
