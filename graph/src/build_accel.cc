#include "build_accel.h"

#include <memory>

#include "loom/codegen/accel.h"
#include "loom/graph/op_registry.h"
#include "loom/runtime/error.h"
#include "loom/runtime/packed_elements.h"
#include "loom/schedule/lower.h"
#include "op_schedules.h"

namespace loom::graph {

namespace {

// What an accelerator operator's input `slot` is in the scratchpads: its element width.
int slot_bits(const accel::AccelConfig& c, const std::string& op, size_t slot) {
  if (op == "accel_add") return slot < 2 ? c.inp_bits : c.wgt_bits;     // the operands, then the identity block
  return slot == 0 ? c.inp_bits : slot == 1 ? c.wgt_bits : c.acc_bits;  // conv2d, dense: data, weight, bias, shifts
}

}  // namespace

int AccelBuild::narrow_bits(const Graph& g, int id) const {
  if (auto it = narrow_bits_.find(id); it != narrow_bits_.end()) return it->second;
  int bits = 0;
  std::string first;
  auto take = [&](int b, const std::string& as) {
    if (bits && b != bits)
      LOOM_THROW(InternalError, "value '", g.node(id).name, "' is ", first, " and ", as, " of config '", config_.name,
                 "' at two widths");
    bits = b;
    first = as;
  };
  const Node& n = g.node(id);
  if (n.is_op() && op_def(n.op).device == runtime::KernelDevice::Accel) take(config_.out_bits, "an output");
  for (const Node& u : g.nodes) {
    if (!u.is_op() || op_def(u.op).device != runtime::KernelDevice::Accel) continue;
    for (size_t k = 0; k < u.inputs.size(); ++k)
      if (u.inputs[k] == id) take(slot_bits(config_, u.op, k), "operand " + std::to_string(k) + " of '" + u.name + "'");
  }
  return narrow_bits_[id] = bits && bits < g.type_of(id).dtype.bits() ? bits : 0;
}

uint64_t AccelBuild::place(const Graph& g, int id) {
  auto it = offset_.find(id);
  if (it != offset_.end()) return it->second;
  const Node& n = g.node(id);
  const TensorType& t = g.type_of(id);
  const int bits = narrow_bits(g, id);
  if (!bits) return offset_[id] = linker_.reserve(t.nbytes(), n.is_constant() ? n.value.raw_data() : nullptr);
  const uint64_t elements = uint64_t(t.numel());
  std::vector<uint8_t> packed((elements * uint64_t(bits) + 7) / 8);
  if (n.is_constant()) {
    int64_t bad = runtime::pack_from_container(n.value.raw_data(), t.dtype.bits(), elements, bits, packed.data());
    if (bad >= 0)
      LOOM_THROW(ModelError, "constant '", n.name, "' holds ", n.value.get_as_double(bad), " at element ", bad,
                 ", outside the ", bits, "-bit range config '", config_.name, "' (", config_.precision(),
                 ") holds it in; quantize for this config (loom compile --quantize int8 --config ...) so that its "
                 "accelerator layers are quantized at the config's widths");
  }
  return offset_[id] = linker_.reserve(packed.size(), n.is_constant() ? packed.data() : nullptr);
}

size_t AccelBuild::compile_group(const Graph& g, const FusedGroup& grp, const std::string& name) {
  const Node& n = g.node(grp.anchor);
  const OpDef& def = op_def(n.op);
  if (grp.nodes.size() != 1 || def.device != runtime::KernelDevice::Accel || !def.schedule_accel)
    LOOM_THROW(InternalError, "accelerator group of node '", n.name, "' is not a single accelerator operator");
  std::vector<ir::Tensor> in;
  for (int i : n.inputs) {
    std::vector<ir::Expr> shape;
    for (int64_t d : g.type_of(i).shape) shape.push_back(ir::Expr(int(d)));
    in.push_back(ir::placeholder(shape, g.type_of(i).dtype, "in" + std::to_string(in.size())));
  }
  AccelScheduleContext c{g, n, in, name, target_, conv_tiling_, nullptr, ir::Tensor()};
  def.schedule_accel(c);
  std::vector<ir::Tensor> args = in;
  args.push_back(c.result);
  ir::LoweredFunc f = schedule::lower(*c.s, args, name);
  std::vector<uint64_t> offsets;
  std::vector<int> ids = n.inputs;
  ids.push_back(grp.output);
  const std::vector<int> bits = codegen::accel_arg_bits(f, config_);
  for (size_t k = 0; k < ids.size(); ++k) {
    offsets.push_back(place(g, ids[k]));
    const int narrow = narrow_bits(g, ids[k]);
    if ((narrow ? narrow : g.type_of(ids[k]).dtype.bits()) != bits[k])
      LOOM_THROW(InternalError, "accelerator node '", n.name, "': value '", g.node(ids[k]).name, "' is placed at ",
                 narrow, " bits but its kernel moves it at ", bits[k]);
  }
  return codegen::emit_accel(f, linker_, offsets, name);
}

}  // namespace loom::graph
