// Bias presets: a per-channel bias added on the ALU after the GEMMs costs the accumulators a reset
// pass (one cycle an entry) and an ADD with a register operand (two: the accumulator scratchpad has
// one read port). A MOV of the bias into them instead of the reset (one cycle) gives the same sums,
// since the accumulators' addition wraps around: adding the bias first or last is the same.
#include <algorithm>
#include <functional>

#include "accel_emitter.h"
#include "loom/ir/functor.h"
#include "loom/ir/intrinsics.h"

namespace loom::codegen::accel_backend {

using namespace loom::ir;
using accel::Module;

namespace {

// The ALU nest's `acc + bias` (either order): the bias buffer, or null.
const BufferNode* bias_added_to(const Stmt& s, const BufferNode* acc) {
  auto* alu = s.as<AttrNode>();
  if (!alu || alu->key != "pragma_alu") return nullptr;
  Stmt body = alu->body;
  while (auto* f = body.as<ForNode>()) body = f->body;
  auto* st = body.as<StoreNode>();
  if (!st || st->value.kind() != ExprKind::Add) return nullptr;
  auto* sum = as_binary(st->value);
  auto *x = sum->a.as<LoadNode>(), *y = sum->b.as<LoadNode>();
  if (!x || !y) return nullptr;
  if (y->buffer.get() == acc) std::swap(x, y);
  if (x->buffer.get() != acc || y->buffer.get() == acc) return nullptr;
  return y->buffer.get();
}

// The statement an allocation's body starts with.
const Stmt& first_of(const Stmt& body) {
  auto* q = body.as<SeqNode>();
  return q && !q->seq.empty() ? q->seq[0] : body;
}

bool allocates_accumulators(const Stmt& s) {
  struct Finder : IRVisitor {
    bool found = false;
    void visit_allocate(const AllocateNode* op) override {
      found = found || op->buffer->scope == scope::kAccAccum;
      IRVisitor::visit_allocate(op);
    }
  } f;
  f.visit(s);
  return f.found;
}

// Lowering places a bias's load beside the stage that adds it, after the GEMMs: in a sequence
//   reset(B); <GEMM updates of B>; allocate bias { load bias; <B + bias>; ... }
// the bias allocation is moved to enclose the reset, its load first:
//   allocate bias { load bias; reset(B); <GEMM updates of B>; <B + bias>; ... }
// The load reads DRAM only and the stack allocator places the bias where it did (no accumulator
// allocation in between), so the program computes the same; the reset can then become a MOV.
class HoistBiasLoads : public IRMutator {
 public:
  Stmt mutate_seq(const Stmt& s, const SeqNode* op) override {
    Stmt m = IRMutator::mutate_seq(s, op);
    auto* q = m.as<SeqNode>();
    if (!q) return m;
    std::vector<Stmt> out(q->seq.begin(), q->seq.end());
    for (size_t a = 1; a < out.size(); ++a) {
      auto* alloc = out[a].as<AllocateNode>();
      if (!alloc || alloc->buffer->scope != scope::kAccAccum ||
          dma_destination(first_of(alloc->body)) != alloc->buffer.get())
        continue;
      // The reset of the accumulators the bias is added to, with only statements between that
      // allocate no accumulators.
      auto* rest = first_of(alloc->body).same_as(alloc->body) ? nullptr : alloc->body.as<SeqNode>();
      if (!rest || rest->seq.size() < 2) continue;
      for (size_t r = a; r-- > 0;) {
        auto reset = gemm_of(out[r]);
        if (allocates_accumulators(out[r])) break;
        if (!reset || reset->part != TensorIntrinPart::Reset) continue;
        const BufferNode* acc = buffer_of(reset->addresses[0]);
        const Stmt* add = &rest->seq[1];
        while (auto* inner = add->as<AllocateNode>()) add = &first_of(inner->body);
        if (!acc || bias_added_to(*add, acc) != alloc->buffer.get()) break;
        std::vector<Stmt> body(rest->seq.begin(), rest->seq.begin() + 1);
        body.insert(body.end(), out.begin() + long(r), out.begin() + long(a));
        body.insert(body.end(), rest->seq.begin() + 1, rest->seq.end());
        out.erase(out.begin() + long(r), out.begin() + long(a) + 1);
        out.insert(out.begin() + long(r), allocate(alloc->buffer, seq(std::move(body))));
        return seq(std::move(out));
      }
    }
    return m;
  }
};

}  // namespace

// The accelerator GEMM call at the end of a nest (or a lone call), or nullopt.
std::optional<TensorIntrinCall> gemm_of(const Stmt& s) {
  Stmt body = s;
  while (auto* f = body.as<ForNode>()) body = f->body;
  auto* ev = body.as<EvaluateNode>();
  auto* call = ev ? ev->value.as<CallNode>() : nullptr;
  auto c = call ? as_tensor_intrin_call(call) : std::nullopt;
  if (!c || c->intrinsic != kAccelGemm) return std::nullopt;
  return c;
}

const BufferNode* dma_destination(const Stmt& s) {
  auto* ev = s.as<EvaluateNode>();
  auto* call = ev ? ev->value.as<CallNode>() : nullptr;
  auto copy = call ? as_dma_copy(call) : std::nullopt;
  return copy ? buffer_of(copy->dst) : nullptr;
}

const BufferNode* buffer_of(const Expr& address) {
  const LoadNode* l = as_address_of(address);
  return l ? l->buffer.get() : nullptr;
}

bool touches(const Stmt& s, const BufferNode* b) { return uses_var(s, b->data.get()); }

Stmt Emitter::hoist_bias_loads(const Stmt& body) { return HoistBiasLoads().mutate(body); }

std::vector<Emitter::Leaf> Emitter::leaves_of(const Stmt& body) {
  std::vector<Leaf> leaves;
  std::vector<const ForNode*> loops;
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (!s.defined()) return;
    if (auto* q = s.as<SeqNode>()) {
      for (auto& c : q->seq) walk(c);
    } else if (auto* a = s.as<AllocateNode>()) {
      walk(a->body);
    } else if (auto* at = s.as<AttrNode>(); at && at->key != "pragma_alu") {
      walk(at->body);
    } else if (auto* f = s.as<ForNode>(); f && !gemm_nest_call(f)) {
      loops.push_back(f);
      walk(f->body);
      loops.pop_back();
    } else {
      leaves.push_back({s, loops});
    }
  };
  walk(body);
  return leaves;
}

