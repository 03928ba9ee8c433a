// The operator table: one family file per kind of operator (op_registry_util.h lists them).
#include "loom/graph/op_registry.h"

#include <map>

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
  add_quant_ops(add);
  add_transform_ops(add);
  add_accel_ops(add);
  add_reduce_ops(add);
  add_logic_ops(add);
  add_data_ops(add);
  add_scatter_ops(add);
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
