// Typed views of operator attributes: what passes, schedules and the reference interpreter read
// instead of looking keys up by string. `from` reads a node's attributes once, with the defaults
// of the operator's schema (OpDef::attrs, graph/src/op_registry_attrs.cc), and checks the lengths
// of the lists (a ModelError naming the attribute; infer_types adds the node). `write` puts the
// fields back as attributes, leaving an absent key absent while its field holds the default (so a
// rewritten node prints as before).
#pragma once
#include "loom/graph/graph.h"
#include "loom/ops/layers.h"

namespace loom::graph {

// conv2d and conv2d_winograd: ops::Conv2dParams (strides, pads, dilations, groups, packed weights'
// oc_block, interleaved groups) and whether the input is known to be in [0, 127].
struct ConvAttrs : ops::Conv2dParams {
  bool input_nonnegative = false;

  static ConvAttrs from(const Node& conv);
  void write(Attrs& a) const;
  bool unit_strides() const { return strides[0] == 1 && strides[1] == 1; }
  bool unit_dilations() const { return dilations[0] == 1 && dilations[1] == 1; }
  bool zero_pads() const { return pads[0] == 0 && pads[1] == 0 && pads[2] == 0 && pads[3] == 0; }
};

// max_pool2d and avg_pool2d: ops::Pool2dParams (kernel, strides, pads, dilations, ceil_mode,
// count_include_pad).
struct PoolAttrs : ops::Pool2dParams {
  static PoolAttrs from(const Node& pool);
  void write(Attrs& a) const;
  bool zero_pads() const { return pads[0] == 0 && pads[1] == 0 && pads[2] == 0 && pads[3] == 0; }
};

}  // namespace loom::graph