void Emitter::find_bias_presets(const Stmt& body) {
  const std::vector<Leaf> leaves = leaves_of(body);
  for (size_t r = 0; r < leaves.size(); ++r) {
    auto reset = gemm_of(leaves[r].stmt);
    if (!reset || reset->part != TensorIntrinPart::Reset) continue;
    const BufferNode* acc = buffer_of(reset->addresses[0]);
    if (!acc) continue;
    // The first later leaf that touches the accumulators other than by accumulating into them
    // must add the bias, inside the same host loops.
    size_t k = r + 1;
    for (; k < leaves.size(); ++k) {
      auto g = gemm_of(leaves[k].stmt);
      bool accumulates = g && g->part == TensorIntrinPart::Update && buffer_of(g->addresses.back()) == acc;
      if (!accumulates && touches(leaves[k].stmt, acc)) break;
    }
    if (k == leaves.size() || leaves[k].loops != leaves[r].loops) continue;
    const BufferNode* bias = bias_added_to(leaves[k].stmt, acc);
    if (!bias) continue;
    // The bias is loaded before the reset and untouched until it is added.
    bool untouched = true;
    for (size_t j = r + 1; j < k; ++j) untouched = untouched && !touches(leaves[j].stmt, bias);
    size_t last = r;
    for (size_t j = 0; j < r; ++j)
      if (touches(leaves[j].stmt, bias)) last = j;
    if (!untouched || last == r || dma_destination(leaves[last].stmt) != bias || leaves[last].loops != leaves[r].loops)
      continue;
    bias_preset_[leaves[r].stmt.get()] = leaves[k].stmt.as<AttrNode>()->body;
  }
}

bool Emitter::emit_bias_preset(const Stmt& reset, const Stmt& add_nest) {
  // The entries the reset would zero must be those the ADD reads, each once.
  std::vector<const ForNode*> chain;
  Stmt innermost = reset;
  for (auto* f = reset.as<ForNode>(); f; f = innermost.as<ForNode>()) chain.push_back(f), innermost = f->body;
  for (auto* l : chain)
    if (!as_const_int(l->extent) || !is_zero(l->min)) return false;
  auto call = gemm_of(innermost);
  std::vector<int64_t> zeroed;
  for_each_point(chain, [&] { zeroed.push_back(entry_of(operand(call->addresses[0]), "GEMM accumulator")); });
  for (auto* l : chain) env_.erase(l->var.get());
  AluNest n = alu_nest_shape(add_nest, /*with_destination=*/false);
  if (n.op != accel::AluOp::Add || n.use_imm || !n.has_rhs) return false;
  // The MOV writes the ADD's left operand entries (their out copies, entry for entry).
  Access a = kernel_access(alu_kernel(n, 1, -1), false);
  std::vector<int64_t> added;
  for (const auto& w : a.writes) added.push_back(w.second);
  std::sort(zeroed.begin(), zeroed.end());
  std::sort(added.begin(), added.end());
  if (zeroed != added || std::adjacent_find(added.begin(), added.end()) != added.end()) return false;
  sync_before(Module::Compute, a);
  alu(alu_kernel(n, 1, 2), accel::AluOp::Mov, false);
  record_after(Module::Compute, a);
  bias_applied_.insert({add_nest.get(), context()});
  return true;
}

}  // namespace loom::codegen::accel_backend
