// The accelerator emitter's loop walker: runs the lowered function's host loops with concrete
// values, places scratchpad allocations (per virtual-thread context), and hands each leaf to the
// DMA lowering (accel_dma.cc), GEMM folding (accel_gemm.cc) or ALU nests (accel_alu.cc); the
// dependency tokens between them come from the hazard tracker (accel_hazards.cc).
#include "accel_emitter.h"

#include <cstdlib>

#include "loom/ir/functor.h"
#include "loom/ir/intrinsics.h"
#include "loom/ir/printer.h"
#include "loom/runtime/error.h"

namespace loom::codegen::accel_backend {

using namespace loom::ir;
using accel::MemType;
using accel::Module;
using accel::UopKernelBuilder;

Emitter::Emitter(accel::Driver& drv, std::map<const BufferNode*, accel::DeviceBuffer> dram,
                 std::map<const BufferNode*, int> dram_bits, std::string func_name)
    : drv_(drv),
      c_(drv.config()),
      dram_(std::move(dram)),
      dram_bits_(std::move(dram_bits)),
      func_(std::move(func_name)) {
  drv_.set_finish_rewrites(true);  // compiled code: the closing store in parts, micro-ops loaded once
}

void Emitter::fail(const std::string& what) const {
  LOOM_THROW(CodegenError, "accelerator backend, function '", func_, "': ", what);
}

void Emitter::run(const Stmt& lowered) {
  const Stmt body = hoist_bias_loads(lowered);
  find_bias_presets(body);
  find_accumulated_adds(body);
  exec(body);
}

int Emitter::elements_per_entry(MemType m) const {
  switch (m) {
    case MemType::Inp:
      return c_.batch * c_.block_in;
    case MemType::Wgt:
      return c_.block_out * c_.block_in;
    case MemType::Acc:
    case MemType::Out:
      return c_.batch * c_.block_out;
    default:
      return 1;
  }
}

int64_t Emitter::eval(const Expr& e) const {
  if (auto* i = e.as<IntImmNode>()) return i->value;
  if (auto* v = e.as<VarNode>()) {
    auto it = env_.find(v);
    if (it == env_.end()) fail("variable '" + v->name + "' is not bound to a host loop");
    return it->second;
  }
  if (auto* c = e.as<CastNode>()) return eval(c->value);
  if (auto* b = as_binary(e)) {
    int64_t x = eval(b->a), y = eval(b->b);
    auto fdiv = [&](int64_t p, int64_t q) {
      if (q == 0) fail("division by zero in '" + to_string(e) + "'");
      int64_t r = p / q;
      return (p % q != 0 && ((p < 0) != (q < 0))) ? r - 1 : r;
    };
    switch (e.kind()) {
      case ExprKind::Add:
        return x + y;
      case ExprKind::Sub:
        return x - y;
      case ExprKind::Mul:
        return x * y;
      case ExprKind::Div:
        return fdiv(x, y);
      case ExprKind::Mod:
        return x - fdiv(x, y) * y;
      case ExprKind::Min:
        return std::min(x, y);
      case ExprKind::Max:
        return std::max(x, y);
      case ExprKind::EQ:
        return x == y;
      case ExprKind::NE:
        return x != y;
      case ExprKind::LT:
        return x < y;
      case ExprKind::LE:
        return x <= y;
      case ExprKind::GT:
        return x > y;
      case ExprKind::GE:
        return x >= y;
      case ExprKind::And:
        return x && y;
      case ExprKind::Or:
        return x || y;
      default:
        break;
    }
  }
  fail("cannot evaluate '" + to_string(e) + "' on the host");
}

Emitter::Operand Emitter::operand(const Expr& addr) const {
  const LoadNode* ld = as_address_of(addr);
  if (!ld) fail("expected address_of(buffer[index]), got '" + to_string(addr) + "'");
  Operand o;
  o.buffer = ld->buffer.get();
  o.element = eval(ld->index);
  if (auto it = sram_.find(o.buffer); it != sram_.end()) {
    if (it->second.dead)
      fail("buffer '" + ld->buffer->name + "' is used after a later stage reused its scratchpad entries");
    o.sram = &it->second;
  } else if (auto d = dram_.find(o.buffer); d != dram_.end()) {
    o.dram_base = d->second.addr;
    auto b = dram_bits_.find(o.buffer);
    o.dram_bits = b != dram_bits_.end() ? b->second : ld->buffer->dtype.bits();
  } else {
    fail("buffer '" + ld->buffer->name + "' is neither an argument nor an accelerator scratchpad allocation");
  }
  return o;
}

uint64_t Emitter::dram_address(const Operand& o, int64_t offset, const std::string& what) const {
  const int64_t bit = (o.element + offset) * int64_t(o.dram_bits);
  if (bit % 8)
    fail(what + ": element " + std::to_string(o.element + offset) + " of '" + o.buffer->name + "' (" +
         std::to_string(o.dram_bits) + "-bit, packed) starts inside a byte");
  return o.dram_base + uint64_t(bit / 8);
}

uint32_t Emitter::entry_of(const Operand& o, const char* what) const {
  if (!o.sram) fail(std::string(what) + " operand '" + o.buffer->name + "' must be in an accelerator scope");
  int e = elements_per_entry(o.sram->mem);
  if (o.element % e)
    fail(std::string(what) + " operand '" + o.buffer->name + "' starts at element " + std::to_string(o.element) +
         ", not at an entry boundary (" + std::to_string(e) + " elements)");
  return o.sram->base + uint32_t(o.element / e);
}

void Emitter::exec(const Stmt& s) {
  if (!s.defined() || (!capture_ && deferred_gemm_.count(s.get()))) return;
  if (auto preset = bias_preset_.find(s.get()); preset != bias_preset_.end() && emit_bias_preset(s, preset->second))
    return;
  switch (s.kind()) {
    case StmtKind::Seq:
      for (auto& c : s.as<SeqNode>()->seq) exec(c);
      return;
    case StmtKind::For:
      return exec_for(s.as<ForNode>());
    case StmtKind::Allocate:
      return exec_allocate(s.as<AllocateNode>());
    case StmtKind::Attr: {
      auto* a = s.as<AttrNode>();
      if (a->key == "pragma_alu") return alu_nest(a->body);
      return exec(a->body);
    }
    case StmtKind::LetStmt: {
      auto* l = s.as<LetStmtNode>();
      env_[l->var.get()] = eval(l->value);
      return exec(l->body);
    }
    case StmtKind::IfThenElse: {
      auto* i = s.as<IfThenElseNode>();
      return exec(eval(i->cond) ? i->then_case : i->else_case);
    }
    case StmtKind::Evaluate: {
      auto* e = s.as<EvaluateNode>();
      if (auto* c = e->value.as<CallNode>()) return exec_call(c);
      if (e->value.as<IntImmNode>()) return;
      break;
    }
    default:
      break;
  }
  fail("unsupported statement (host code other than loops over accelerator operations):\n" + to_string(s));
}

void Emitter::exec_for(const ForNode* op) {
  if (op->for_kind == ForKind::Parallel || op->for_kind == ForKind::ThreadBinding ||
      op->for_kind == ForKind::Vectorized)
    fail(std::string("loop '") + op->var.name() + "' is " + ir::to_string(op->for_kind) +
         "; accelerator host loops must be serial, unrolled or virtual threads");
  if (op->for_kind == ForKind::VirtualThread && !vthread_var_) return exec_vthread(op);
  if (try_fold_gemm(op)) return;
  int64_t mn = eval(op->min), ext = eval(op->extent);
  for (int64_t i = mn; i < mn + ext; ++i) {
    env_[op->var.get()] = i;
    exec(op->body);
  }
  env_.erase(op->var.get());
}

void Emitter::exec_vthread(const ForNode* op) {
  if (!is_zero(op->min)) fail("virtual thread loop '" + op->var.name() + "' must start at 0");
  vthread_var_ = op->var.get();
  vthread_extent_ = eval(op->extent);
  context_sram_.assign(size_t(vthread_extent_), {});
  lockstep(op->body);
  vthread_var_ = nullptr;
  context_sram_.clear();
  env_.erase(op->var.get());
}

// True for statements the lockstep emits once per context as a whole: DMA, ALU nests, GEMM
// loop nests (one instruction each) and anything that depends on the context.
bool Emitter::lockstep_leaf(const Stmt& s) const {
  auto depends = [&](const Expr& e) { return uses_var(e, vthread_var_); };
  if (s.as<SeqNode>() || s.as<AllocateNode>()) return false;
  if (auto* f = s.as<ForNode>(); f && !depends(f->min) && !depends(f->extent) && f->for_kind != ForKind::VirtualThread)
    return gemm_nest_call(f) != nullptr;
  if (auto* at = s.as<AttrNode>(); at && at->key != "pragma_alu") return false;
  if (auto* i = s.as<IfThenElseNode>(); i && !depends(i->cond)) return false;
  return true;
}

void Emitter::lockstep(const Stmt& s) {
  // Leaves are gathered into runs that execute context by context (all of context 0's, then
  // context 1's...): one context's loads then sit in the stream before the other context's
  // compute, so the load module fetches context 0's next operands while the compute module works
  // on context 1. Allocations do not end a run (their buffers are assigned when met and released
  // when the scope ends), so a tile's input load, weight load and GEMM stay together.
  std::vector<Stmt> run;
  std::vector<const AllocateNode*> allocated;
  const size_t held = held_loop_vars_.size();
  gather(s, run, allocated);
  flush_run(run);
  for (auto it = allocated.rbegin(); it != allocated.rend(); ++it) release_context_buffers(*it);
  for (size_t i = held; i < held_loop_vars_.size(); ++i) env_.erase(held_loop_vars_[i]);
  held_loop_vars_.resize(held);
}

bool Emitter::only_leaves(const Stmt& s) const {
  if (auto* q = s.as<SeqNode>()) {
    for (auto& c : q->seq)
      if (!only_leaves(c)) return false;
    return true;
  }
  if (lockstep_leaf(s)) return true;
  if (auto* a = s.as<AllocateNode>()) return only_leaves(a->body);
  if (auto* at = s.as<AttrNode>()) return only_leaves(at->body);
  return false;
}

void Emitter::flush_run(std::vector<Stmt>& run, bool acc_loads_first) {
  size_t lead = 0;
  while (acc_loads_first && lead < run.size() && loads_accumulators(run[lead])) ++lead;
  for (auto [begin, end] : {std::pair<size_t, size_t>{0, lead}, {lead, run.size()}})
    for (int64_t v = 0; v < vthread_extent_ && begin < end; ++v) {
      env_[vthread_var_] = v;
      for (auto& [b, r] : context_sram_[size_t(v)]) sram_[b] = r;
      for (size_t k = begin; k < end; ++k) exec(run[k]);
    }
  run.clear();
}

bool Emitter::loads_accumulators(const Stmt& leaf) {
  const BufferNode* dst = dma_destination(leaf);
  return dst && dst->scope == scope::kAccAccum;
}

void Emitter::gather(const Stmt& s, std::vector<Stmt>& run, std::vector<const AllocateNode*>& allocated) {
  if (auto* q = s.as<SeqNode>()) {
    for (auto& c : q->seq) gather(c, run, allocated);
  } else if (lockstep_leaf(s)) {
    run.push_back(s);
  } else if (auto* f = s.as<ForNode>()) {
    // A loop of leaves (a reduction's loads and GEMMs): its last iteration joins the run after it,
    // so each context's epilogue follows its own last GEMM and its STORE overlaps the other
    // context's last GEMM, instead of every context's epilogue waiting for every context's last
    // GEMM. Past the first tile (a loop around it, inside the virtual threads where the schedules put
    // the tile loops, past its first iteration) its first iteration also joins the run before it (the
    // reset or bias preset): each context's preset then follows the other context's first GEMM,
    // which gives that context's STORE of the tile before time to drain the out entries the
    // preset overwrites. The leading bias loads still run for every context first (in the first
    // tile nothing waits on a STORE, and a bias load after a GEMM shares the bus with its loads).
    const bool leaves = only_leaves(f->body), first_joins = leaves && loops_past_first_ > 0;
    if (!first_joins) flush_run(run);
    int64_t mn = eval(f->min), ext = eval(f->extent);
    for (int64_t i = mn; i < mn + ext; ++i) {
      env_[f->var.get()] = i;
      if (i + 1 == mn + ext && leaves) {
        gather(f->body, run, allocated);
        held_loop_vars_.push_back(f->var.get());
        return;
      }
      if (i == mn && first_joins) {
        std::vector<const AllocateNode*> first_allocated;
        gather(f->body, run, first_allocated);
        flush_run(run, /*acc_loads_first=*/true);
        for (auto it = first_allocated.rbegin(); it != first_allocated.rend(); ++it) release_context_buffers(*it);
        continue;
      }
      loops_past_first_ += i > mn;
      lockstep(f->body);
      loops_past_first_ -= i > mn;
    }
    env_.erase(f->var.get());
  } else if (auto* a = s.as<AllocateNode>()) {
    allocate_context_buffers(a);
    allocated.push_back(a);
    gather(a->body, run, allocated);
  } else if (auto* at = s.as<AttrNode>()) {
    gather(at->body, run, allocated);
  } else if (auto* i = s.as<IfThenElseNode>()) {
    gather(eval(i->cond) ? i->then_case : i->else_case, run, allocated);
  }
}

// One buffer per context, side by side in the scratchpad; an element-wise stage computed in place
// reuses its source's buffer in every context.
void Emitter::allocate_context_buffers(const AllocateNode* a) {
  auto [mem, slot, entries, depth] = scratchpad_of(a);
  for (auto& [b, r] : context_sram_[0]) sram_[b] = r;
  const Stmt& first = a->body.as<SeqNode>() ? a->body.as<SeqNode>()->seq[0] : a->body;
  if (const BufferNode* src = mem == MemType::Acc ? in_place_source(a, first) : nullptr) {
    for (auto& ctx : context_sram_) ctx[a->buffer.get()] = Sram{mem, ctx.at(src).base, entries};
    in_place_.insert(a);
    return;
  }
  if (top_[slot] + int64_t(entries) * vthread_extent_ > depth)
    fail("scratchpad " + std::string(accel::to_string(mem)) + " overflows allocating '" + a->buffer->name + "' for " +
         std::to_string(vthread_extent_) + " virtual threads; use smaller tiles or fewer threads");
  for (int64_t v = 0; v < vthread_extent_; ++v) {
    context_sram_[size_t(v)][a->buffer.get()] = Sram{mem, top_[slot], entries};
    top_[slot] += entries;
  }
}

void Emitter::release_context_buffers(const AllocateNode* a) {
  if (!in_place_.erase(a)) {
    auto [mem, slot, entries, depth] = scratchpad_of(a);
    top_[slot] -= uint32_t(int64_t(entries) * vthread_extent_);
  }
  for (auto& ctx : context_sram_) ctx.erase(a->buffer.get());
  sram_.erase(a->buffer.get());
}

Emitter::Placement Emitter::scratchpad_of(const AllocateNode* op) const {
  const std::string& scope = op->buffer->scope;
  Placement p;
  if (scope == scope::kAccInput)
    p = {MemType::Inp, 0, 0, c_.inp_depth()};
  else if (scope == scope::kAccWeight)
    p = {MemType::Wgt, 1, 0, c_.wgt_depth()};
  else if (scope == scope::kAccAccum)
    p = {MemType::Acc, 2, 0, c_.acc_depth()};
  else
    fail("allocation '" + op->buffer->name + "' in scope '" + scope +
         "': only acc.inp, acc.wgt and acc.acc live on the accelerator");
  int64_t size = constant_size(op->buffer), e = elements_per_entry(p.mem);
  if (size < 0 || size % e)
    fail("allocation '" + op->buffer->name + "' of " + std::to_string(size) + " elements is not a whole number of " +
         std::to_string(e) + "-element entries");
  p.entries = uint32_t(size / e);
  return p;
}

// An element-wise stage that reads another accumulator buffer at the same indices, and is that
// buffer's last reader, can compute in place (the ALU updates its destination operand). Returns
// that source buffer, or null.
const BufferNode* Emitter::in_place_source(const AllocateNode* op, const Stmt& first) const {
  auto* alu = first.as<AttrNode>();
  if (!alu || alu->key != "pragma_alu") return nullptr;
  Stmt inner = alu->body;
  while (auto* f = inner.as<ForNode>()) inner = f->body;
  auto* st = inner.as<StoreNode>();
  if (!st || st->buffer.get() != op->buffer.get()) return nullptr;
  // An accumulated add's sum lands in the operand its GEMM did not write (accel_add_accumulate.cc).
  const BufferNode* skip = nullptr;
  if (auto acc = accumulated_add_.find(alu->body.get()); acc != accumulated_add_.end())
    skip = buffer_of(gemm_of(acc->second)->addresses.back());
  const BufferNode* src = nullptr;
  post_order_visit(st->value, [&](const Expr& x) {
    if (auto* l = x.as<LoadNode>();
        l && !src && l->buffer.get() != skip && structural_equal(l->index, st->index) && sram_.count(l->buffer.get()))
      src = l->buffer.get();
  });
  if (!src || sram_.at(src).mem != MemType::Acc || sram_.at(src).entries != sram_entries(op)) return nullptr;
  if (auto* q = op->body.as<SeqNode>())
    for (size_t k = 1; k < q->seq.size(); ++k)
      if (uses_var(q->seq[k], src->data.get())) return nullptr;  // read again later: not dead
  return src;
}

void Emitter::exec_allocate(const AllocateNode* op) {
  auto [mem, slot, entries, depth] = scratchpad_of(op);
  const Stmt& first = op->body.as<SeqNode>() ? op->body.as<SeqNode>()->seq[0] : op->body;
  const BufferNode* src = mem == MemType::Acc ? in_place_source(op, first) : nullptr;
  Sram region{mem, 0, entries};
  if (src) {
    region.base = sram_.at(src).base;
  } else {
    if (top_[slot] + entries > depth)
      fail("scratchpad " + std::string(accel::to_string(mem)) + " overflows allocating '" + op->buffer->name + "' (" +
           std::to_string(entries) + " entries at " + std::to_string(top_[slot]) + ", depth " + std::to_string(depth) +
           "); use smaller tiles");
    region.base = top_[slot];
    top_[slot] += entries;
  }
  sram_[op->buffer.get()] = region;
  if (src) {
    exec(first);
    sram_.at(src).dead = true;
    if (auto* q = op->body.as<SeqNode>())
      for (size_t k = 1; k < q->seq.size(); ++k) exec(q->seq[k]);
  } else {
    exec(op->body);
    top_[slot] -= entries;
  }
  sram_.erase(op->buffer.get());
}

void Emitter::exec_call(const CallNode* call) {
  if (auto copy = as_dma_copy(call)) return dma_copy(*copy);
  if (auto g = as_gemm_call(call)) return gemm(*g, {}, {});
  fail("unsupported call '" + call->name + "'");
}

}  // namespace loom::codegen::accel_backend
