#include "loom/graph/op_attrs.h"

#include <algorithm>
#include <array>

#include "loom/runtime/error.h"

namespace loom::graph {

namespace {

template <size_t N>
void read_list(const Node& n, const char* key, std::array<int64_t, N>& out) {
  if (!n.attrs.has(key)) return;
  std::vector<int64_t> v = n.attrs.get_ints(key);
  if (v.size() != N) LOOM_THROW(ModelError, "attribute '", key, "' must have ", N, " values, has ", v.size());
  std::copy(v.begin(), v.end(), out.begin());
}

bool read_flag(const Node& n, const char* key, bool def) { return n.attrs.get_int(key, def ? 1 : 0) != 0; }

// Sets `key` unless the value is the default and the key is absent.
template <size_t N>
void write_list(Attrs& a, const char* key, const std::array<int64_t, N>& v, const std::array<int64_t, N>& def) {
  if (v != def || a.has(key)) a.set(key, std::vector<int64_t>(v.begin(), v.end()));
}
void write_int(Attrs& a, const char* key, int64_t v, int64_t def) {
  if (v != def || a.has(key)) a.set(key, v);
}

}  // namespace

ConvAttrs ConvAttrs::from(const Node& conv) {
  ConvAttrs c;
  read_list(conv, "strides", c.strides);
  read_list(conv, "pads", c.pads);
  read_list(conv, "dilations", c.dilations);
  c.groups = conv.attrs.get_int("groups", 1);
  c.oc_block = conv.attrs.get_int("oc_block", 0);
  c.interleaved_groups = read_flag(conv, "interleaved_groups", false);
  c.input_nonnegative = read_flag(conv, "input_nonnegative", false);
  c.input_offset = read_flag(conv, "input_offset", false);
  return c;
}

void ConvAttrs::write(Attrs& a) const {
  const ConvAttrs def;
  write_list(a, "strides", strides, def.strides);
  write_list(a, "pads", pads, def.pads);
  write_list(a, "dilations", dilations, def.dilations);
  write_int(a, "groups", groups, def.groups);
  write_int(a, "oc_block", oc_block, def.oc_block);
  write_int(a, "interleaved_groups", interleaved_groups, 0);
  write_int(a, "input_nonnegative", input_nonnegative, 0);
  write_int(a, "input_offset", input_offset, 0);
}

PoolAttrs PoolAttrs::from(const Node& pool) {
  PoolAttrs p;
  read_list(pool, "kernel", p.kernel);
  read_list(pool, "strides", p.strides);
  read_list(pool, "pads", p.pads);
  read_list(pool, "dilations", p.dilations);
  p.ceil_mode = read_flag(pool, "ceil_mode", false);
  p.count_include_pad = read_flag(pool, "count_include_pad", false);
  return p;
}

void PoolAttrs::write(Attrs& a) const {
  const PoolAttrs def;
  write_list(a, "kernel", kernel, def.kernel);
  write_list(a, "strides", strides, def.strides);
  write_list(a, "pads", pads, def.pads);
  write_list(a, "dilations", dilations, def.dilations);
  write_int(a, "ceil_mode", ceil_mode, 0);
  write_int(a, "count_include_pad", count_include_pad, 0);
}

}  // namespace loom::graph
