#include "accel_emitter.h"

#include <cstdlib>

#include "loom/ir/functor.h"
#include "loom/ir/printer.h"
#include "loom/runtime/error.h"

namespace loom::codegen::accel_backend {

using namespace loom::ir;
using accel::MemType;
using accel::Module;
using accel::UopKernelBuilder;

Emitter::Emitter(accel::Driver& drv, std::map<const BufferNode*, accel::DeviceBuffer> dram, std::string func_name)
    : drv_(drv), c_(drv.config()), dram_(std::move(dram)), func_(std::move(func_name)) {}

void Emitter::fail(const std::string& what) const { LOOM_THROW(CodegenError, "accelerator backend, function '", func_, "': ", what); }

void Emitter::run(const Stmt& body) { exec(body); }

int Emitter::elements_per_entry(MemType m) const {
  switch (m) {
    case MemType::Inp: return c_.batch * c_.block_in;
    case MemType::Wgt: return c_.block_out * c_.block_in;
    case MemType::Acc:
    case MemType::Out: return c_.batch * c_.block_out;
    default: return 1;
  }
}

Emitter::EntryState& Emitter::entry_state(MemType mem, uint32_t entry) {
  std::vector<EntryState>& v = hazards_[int(mem)];
  if (entry >= v.size()) v.resize(size_t(entry) + 1);
  return v[entry];
}

void Emitter::sync_before(Module m, const Access& a) {
  for (Module from : {Module::Load, Module::Compute, Module::Store}) {
    if (std::abs(int(from) - int(m)) != 1) continue;  // only neighbours share scratchpads
    int64_t need = -1;
    for (auto& [mem, e] : a.reads) {
      EntryState& st = entry_state(mem, e);
      if (st.last_write >= 0 && st.writer == from) need = std::max(need, st.last_write);
    }
    for (auto& [mem, e] : a.writes) {
      EntryState& st = entry_state(mem, e);
      if (st.last_write >= 0 && st.writer == from) need = std::max(need, st.last_write);
      need = std::max(need, st.last_read[int(from)]);
    }
    if (need > synced_[int(from)][int(m)]) {
      drv_.add_push(size_t(need), m);
      drv_.dep_pop(from, m);
      synced_[int(from)][int(m)] = need;
    }
  }
}

void Emitter::record_after(Module m, const Access& a) {
  int64_t index = int64_t(drv_.stream().size()) - 1;
  for (auto& [mem, e] : a.reads) entry_state(mem, e).last_read[int(m)] = index;
  for (auto& [mem, e] : a.writes) {
    EntryState& st = entry_state(mem, e);
    st.last_write = index;
    st.writer = m;
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
      case ExprKind::Add: return x + y;
      case ExprKind::Sub: return x - y;
      case ExprKind::Mul: return x * y;
      case ExprKind::Div: return fdiv(x, y);
      case ExprKind::Mod: return x - fdiv(x, y) * y;
      case ExprKind::Min: return std::min(x, y);
      case ExprKind::Max: return std::max(x, y);
      case ExprKind::EQ: return x == y;
      case ExprKind::NE: return x != y;
      case ExprKind::LT: return x < y;
      case ExprKind::LE: return x <= y;
      case ExprKind::GT: return x > y;
      case ExprKind::GE: return x >= y;
      case ExprKind::And: return x && y;
      case ExprKind::Or: return x || y;
      default: break;
    }
  }
  fail("cannot evaluate '" + to_string(e) + "' on the host");
}

Emitter::Operand Emitter::operand(const Expr& addr) const {
  auto* call = addr.as<CallNode>();
  auto* ld = call && call->name == "address_of" ? call->args[0].as<LoadNode>() : nullptr;
  if (!ld) fail("expected address_of(buffer[index]), got '" + to_string(addr) + "'");
  Operand o;
  o.buffer = ld->buffer.get();
  o.element = eval(ld->index);
  if (auto it = sram_.find(o.buffer); it != sram_.end()) {
    if (it->second.dead) fail("buffer '" + ld->buffer->name + "' is used after a later stage reused its scratchpad entries");
    o.sram = &it->second;
  } else if (auto d = dram_.find(o.buffer); d != dram_.end()) {
    o.dram_addr = d->second.addr + uint64_t(o.element) * uint64_t(ld->buffer->dtype.bytes());
  } else {
    fail("buffer '" + ld->buffer->name + "' is neither an argument nor an accelerator scratchpad allocation");
  }
  return o;
}

