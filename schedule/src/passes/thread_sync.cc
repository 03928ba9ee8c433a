// Pass (GPU lowering only): block barriers from shared-memory read/write analysis, in the spirit of
// TVM's ThreadSync. Barriers go only where every thread of the block arrives (ir/gpu.h: inside a
// kernel, not under a guarded thread binding, nor under a condition or loop bound that uses a
// thread index), between the statements of a sequence:
//   before a statement that reads a shared buffer written since the last barrier (RAW), or writes one
//   read or written since then (WAR, WAW);
// and at the end of a loop's body that writes a shared buffer it also accesses, so the next
// iteration's writes wait for this one's reads. A statement is summarised by every shared access
// inside it, which may place a barrier more than needed but never one too few. A conflict inside
// divergent code, where no barrier can go, is a LoweringError naming the buffer.
#include <algorithm>
#include <array>
#include <set>

#include "loom/ir/functor.h"
#include "loom/ir/gpu.h"
#include "passes.h"

namespace loom::schedule::passes {

using namespace loom::ir;

namespace {

struct Accesses {
  std::set<const BufferNode*> reads, writes;
  bool empty() const { return reads.empty() && writes.empty(); }
  void add(const Accesses& o) {
    reads.insert(o.reads.begin(), o.reads.end());
    writes.insert(o.writes.begin(), o.writes.end());
  }
};

bool intersects(const std::set<const BufferNode*>& a, const std::set<const BufferNode*>& b) {
  for (auto* x : a)
    if (b.count(x)) return true;
  return false;
}

Accesses shared_accesses(const Stmt& s) {
  struct V : IRVisitor {
    Accesses acc;
    void visit_load(const LoadNode* op) override {
      if (op->buffer->scope == scope::kShared) acc.reads.insert(op->buffer.get());
      IRVisitor::visit_load(op);
    }
    void visit_store(const StoreNode* op) override {
      if (op->buffer->scope == scope::kShared) acc.writes.insert(op->buffer.get());
      IRVisitor::visit_store(op);
    }
  } v;
  v.visit(s);
  return v.acc;
}

// Whether `next` must wait for what ran since the last barrier.
bool conflicts(const Accesses& pending, const Accesses& next) {
  return intersects(next.reads, pending.writes) || intersects(next.writes, pending.writes) ||
         intersects(next.writes, pending.reads);
}

// Largest extent bound to each threadIdx dimension in a kernel: the block's shape.
std::array<int64_t, 3> block_shape(const Stmt& kernel) {
  std::array<int64_t, 3> dims{1, 1, 1};
  struct V : IRVisitor {
    std::array<int64_t, 3>* d;
    void visit_for(const ForNode* f) override {
      if (f->for_kind == ForKind::ThreadBinding)
        if (auto t = parse_thread_tag(f->thread_tag); t && !t->block)
          if (auto* e = as_const_int(f->extent)) (*d)[t->dim] = std::max((*d)[t->dim], *e);
      IRVisitor::visit_for(f);
    }
  } v;
  v.d = &dims;
  v.visit(kernel);
  return dims;
}

class ThreadSync : public IRMutator {
 protected:
  Stmt mutate_for(const Stmt& s, const ForNode* op) override {
    bool bound = op->for_kind == ForKind::ThreadBinding;
    auto tag = bound ? parse_thread_tag(op->thread_tag) : std::nullopt;
    bool kernel_root = bound && kernel_depth_ == 0;
    if (kernel_root) block_ = block_shape(s);
    bool diverges = uses_thread_var(op->min) || uses_thread_var(op->extent);
    if (tag && !tag->block) {
      auto* e = as_const_int(op->extent);
      diverges = diverges || !e || *e < block_[tag->dim];
      thread_vars_.push_back(op->var.get());
    }
    if (bound) ++kernel_depth_;
    if (diverges) ++divergent_;
    Stmt body = mutate(op->body);
    if (diverges) --divergent_;
    if (bound) --kernel_depth_;
    if (tag && !tag->block) thread_vars_.pop_back();
    if (kernel_depth_ > 0 && !bound) {
      Accesses a = shared_accesses(body);
      if (!ends_with_sync(body) && intersects(a.writes, a.reads)) {
        require_convergent(a.writes);
        body = seq({body, sync_threads()});
      }
    }
    return body.same_as(op->body) ? s : for_loop(op->var, op->min, op->extent, op->for_kind, body, op->thread_tag);
  }
  Stmt mutate_if(const Stmt& s, const IfThenElseNode* op) override {
    bool diverges = uses_thread_var(op->cond);
    if (diverges) ++divergent_;
    Stmt r = IRMutator::mutate_if(s, op);
    if (diverges) --divergent_;
    return r;
  }
  Stmt mutate_seq(const Stmt& s, const SeqNode* op) override {
    if (kernel_depth_ == 0) return IRMutator::mutate_seq(s, op);
    Accesses pending;
    return place(s, pending);
  }

 private:
  // Barriers in a sequence, which continues through the allocations and attributes between its
  // statements (a cache stage's allocation wraps the statements after it).
  Stmt place(const Stmt& s, Accesses& pending) {
    if (auto* a = s.as<AllocateNode>()) {
      Stmt b = place(a->body, pending);
      return b.same_as(a->body) ? s : allocate(a->buffer, b);
    }
    if (auto* at = s.as<AttrNode>()) {
      Stmt b = place(at->body, pending);
      return b.same_as(at->body) ? s : attr(at->key, at->value, b);
    }
    if (auto* q = s.as<SeqNode>()) {
      std::vector<Stmt> out;
      for (auto& c : q->seq) out.push_back(place(c, pending));
      return seq(std::move(out));
    }
    if (is_sync_threads(s)) {
      pending = {};
      return s;
    }
    Stmt m = mutate(s);  // loops and conditions: their own sequences inside
    Accesses a = shared_accesses(m);
    if (!a.empty() && conflicts(pending, a)) {
      require_convergent(a.writes.empty() ? a.reads : a.writes);
      pending = a;
      return seq({sync_threads(), m});
    }
    pending.add(a);
    return m;
  }
  static bool ends_with_sync(const Stmt& s) {
    if (auto* a = s.as<AllocateNode>()) return ends_with_sync(a->body);
    if (auto* at = s.as<AttrNode>()) return ends_with_sync(at->body);
    if (auto* q = s.as<SeqNode>()) return !q->seq.empty() && ends_with_sync(q->seq.back());
    return is_sync_threads(s);
  }
  bool uses_thread_var(const Expr& e) const {
    for (auto* v : thread_vars_)
      if (uses_var(e, v)) return true;
    return false;
  }
  void require_convergent(const std::set<const BufferNode*>& bufs) const {
    if (divergent_ == 0) return;
    std::string names;
    for (auto* b : bufs) names += (names.empty() ? "'" : ", '") + b->name + "'";
    LOOM_THROW(LoweringError, "shared buffer ", names,
               " needs a barrier where the threads of a block diverge (under a guarded thread binding or a "
               "condition on a thread index): compute the stages that share it at a loop outside the divergence");
  }
  int kernel_depth_ = 0, divergent_ = 0;
  std::array<int64_t, 3> block_{1, 1, 1};
  std::vector<const VarNode*> thread_vars_;
};

}  // namespace

Stmt thread_sync(const Stmt& s) {
  ThreadSync t;
  return t.mutate(s);
}

}  // namespace loom::schedule::passes
