#include "loom/ir/intrinsics.h"
#include "loom/ir/buffer.h"

#include "loom/runtime/error.h"

namespace loom::ir {

Expr make_address_of(Expr element) {
  return Expr(std::make_shared<const CallNode>(DataType::Int(64), kAddressOf, std::vector<Expr>{std::move(element)},
                                               CallNode::CallType::PureIntrinsic));
}

const LoadNode* as_address_of(const Expr& address) {
  auto* call = address.as<CallNode>();
  return call && call->name == kAddressOf && call->args.size() == 1 ? call->args[0].as<LoadNode>() : nullptr;
}

Expr make_shift_right(Expr x, Expr amount) {
  if (x.type().element_of() != DataType::Int(32) || amount.type().element_of() != DataType::Int(32))
    LOOM_THROW(InternalError, "shift_right: needs int32 operands, got ", x.type().str(), " and ", amount.type().str());
  DataType t = x.type();
  return call_intrinsic(t, kShiftRight, {std::move(x), std::move(amount)});
}

Expr make_prefetch(const Buffer& buffer, Expr index) {
  return call_intrinsic(DataType::Int(32), kPrefetch, {make_address_of(load(buffer->dtype, buffer, std::move(index)))});
}

const LoadNode* as_prefetch(const CallNode* call) {
  if (!call || call->name != kPrefetch) return nullptr;
  const LoadNode* element = call->args.size() == 1 ? as_address_of(call->args[0]) : nullptr;
  if (!element || element->index.type().lanes() != 1)
    LOOM_THROW(InternalError, "prefetch: expected one operand address_of(buffer[index]) with a scalar index, got ",
               call->args.size(), " operand(s)", element ? " with a vector index" : "");
  return element;
}

Expr make_dma_copy(const DmaCopy& c) {
  std::vector<Expr> args = {c.dst, c.src, c.pad_value, Expr(static_cast<int>(c.dims.size()))};
  for (const DmaDim& d : c.dims)
    for (const Expr& e : {d.extent, d.dst_stride, d.src_stride, d.pad_before, d.pad_after}) args.push_back(e);
  return call_intrinsic(DataType::Int(32), kDmaCopy, std::move(args));
}

std::optional<DmaCopy> as_dma_copy(const CallNode* call) {
  if (!call || call->name != kDmaCopy) return std::nullopt;
  const auto& a = call->args;
  const int64_t* ndim = a.size() >= 4 ? as_const_int(a[3]) : nullptr;
  if (!ndim || *ndim < 0 || a.size() != 4 + 5 * size_t(*ndim))
    LOOM_THROW(InternalError, "malformed dma_copy call with ", a.size(), " arguments");
  DmaCopy c{a[0], a[1], a[2], {}};
  for (int64_t d = 0; d < *ndim; ++d) {
    const Expr* p = &a[4 + 5 * size_t(d)];
    c.dims.push_back({p[0], p[1], p[2], p[3], p[4]});
  }
  return c;
}

const char* to_string(TensorIntrinPart p) {
  switch (p) {
    case TensorIntrinPart::Full:
      return "full";
    case TensorIntrinPart::Reset:
      return "reset";
    case TensorIntrinPart::Update:
      return "update";
  }
  return "?";
}

Expr make_tensor_intrin_call(const TensorIntrinCall& c) {
  return call_intrinsic(DataType::Int(32), c.intrinsic + "." + to_string(c.part), c.addresses);
}

namespace {
// The lanes L of "<prefix><L>"; nullopt for other names.
std::optional<int> lanes_after(const std::string& prefix, const std::string& intrinsic) {
  if (intrinsic.compare(0, prefix.size(), prefix) != 0 || intrinsic.size() == prefix.size() ||
      intrinsic.size() > prefix.size() + 3)
    return std::nullopt;
  int lanes = 0;
  for (size_t i = prefix.size(); i < intrinsic.size(); ++i) {
    if (intrinsic[i] < '0' || intrinsic[i] > '9') return std::nullopt;
    lanes = lanes * 10 + (intrinsic[i] - '0');
  }
  return lanes >= 1 ? std::optional<int>(lanes) : std::nullopt;
}
}  // namespace

std::string cpu_dot2_i16_name(int lanes) { return kCpuDot2I16 + std::to_string(lanes); }
std::optional<int> cpu_dot2_i16_lanes(const std::string& intrinsic) { return lanes_after(kCpuDot2I16, intrinsic); }
std::string cpu_dot4_u8s7_name(int lanes) { return kCpuDot4U8S7 + std::to_string(lanes); }
std::optional<int> cpu_dot4_u8s7_lanes(const std::string& intrinsic) { return lanes_after(kCpuDot4U8S7, intrinsic); }

std::optional<TensorIntrinCall> as_tensor_intrin_call(const CallNode* call) {
  if (!call || call->args.empty()) return std::nullopt;
  size_t dot = call->name.rfind('.');
  if (dot == std::string::npos || dot == 0) return std::nullopt;
  std::string part = call->name.substr(dot + 1);
  TensorIntrinCall c{call->name.substr(0, dot), TensorIntrinPart::Full, call->args};
  if (part == "full")
    c.part = TensorIntrinPart::Full;
  else if (part == "reset")
    c.part = TensorIntrinPart::Reset;
  else if (part == "update")
    c.part = TensorIntrinPart::Update;
  else
    return std::nullopt;
  return c;
}

}  // namespace loom::ir
