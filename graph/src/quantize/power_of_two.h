// Internal to quantize/: multiplications by a power of two, which int8 values take as a move of
// their exponent (annotate.cc chooses them, realize.cc applies them).
#pragma once
#include <cmath>
#include <optional>

#include "loom/graph/graph.h"

namespace loom::graph {

// k where node n (mul or div by a constant scalar, Int8Rule::ScaleByConstant) multiplies its
// activation input 0 by 2^k, or nothing (another constant, or the constant is not 2^k).
inline std::optional<int> power_of_two_scale(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2 || g.node(n.inputs[0]).is_constant() || !g.node(n.inputs[1]).is_constant())
    return std::nullopt;
  const NDArray& c = g.node(n.inputs[1]).value;
  if (c.numel() != 1) return std::nullopt;
  double v = c.get_as_double(0);
  int e = 0;
  if (!(v > 0) || !std::isfinite(v) || std::frexp(v, &e) != 0.5) return std::nullopt;
  int k = e - 1;  // v = 2^k
  return n.op == "div" ? -k : k;
}

}  // namespace loom::graph
