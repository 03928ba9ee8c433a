// Accumulated adds: an ALU nest that adds two accumulator buffers, one of which a lone full GEMM
// nest wrote (a residual add's operand widened by the identity block), costs that GEMM's reset
// pass (one cycle an entry) and the register ADD (two: the accumulator scratchpad has one read
// port). The GEMM can instead accumulate onto the other operand's entries, emitted right before
// the nest: the sum is then in place, and the ADD becomes nothing or a MOV.
#include "accel_emitter.h"

#include <algorithm>

#include "loom/ir/functor.h"
#include "loom/ir/intrinsics.h"

namespace loom::codegen::accel_backend {

using namespace loom::ir;
using accel::Module;

namespace {

// The ALU nest's `x + y` of two different buffers: its two loads, else {null, null}.
std::pair<const LoadNode*, const LoadNode*> register_add(const Stmt& nest) {
  Stmt body = nest;
  while (auto* f = body.as<ForNode>()) body = f->body;
  auto* st = body.as<StoreNode>();
  if (!st || st->value.kind() != ExprKind::Add) return {nullptr, nullptr};
  auto* sum = as_binary(st->value);
  auto *x = sum->a.as<LoadNode>(), *y = sum->b.as<LoadNode>();
  if (!x || !y || x->buffer.get() == y->buffer.get()) return {nullptr, nullptr};
  return {x, y};
}

// True when `s` may change `b`: a store to it, a DMA into it or a GEMM accumulating into it.
bool writes(const Stmt& s, const BufferNode* b) {
  struct Finder : IRVisitor {
    const BufferNode* b;
    bool found = false;
    void visit_store(const StoreNode* op) override {
      found = found || op->buffer.get() == b;
      IRVisitor::visit_store(op);
    }
    void visit_call(const CallNode* op) override {
      const LoadNode* dst = nullptr;
      if (auto copy = as_dma_copy(op)) dst = as_address_of(copy->dst);
      if (auto g = as_tensor_intrin_call(op); g && g->intrinsic == kAccelGemm) dst = as_address_of(g->addresses.back());
      found = found || (dst && dst->buffer.get() == b);
      IRVisitor::visit_call(op);
    }
  } f;
  f.b = b;
  f.visit(s);
  return f.found;
}

}  // namespace

void Emitter::find_accumulated_adds(const Stmt& body) {
  const std::vector<Leaf> leaves = leaves_of(body);
  for (size_t k = 0; k < leaves.size(); ++k) {
    auto* alu = leaves[k].stmt.as<AttrNode>();
    if (!alu || alu->key != "pragma_alu") continue;
    auto [lhs, rhs] = register_add(alu->body);
    if (!lhs) continue;
    // Either operand's GEMM may move (the right one tried first); the destination then takes the
    // other operand's entries (in_place_source), so the sum needs no MOV.
    for (const LoadNode* q : {rhs, lhs}) {
      const BufferNode* other = (q == rhs ? lhs : rhs)->buffer.get();
      // The operand's writer: the latest earlier leaf touching it, a lone full GEMM in the same
      // host loops, the only leaf that touches it before the add.
      size_t g = k;
      while (g-- > 0 && !touches(leaves[g].stmt, q->buffer.get())) {
      }
      if (g >= k || leaves[g].loops != leaves[k].loops) continue;
      auto call = gemm_of(leaves[g].stmt);
      if (!call || call->part != TensorIntrinPart::Full || buffer_of(call->addresses.back()) != q->buffer.get())
        continue;
      bool alone = true;
      for (size_t j = 0; j < g && alone; ++j) alone = !touches(leaves[j].stmt, q->buffer.get());
      // Its operands keep their values until the add, and the other operand is written in the
      // same host loops and read by nothing after the add (it then holds the sum).
      for (size_t j = g + 1; j < k && alone; ++j)
        for (size_t o = 0; o + 1 < call->addresses.size(); ++o)
          alone = alone && !writes(leaves[j].stmt, buffer_of(call->addresses[o]));
      size_t w = k;
      while (w-- > 0 && !writes(leaves[w].stmt, other)) {
      }
      for (size_t j = k + 1; j < leaves.size() && alone; ++j) alone = !touches(leaves[j].stmt, other);
      if (!alone || w >= k || leaves[w].loops != leaves[k].loops) continue;
      accumulated_add_[alu->body.get()] = leaves[g].stmt;
      deferred_gemm_.insert(leaves[g].stmt.get());
      break;
    }
  }
}

bool Emitter::emit_accumulated_add(const Stmt& nest, const Stmt& gemm_leaf) {
  // The GEMM's instructions, built where the nest stands (same host loops, same context).
  std::vector<CapturedGemm> built;
  capture_ = &built;
  exec(gemm_leaf);
  capture_ = nullptr;
  AluNest n = alu_nest_shape(nest);
  auto [lhs, rhs] = register_add(nest);
  // Which side the GEMM wrote, and the entries each side reads.
  const BufferNode* written = buffer_of(gemm_of(gemm_leaf)->addresses.back());
  const int q_side = rhs->buffer.get() == written ? 2 : 1, p_side = 3 - q_side;
  std::vector<uint32_t> q, gemm_writes;
  q = alu_kernel(n, q_side, -1).entries(UopField::Dst);
  if (built.size() == 1) gemm_writes = built[0].kernel.entries(UopField::Dst);
  std::sort(q.begin(), q.end());
  std::sort(gemm_writes.begin(), gemm_writes.end());
  gemm_writes.erase(std::unique(gemm_writes.begin(), gemm_writes.end()), gemm_writes.end());
  const int64_t q0 = q_side == 2 ? n.rhs0 : n.lhs0, p0 = p_side == 2 ? n.rhs0 : n.lhs0;
  // True when the destination is operand `side`'s entries, entry for entry.
  auto in_place_on = [&](int side) {
    bool same = n.dst0 == (side == 2 ? n.rhs0 : n.lhs0);
    for (const auto& l : n.loops) same = same && l[1] == l[1 + side];
    return same;
  };
  bool same_walk = p0 != q0 && built.size() == 1 && built[0].full;
  for (const auto& l : n.loops) same_walk = same_walk && l[1 + q_side] == l[1 + p_side];
  Access dst = kernel_access(alu_kernel(n, 0, -1), false);
  if (!same_walk || q.empty() || q != gemm_writes || std::adjacent_find(q.begin(), q.end()) != q.end()) {
    // Not entry for entry: the GEMM as it was, then the ADD (onto the right operand where the
    // destination took its entries, in_place_source).
    for (const CapturedGemm& g : built) emit_gemm(g);
    if (!in_place_on(2)) return false;
    sync_before(Module::Compute, dst);
    alu(alu_kernel(n, 0, 1), accel::AluOp::Add, false);
    record_after(Module::Compute, dst);
    return true;
  }
  // The GEMM accumulating onto the other operand's entries: no reset.
  CapturedGemm onto = built[0];
  onto.full = false;
  for (auto& u : onto.kernel.uops) u.dst = uint32_t(int64_t(u.dst) + p0 - q0);
  emit_gemm(onto);
  // The sum is in the other operand's entries; the nest's destination takes it unless it is they.
  if (!in_place_on(p_side)) {
    sync_before(Module::Compute, dst);
    alu(alu_kernel(n, 0, p_side), accel::AluOp::Mov, false);
    record_after(Module::Compute, dst);
  }
  return true;
}

}  // namespace loom::codegen::accel_backend