uint32_t Emitter::entry_of(const Operand& o, const char* what) const {
  if (!o.sram) fail(std::string(what) + " operand '" + o.buffer->name + "' must be in an accelerator scope");
  int e = elements_per_entry(o.sram->mem);
  if (o.element % e) fail(std::string(what) + " operand '" + o.buffer->name + "' starts at element " + std::to_string(o.element) +
                          ", not at an entry boundary (" + std::to_string(e) + " elements)");
  return o.sram->base + uint32_t(o.element / e);
}

void Emitter::exec(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::Seq:
      for (auto& c : s.as<SeqNode>()->seq) exec(c);
      return;
    case StmtKind::For: return exec_for(s.as<ForNode>());
    case StmtKind::Allocate: return exec_allocate(s.as<AllocateNode>());
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
    default: break;
  }
  fail("unsupported statement (host code other than loops over accelerator operations):\n" + to_string(s));
}

void Emitter::exec_for(const ForNode* op) {
  if (op->for_kind == ForKind::Parallel || op->for_kind == ForKind::ThreadBinding || op->for_kind == ForKind::Vectorized)
    fail(std::string("loop '") + op->var.name() + "' is " + ir::to_string(op->for_kind) + "; accelerator host loops must be serial, unrolled or virtual threads");
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
  gather(s, run, allocated);
  flush_run(run);
  for (auto it = allocated.rbegin(); it != allocated.rend(); ++it) release_context_buffers(*it);
}

void Emitter::flush_run(std::vector<Stmt>& run) {
  for (int64_t v = 0; v < vthread_extent_ && !run.empty(); ++v) {
    env_[vthread_var_] = v;
    for (auto& [b, r] : context_sram_[size_t(v)]) sram_[b] = r;
    for (auto& leaf : run) exec(leaf);
  }
  run.clear();
}

