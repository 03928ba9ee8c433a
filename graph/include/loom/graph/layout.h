// Activation layouts: plain NCHW, or channel-blocked NCHW{b}c ([N, C/b, H, W, b], TVM's NCHWc).
// Graph attributes keep them as strings (a conv2d's "layout" and "oc_block", a layout_transform's
// "to" and "block"); the functions here are the only readers and writers of those attributes.
#pragma once
#include <cstdint>
#include <string>

#include "loom/graph/graph.h"

namespace loom::graph {

struct Layout {
  int64_t block = 0;  // channels per block; 0: plain NCHW
  static Layout nchw() { return {}; }
  static Layout nchwc(int64_t block) { return {block}; }
  bool blocked() const { return block > 0; }
  std::string str() const;  // "NCHW", "NCHW8c"
  bool operator==(const Layout&) const = default;
};

// A conv2d's data layout: blocked convs read [N, C/ib, H, W, ib] and write blocks of their
// "oc_block" output channels. ModelError naming the node for a layout that is neither.
Layout conv_layout(const Node& conv);
// Makes `conv` a blocked conv writing blocks of `out_block` channels.
void set_conv_layout(Node& conv, Layout out);
// What a layout_transform node converts to, and the attributes of one converting to `to`.
Layout transform_target(const Node& transform);
Attrs transform_attrs(Layout to);

}  // namespace loom::graph
