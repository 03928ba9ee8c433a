#include "loom/graph/layout.h"

#include "loom/runtime/error.h"

namespace loom::graph {

namespace {

constexpr const char* kPlain = "NCHW";
constexpr const char* kBlocked = "NCHWc";

// The attribute `key` of `n` as one of the two layout names (default NCHW).
bool blocked_attr(const Node& n, const char* key) {
  std::string s = n.attrs.get_string(key, kPlain);
  if (s != kPlain && s != kBlocked)
    LOOM_THROW(ModelError, n.op, " '", n.name, "': ", key, " '", s, "' is not a layout (", kPlain, " or ", kBlocked,
               ")");
  return s == kBlocked;
}

}  // namespace

std::string Layout::str() const { return blocked() ? "NCHW" + std::to_string(block) + "c" : kPlain; }

Layout conv_layout(const Node& conv) {
  if (!blocked_attr(conv, "layout")) return Layout::nchw();
  return Layout::nchwc(conv.attrs.get_int("oc_block", 0));
}

void set_conv_layout(Node& conv, Layout out) {
  conv.attrs.set("layout", std::string(out.blocked() ? kBlocked : kPlain));
  if (out.blocked()) conv.attrs.set("oc_block", out.block);
}

Layout transform_target(const Node& transform) {
  if (!transform.attrs.has("to"))
    LOOM_THROW(ModelError, transform.op, " '", transform.name, "': no target layout (attribute to)");
  if (!blocked_attr(transform, "to")) return Layout::nchw();
  return Layout::nchwc(transform.attrs.get_int("block"));
}

Attrs transform_attrs(Layout to) {
  Attrs a;
  a.set("to", std::string(to.blocked() ? kBlocked : kPlain));
  if (to.blocked()) a.set("block", to.block);
  return a;
}

}  // namespace loom::graph