void Emitter::gather(const Stmt& s, std::vector<Stmt>& run, std::vector<const AllocateNode*>& allocated) {
  if (auto* q = s.as<SeqNode>()) {
    for (auto& c : q->seq) gather(c, run, allocated);
  } else if (lockstep_leaf(s)) {
    run.push_back(s);
  } else if (auto* f = s.as<ForNode>()) {
    flush_run(run);
    int64_t mn = eval(f->min), ext = eval(f->extent);
    for (int64_t i = mn; i < mn + ext; ++i) {
      env_[f->var.get()] = i;
      lockstep(f->body);
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
  if (scope == scope::kAccInput) p = {MemType::Inp, 0, 0, c_.inp_depth()};
  else if (scope == scope::kAccWeight) p = {MemType::Wgt, 1, 0, c_.wgt_depth()};
  else if (scope == scope::kAccAccum) p = {MemType::Acc, 2, 0, c_.acc_depth()};
  else fail("allocation '" + op->buffer->name + "' in scope '" + scope + "': only acc.inp, acc.wgt and acc.acc live on the accelerator");
  int64_t size = constant_size(op->buffer), e = elements_per_entry(p.mem);
  if (size < 0 || size % e)
    fail("allocation '" + op->buffer->name + "' of " + std::to_string(size) + " elements is not a whole number of " + std::to_string(e) +
         "-element entries");
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
  const BufferNode* src = nullptr;
  post_order_visit(st->value, [&](const Expr& x) {
    if (auto* l = x.as<LoadNode>(); l && !src && structural_equal(l->index, st->index) && sram_.count(l->buffer.get())) src = l->buffer.get();
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
      fail("scratchpad " + std::string(accel::to_string(mem)) + " overflows allocating '" + op->buffer->name + "' (" + std::to_string(entries) +
           " entries at " + std::to_string(top_[slot]) + ", depth " + std::to_string(depth) + "); use smaller tiles");
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
  if (call->name == "dma_copy") return dma_copy(call);
  if (call->name.rfind("accel.gemm.", 0) == 0) return gemm(call, {}, {});
  fail("unsupported call '" + call->name + "'");
}

void Emitter::dma_copy(const CallNode* call) {
  Operand dst = operand(call->args[0]), src = operand(call->args[1]);
  if (eval(call->args[2]) != 0) fail("DMA padding with a non-zero value");
  int64_t ndim = eval(call->args[3]);
  std::vector<Dim> dims;
  for (int64_t d = 0; d < ndim; ++d) {
    const auto* a = &call->args[4 + 5 * d];
    dims.push_back({eval(a[0]), eval(a[1]), eval(a[2]), eval(a[3]), eval(a[4])});
  }
  if (dst.sram && !src.sram) return load(dst, src, dims);
  if (!dst.sram && src.sram && src.sram->mem == MemType::Acc) return store(dst, src, dims);
  fail("dma_copy from '" + src.buffer->name + "' to '" + dst.buffer->name + "': only device memory -> acc.inp/acc.wgt/acc.acc and acc.acc -> device memory are supported");
}

namespace {
// Splits copy dimensions into the innermost ones that make up exactly one entry (contiguous on
// both sides, unpadded) and the outer ones (extent-1 dimensions dropped). Returns false if the
// innermost dimensions do not form whole entries.
bool split_entry(std::vector<std::array<int64_t, 5>>& outer, const std::vector<std::array<int64_t, 5>>& dims, int64_t entry) {
  int64_t prod = 1;
  size_t k = dims.size();
  while (prod < entry && k > 0) {
    const auto& d = dims[--k];
    if (d[1] != prod || d[2] != prod || d[3] != 0 || d[4] != 0) return false;
    prod *= d[0];
  }
  if (prod != entry) return false;
  for (size_t i = 0; i < k; ++i)
    if (dims[i][0] != 1) outer.push_back(dims[i]);
  return true;
}
}  // namespace

// Splits a copy into the entries made by its innermost dimensions and (at most) two outer
// dimensions x (inner) and y; `what` names the copy in errors.
Emitter::TwoD Emitter::two_d(const std::vector<Dim>& dims, int64_t e, const std::string& what) const {
  std::vector<std::array<int64_t, 5>> raw, outer;
  for (auto& d : dims) raw.push_back({d.extent, d.dst_stride, d.src_stride, d.before, d.after});
  if (!split_entry(outer, raw, e)) fail(what + ": the innermost dimensions do not form whole " + std::to_string(e) + "-element entries");
  // Drop unit dimensions, and merge a dimension into the one inside it when both memories lay
  // them out contiguously and neither pads (e.g. a 3x3 kernel window is one row of 9 entries).
  std::vector<std::array<int64_t, 5>> merged;
  for (auto& d : outer) {
    if (d[0] == 1 && d[3] == 0 && d[4] == 0) continue;
    merged.push_back(d);
  }
  for (size_t i = merged.size(); i-- > 1;) {
    auto &a = merged[i - 1], &b = merged[i];
    if (a[3] || a[4] || b[3] || b[4] || a[1] != b[0] * b[1] || a[2] != b[0] * b[2]) continue;
    b[0] *= a[0];
    merged.erase(merged.begin() + int64_t(i - 1));
  }
  outer = merged;
  TwoD t{{1, e, e, 0, 0}, {1, e, e, 0, 0}, outer.size() >= 2, {}};
  while (outer.size() > 2) {  // further dimensions become separate DMA instructions
    if (outer[0][3] || outer[0][4]) fail(what + ": padding in a dimension beyond the two a DMA instruction has");
    t.outer.push_back(outer[0]);
    outer.erase(outer.begin());
  }
  if (outer.size() == 1 && (outer[0][1] != e || outer[0][2] != e) && !outer[0][3] && !outer[0][4]) {
    t.has_y = true;  // entries strided in one memory: rows of one entry each
    t.y = outer[0];
  } else if (!outer.empty()) {
    t.x = outer.back();
    if (t.has_y) t.y = outer[0];
  }
  if (!t.has_y) t.y = {1, t.x[0] * t.x[1], t.x[0] * t.x[2], 0, 0};  // one row
  return t;
}

void Emitter::for_each_outer(const TwoD& t, const std::function<void(int64_t, int64_t)>& f) const {
  std::function<void(size_t, int64_t, int64_t)> rec = [&](size_t d, int64_t dst, int64_t src) {
    if (d == t.outer.size()) return f(dst, src);
    for (int64_t i = 0; i < t.outer[d][0]; ++i) rec(d + 1, dst + i * t.outer[d][1], src + i * t.outer[d][2]);
  };
  rec(0, 0, 0);
}

void Emitter::load(const Operand& dst, const Operand& src, std::vector<Dim> dims) {
  MemType mem = dst.sram->mem;
  int64_t e = elements_per_entry(mem);
  TwoD t = two_d(dims, e, "DMA into '" + dst.buffer->name + "'");
  auto &x = t.x, &y = t.y;
  if (x[1] != e || x[2] != e || y[1] != x[0] * e || y[2] % e)
    fail("DMA into '" + dst.buffer->name + "': rows must be contiguous entries in both memories");
  int64_t x_size = x[0] - x[3] - x[4], y_size = y[0] - y[3] - y[4];
  if (x_size <= 0 || y_size <= 0) fail("DMA into '" + dst.buffer->name + "': a tile made only of padding");
  Module m = mem == MemType::Acc ? Module::Compute : Module::Load;
  const int64_t elem_bytes = (mem == MemType::Acc ? c_.acc_block_bytes() : mem == MemType::Wgt ? c_.wgt_block_bytes() : c_.inp_block_bytes()) / e;
  for_each_outer(t, [&](int64_t dst_off, int64_t src_off) {
    if (dst_off % e) fail("DMA into '" + dst.buffer->name + "': an outer dimension does not step by whole entries");
    uint32_t base = entry_of(dst, "DMA destination") + uint32_t(dst_off / e);
    Access a;
    for (uint32_t k = 0; k < uint32_t(y[0] * x[0]); ++k) a.writes.push_back({mem, base + k});
    sync_before(m, a);
    drv_.load_2d(mem, base, src.dram_addr + uint64_t(src_off * elem_bytes), uint32_t(y_size), uint32_t(x_size),
                 uint32_t(t.has_y ? y[2] / e : x_size), uint32_t(y[3]), uint32_t(y[4]), uint32_t(x[3]), uint32_t(x[4]));
    record_after(m, a);
  });
}

void Emitter::store(const Operand& dst, const Operand& src, std::vector<Dim> dims) {
  int64_t e = elements_per_entry(MemType::Out);
  TwoD t = two_d(dims, e, "DMA from '" + src.buffer->name + "'");
  auto &x = t.x, &y = t.y;
  if (x[1] != e || x[2] != e || y[2] != x[0] * e || y[1] % e)
    fail("DMA from '" + src.buffer->name + "': rows must be contiguous entries in both memories");
  const int64_t elem_bytes = c_.out_block_bytes() / e;
  for_each_outer(t, [&](int64_t dst_off, int64_t src_off) {  // dst: DRAM, src: the scratchpad
    if (src_off % e) fail("DMA from '" + src.buffer->name + "': an outer dimension does not step by whole entries");
    uint32_t base = entry_of(src, "DMA source") + uint32_t(src_off / e);
    Access a;
    for (uint32_t k = 0; k < uint32_t(y[0] * x[0]); ++k) a.reads.push_back({MemType::Out, base + k});
    sync_before(Module::Store, a);
    drv_.store_2d(base, dst.dram_addr + uint64_t(dst_off * elem_bytes), uint32_t(y[0]), uint32_t(x[0]), uint32_t(t.has_y ? y[1] / e : x[0]));
    record_after(Module::Store, a);
  });
}

void Emitter::gemm(const CallNode* call, const std::vector<const ForNode*>& unrolled, const std::vector<const ForNode*>& loops) {
  bool reset = call->name == "accel.gemm.reset";
  bool full = call->name == "accel.gemm.full";
  if (!reset && !full && call->name != "accel.gemm.update") fail("unknown GEMM intrinsic part '" + call->name + "'");
  // Operand entries at every loop value of interest: base, and one step of each loop.
  auto entries = [&]() {
    std::array<uint32_t, 3> r{0, 0, 0};
    if (reset) {
      r[0] = entry_of(operand(call->args[0]), "GEMM accumulator");
    } else {
      r[1] = entry_of(operand(call->args[0]), "GEMM input");
      r[2] = entry_of(operand(call->args[1]), "GEMM weight");
      r[0] = entry_of(operand(call->args[2]), "GEMM accumulator");
    }
    return r;
  };
  UopKernelBuilder k, zero;  // zero: the reset a "full" GEMM (whole reduction in one call) starts with
  std::vector<std::array<int64_t, 3>> steps;
  for (auto* l : unrolled) env_[l->var.get()] = 0;
  for (auto* l : loops) env_[l->var.get()] = 0;
  auto base = entries();
  for (auto* l : loops) {
    env_[l->var.get()] = 1;
    auto next = entries();
    env_[l->var.get()] = 0;
    steps.push_back({int64_t(next[0]) - base[0], int64_t(next[1]) - base[1], int64_t(next[2]) - base[2]});
  }
  for (size_t i = 0; i < loops.size(); ++i) {
    k.loop(uint32_t(eval(loops[i]->extent)), uint32_t(steps[i][0]), uint32_t(steps[i][1]), uint32_t(steps[i][2]));
    zero.loop(uint32_t(eval(loops[i]->extent)), uint32_t(steps[i][0]), 0, 0);
  }
  // One micro-op per iteration of the unrolled loops (they run innermost: GEMM updates commute).
  for_each_point(unrolled, [&] {
    auto b = entries();
    k.push(b[0], b[1], b[2]);
    zero.push(b[0], 0, 0);
  });
  for (auto* l : loops) env_.erase(l->var.get());
  for (auto* l : unrolled) env_.erase(l->var.get());
  accel::UopKernel kernel = k.build();
  Access a = kernel_access(kernel, !reset);
  sync_before(Module::Compute, a);
  if (full) drv_.gemm(zero.build(), true);
  drv_.gemm(kernel, reset);
  record_after(Module::Compute, a);
}

// Calls f with the loop variables of `loops` set to every point of their iteration space.
void Emitter::for_each_point(const std::vector<const ForNode*>& loops, const std::function<void()>& f) {
  std::function<void(size_t)> rec = [&](size_t d) {
    if (d == loops.size()) return f();
    for (int64_t i = 0; i < *as_const_int(loops[d]->extent); ++i) {
      env_[loops[d]->var.get()] = i;
      rec(d + 1);
    }
    env_[loops[d]->var.get()] = 0;
  };
  rec(0);
}

// The GEMM call at the end of a perfect nest of at most kMaxGemmNest loops starting at `f`.
const CallNode* Emitter::gemm_nest_call(const ForNode* f) {
  Stmt body = f->body;
  for (int depth = 1; depth < kMaxGemmNest; ++depth) {
    auto* inner = body.as<ForNode>();
    if (!inner) break;
    body = inner->body;
  }
  auto* ev = body.as<EvaluateNode>();
  auto* call = ev ? ev->value.as<CallNode>() : nullptr;
  return call && call->name.rfind("accel.gemm.", 0) == 0 ? call : nullptr;
}

// The scratchpad entries a GEMM/ALU kernel touches: it writes the out entries of its
// destinations (every result is also narrowed into the out buffer) and, for GEMM updates, reads
// input and weight entries.
Emitter::Access Emitter::kernel_access(const accel::UopKernel& k, bool gemm_reads) const {
  Access a;
  accel::UopKernel::Loop outer{1, 0, 0, 0}, inner{1, 0, 0, 0};
  if (k.loops.size() == 2) outer = k.loops[0], inner = k.loops[1];
  if (k.loops.size() == 1) inner = k.loops[0];
  for (uint32_t o = 0; o < outer.extent; ++o)
    for (uint32_t n = 0; n < inner.extent; ++n)
      for (auto& u : k.uops) {
        a.writes.push_back({MemType::Out, u.dst + o * outer.dst_factor + n * inner.dst_factor});
        if (!gemm_reads) continue;
        a.reads.push_back({MemType::Inp, u.src + o * outer.src_factor + n * inner.src_factor});
        a.reads.push_back({MemType::Wgt, u.wgt + o * outer.wgt_factor + n * inner.wgt_factor});
      }
  return a;
}

// A perfect nest of loops around a GEMM call becomes one instruction: the innermost one or two
// loops become the micro-op loop when the operand entries move by a constant, non-negative step
// per iteration; loops outside them (the reduction window of a convolution, say) are unrolled into
// the micro-op kernel, up to kMaxUnrolledUops micro-ops.
bool Emitter::try_fold_gemm(const ForNode* op) {
  const CallNode* call = gemm_nest_call(op);
  if (!call) return false;
  std::vector<const ForNode*> chain;
  for (const ForNode* f = op; f; f = f->body.as<ForNode>()) chain.push_back(f);
  int64_t unrolled_points = 1;
  for (auto* l : chain) {
    if (!as_const_int(l->extent) || !is_zero(l->min) || *as_const_int(l->extent) >= (1 << 14)) return false;
  }
  size_t n_inner = std::min<size_t>(2, chain.size());
  std::vector<const ForNode*> unrolled(chain.begin(), chain.end() - n_inner), loops(chain.end() - n_inner, chain.end());
  for (auto* l : unrolled) unrolled_points *= *as_const_int(l->extent);
  if (unrolled_points > kMaxUnrolledUops) return false;
  bool ok = true;
  auto operands = [&]() {
    std::vector<int64_t> v;
    for (auto& a : call->args) {
      Operand o = operand(a);
      if (!o.sram) ok = false;
      v.push_back(o.sram ? o.element : 0);
    }
    return v;
  };
  // Affine check at every unrolled point: the step measured at 0 must hold at the last iteration.
  for (auto* l : loops) env_[l->var.get()] = 0;
  for_each_point(unrolled, [&] {
    auto base = operands();
    std::vector<std::vector<int64_t>> step;
    for (auto* l : loops) {
      env_[l->var.get()] = 1;
      auto n = operands();
      env_[l->var.get()] = 0;
      std::vector<int64_t> d;
      for (size_t i = 0; i < n.size(); ++i) {
        d.push_back(n[i] - base[i]);
        if (d.back() < 0) ok = false;
      }
      step.push_back(d);
    }
    for (auto* l : loops) env_[l->var.get()] = *as_const_int(l->extent) - 1;
    auto last = operands();
    for (size_t i = 0; i < last.size() && ok; ++i) {
      int64_t want = base[i];
      for (size_t j = 0; j < loops.size(); ++j) want += step[j][i] * (*as_const_int(loops[j]->extent) - 1);
      ok = want == last[i];
    }
    for (auto* l : loops) env_[l->var.get()] = 0;
  });
  for (auto* l : loops) env_.erase(l->var.get());
  for (auto* l : unrolled) env_.erase(l->var.get());
  if (!ok) return false;
  gemm(call, unrolled, loops);
  return true;
}

void Emitter::alu_nest(const Stmt& nest) {
  std::vector<const ForNode*> loops;
  Stmt body = nest;
  while (auto* f = body.as<ForNode>()) {
    loops.push_back(f);
    body = f->body;
  }
  auto* st = body.as<StoreNode>();
  if (!st) fail("pragma alu: the nest must end in one store:\n" + to_string(nest));
  auto dst_it = sram_.find(st->buffer.get());
  if (dst_it == sram_.end() || dst_it->second.mem != MemType::Acc) fail("pragma alu: '" + st->buffer->name + "' is not in the accumulator scope");
  // Classify the value: op(load, immediate) or op(load, load).
  const Expr& v = st->value;
  const LoadNode* lhs = nullptr;
  const LoadNode* rhs = nullptr;
  accel::AluOp aop = accel::AluOp::Add;
  bool use_imm = false;
  int64_t imm = 0;
  if (auto* b = as_binary(v)) {
    lhs = b->a.as<LoadNode>();
    rhs = b->b.as<LoadNode>();
    auto* c = as_const_int(b->b);
    switch (v.kind()) {
      case ExprKind::Add: aop = accel::AluOp::Add; break;
      case ExprKind::Sub:
        aop = accel::AluOp::Add;
        if (!c) fail("pragma alu: subtraction of two tensors");
        imm = -*c;
        use_imm = true;
        break;
      case ExprKind::Mul: aop = accel::AluOp::Mul; break;
      case ExprKind::Min: aop = accel::AluOp::Min; break;
      case ExprKind::Max: aop = accel::AluOp::Max; break;
      case ExprKind::Div:
        if (!c || *c <= 0 || (*c & (*c - 1))) fail("pragma alu: division by something other than a power of two in '" + to_string(v) + "'");
        aop = accel::AluOp::Shr;
        imm = __builtin_ctzll(uint64_t(*c));
        use_imm = true;
        break;
      default: fail("pragma alu: unsupported operation in '" + to_string(v) + "'");
    }
    if (c && v.kind() != ExprKind::Div && v.kind() != ExprKind::Sub) {
      use_imm = true;
      imm = *c;
    }
  } else if (auto* l = v.as<LoadNode>()) {
    lhs = l;  // a plain copy: dst = src
  }
  if (!lhs || (!use_imm && !rhs && as_binary(v))) fail("pragma alu: expected op(tensor, constant) or op(tensor, tensor), got '" + to_string(v) + "'");
  if (use_imm && (imm < -32768 || imm > 32767)) fail("pragma alu: immediate " + std::to_string(imm) + " does not fit 16 bits");
  int64_t e = elements_per_entry(MemType::Acc);
  // Element loops inside one entry, from the innermost outwards.
  int64_t prod = 1;
  size_t k = loops.size();
  auto step_of = [&](const Expr& index, const ForNode* l) {
    for (auto* o : loops) env_[o->var.get()] = 0;
    int64_t a = eval(index);
    env_[l->var.get()] = 1;
    int64_t b = eval(index);
    for (auto* o : loops) env_.erase(o->var.get());
    return b - a;
  };
  while (prod < e && k > 0) {
    const ForNode* l = loops[--k];
    if (step_of(st->index, l) != prod || step_of(lhs->index, l) != prod || (rhs && step_of(rhs->index, l) != prod))
      fail("pragma alu: the innermost loops must walk whole accumulator entries contiguously");
    prod *= eval(l->extent);
  }
  if (prod != e) fail("pragma alu: the innermost loops cover " + std::to_string(prod) + " elements, an entry has " + std::to_string(e));
  // Loops outside the entry, as (extent, destination / left / right operand steps in entries);
  // a loop merges into the one inside it when every operand walks both contiguously.
  struct OuterLoop {
    int64_t extent, dst, lhs, rhs;
  };
  std::vector<OuterLoop> outer;
  for (size_t i = 0; i < k; ++i)
    if (eval(loops[i]->extent) != 1)
      outer.push_back({eval(loops[i]->extent), step_of(st->index, loops[i]) / e, step_of(lhs->index, loops[i]) / e,
                       rhs ? step_of(rhs->index, loops[i]) / e : 0});
  for (size_t i = outer.size(); i-- > 1;) {
    auto &a = outer[i - 1], &b = outer[i];
    if (a.dst != b.extent * b.dst || a.lhs != b.extent * b.lhs || a.rhs != b.extent * b.rhs) continue;
    b.extent *= a.extent;
    outer.erase(outer.begin() + int64_t(i - 1));
  }
  if (outer.size() > 2) fail("pragma alu: more than two loops outside an entry");
  auto entry_at = [&](const BufferNode* buf, const Expr& index) -> int64_t {
    auto it = sram_.find(buf);
    if (it == sram_.end() || it->second.mem != MemType::Acc) fail("pragma alu: '" + buf->name + "' is not in the accumulator scope");
    if (it->second.dead) fail("pragma alu: '" + buf->name + "' was reused in place");
    for (auto* o : loops) env_[o->var.get()] = 0;
    int64_t el = eval(index);
    for (auto* o : loops) env_.erase(o->var.get());
    return it->second.base + el / e;
  };
  int64_t dst0 = entry_at(st->buffer.get(), st->index);
  int64_t lhs0 = entry_at(lhs->buffer.get(), lhs->index);
  int64_t rhs0 = rhs ? entry_at(rhs->buffer.get(), rhs->index) : 0;
  UopKernelBuilder kb;
  for (auto& l : outer) kb.loop(uint32_t(l.extent), uint32_t(l.dst), uint32_t(rhs ? l.rhs : l.lhs));
  // Every ALU instruction below writes the destination entries' out copies.
  Access a;
  {
    UopKernelBuilder shape;
    for (auto& l : outer) shape.loop(uint32_t(l.extent), uint32_t(l.dst), 0);
    a = kernel_access(shape.push(uint32_t(dst0), 0).build(), false);
  }
  sync_before(Module::Compute, a);
  // The ALU updates its destination: bring the left operand there first unless it already is.
  if (dst0 != lhs0) {  // dst = dst * 0 + lhs
    UopKernelBuilder zero, copy;
    for (auto& l : outer) {
      zero.loop(uint32_t(l.extent), uint32_t(l.dst), uint32_t(l.dst));
      copy.loop(uint32_t(l.extent), uint32_t(l.dst), uint32_t(l.lhs));
    }
    drv_.alu(zero.push(uint32_t(dst0), uint32_t(dst0)).build(), accel::AluOp::Mul, true, 0);
    drv_.alu(copy.push(uint32_t(dst0), uint32_t(lhs0)).build(), accel::AluOp::Add, false);
  }
  if (as_binary(v)) drv_.alu(kb.push(uint32_t(dst0), uint32_t(use_imm ? dst0 : rhs0)).build(), aop, use_imm, int32_t(imm));
  record_after(Module::Compute, a);
}

}  // namespace loom::codegen::accel_backend
