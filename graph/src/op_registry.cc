// The operator table: one family file per kind of operator (op_registry_util.h lists them).
#include "loom/graph/op_registry.h"

#include <map>
#include <sstream>

#include "loom/runtime/suggest.h"
#include "op_registry_util.h"

namespace loom::graph {

const char* to_string(OpPattern p) {
  switch (p) {
    case OpPattern::ElemWise:
      return "elemwise";
    case OpPattern::Broadcast:
      return "broadcast";
    case OpPattern::Injective:
      return "injective";
    case OpPattern::CommReduce:
      return "reduce";
    case OpPattern::OutEWiseFusable:
      return "out-elemwise-fusable";
    case OpPattern::Opaque:
      return "opaque";
  }
  return "?";
}

const char* to_string(AttrKind k) {
  switch (k) {
    case AttrKind::Int:
      return "an integer";
    case AttrKind::Float:
      return "a float";
    case AttrKind::String:
      return "a string";
    case AttrKind::Ints:
      return "a list of integers";
    case AttrKind::Floats:
      return "a list of floats";
  }
  return "?";
}

namespace {

AttrKind kind_of(const AttrValue& v) {
  switch (v.index()) {
    case 0:
      return AttrKind::Int;
    case 1:
      return AttrKind::Float;
    case 2:
      return AttrKind::String;
    case 3:
      return AttrKind::Ints;
    default:
      return AttrKind::Floats;
  }
}

// A value may stand where its kind is expected, or an integer where a float is (Attrs::get_float
// converts), or an empty list of either element type.
bool fits(const AttrValue& v, AttrKind want) {
  AttrKind have = kind_of(v);
  if (have == want) return true;
  if (want == AttrKind::Float && have == AttrKind::Int) return true;
  if (want == AttrKind::Floats && have == AttrKind::Ints) return true;
  if (want == AttrKind::Ints && have == AttrKind::Floats) return std::get<std::vector<double>>(v).empty();
  return false;
}

std::string number_str(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

const AttrSpec* OpDef::attr(const std::string& key) const {
  for (const AttrSpec& a : attrs)
    if (a.name == key) return &a;
  return nullptr;
}

void OpDef::check_attrs(const Node& n) const {
  auto where = [&] { return "node '" + n.name + "' (" + name + "): "; };
  for (const auto& [key, value] : n.attrs.values()) {
    const AttrSpec* spec = attr(key);
    if (!spec) {
      std::string takes;
      std::vector<std::string> names;
      for (const AttrSpec& a : attrs) {
        takes += (takes.empty() ? "" : ", ") + a.name;
        names.push_back(a.name);
      }
      LOOM_THROW(ModelError, where(), "unknown attribute '", key, "'", did_you_mean(key, names), "; ", name,
                 takes.empty() ? " takes no attributes" : " takes " + takes);
    }
    if (!fits(value, spec->kind))
      LOOM_THROW(ModelError, where(), "attribute '", key, "' is ", to_string(kind_of(value)), ", ", name, " takes ",
                 to_string(spec->kind));
    auto in_range = [&, &key = key](double v) {  // a structured binding is captured by name (clang)
      if (v >= spec->min && v <= spec->max) return;
      const bool bounded_below = spec->min > -kAttrUnbounded, bounded_above = spec->max < kAttrUnbounded;
      std::string want = bounded_below && bounded_above
                             ? "is out of range [" + number_str(spec->min) + ", " + number_str(spec->max) + "]"
                         : bounded_below ? "must be at least " + number_str(spec->min)
                                         : "must be at most " + number_str(spec->max);
      LOOM_THROW(ModelError, where(), "attribute '", key, "' = ", number_str(v), " ", want);
    };
    if (const auto* i = std::get_if<int64_t>(&value)) in_range(double(*i));
    if (const auto* f = std::get_if<double>(&value)) in_range(*f);
    if (const auto* is = std::get_if<std::vector<int64_t>>(&value))
      for (int64_t v : *is) in_range(double(v));
    if (const auto* fs = std::get_if<std::vector<double>>(&value))
      for (double v : *fs) in_range(v);
  }
  for (const AttrSpec& a : attrs)
    if (a.required && !n.attrs.has(a.name))
      LOOM_THROW(ModelError, where(), "attribute '", a.name, "' (", to_string(a.kind), ") is required");
}

namespace {

std::map<std::string, OpDef> build_table() {
  std::map<std::string, OpDef> t;
  AddOp add = [&](OpDef d) -> OpDef& {
    std::string name = d.name;
    auto [it, is_new] = t.emplace(name, std::move(d));
    LOOM_CHECK(is_new, "operator '", name, "' registered twice");
    return it->second;
  };
  add_nn_ops(add);
  add_elemwise_ops(add);
  // The int8 quantization operators and the accelerator's have no GPU kernels.
  AddOp add_no_gpu = [&](OpDef d) -> OpDef& {
    OpDef& def = add(std::move(d));
    def.cuda = false;
    return def;
  };
  add_quant_ops(add_no_gpu);
  add_transform_ops(add);
  add_accel_ops(add_no_gpu);
  add_reduce_ops(add);
  add_logic_ops(add);
  add_data_ops(add);
  add_scatter_ops(add);
  add_attr_schemas(t);
  return t;
}

const std::map<std::string, OpDef>& table() {
  static const std::map<std::string, OpDef> t = build_table();
  return t;
}

}  // namespace

const OpDef& op_def(const std::string& name) {
  auto it = table().find(name);
  if (it == table().end()) {
    std::string have;
    for (auto& [k, v] : table()) have += (have.empty() ? "" : ", ") + k;
    LOOM_THROW(ModelError, "unknown graph operator '", name, "' (supported: ", have, ")");
  }
  return it->second;
}

bool has_op(const std::string& name) { return table().count(name) != 0; }

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (auto& [k, v] : table()) names.push_back(k);
  return names;
}

}  // namespace loom::graph
