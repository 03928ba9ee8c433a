// Pass (GPU lowering only): software prefetching of shared-memory tiles through registers, for a
// loop marked pragma(ko, "prefetch_shared") whose body first fills shared buffers from global
// memory (cooperative loads) and then computes from them. The loads of iteration ko + 1 are issued
// into per-thread registers before iteration ko computes, and written to shared memory after it,
// so the global memory latency hides behind the arithmetic:
//
//   prefetch(min) -> regs; commit regs -> shared
//   for ko: if (ko + 1 < end) prefetch(ko + 1) -> regs
//           compute (reads shared)
//           if (ko + 1 < end) commit regs -> shared
//
// thread_sync then puts the barriers (before the loop, between compute and commit, at the end of
// the body). The shared buffers are allocated once around the loop. The loads' serial loops must
// be unrolled (each store is one register slot per thread); anything else is a LoweringError.
#include <map>

#include "loom/ir/functor.h"
#include "loom/ir/gpu.h"
#include "loom/ir/printer.h"
#include "loom/ir/simplify.h"
#include "passes.h"

namespace loom::schedule::passes {

using namespace loom::ir;

namespace {

constexpr const char* kPragma = "pragma_prefetch_shared";

// Whether a statement writes only shared buffers in `bufs` and reads none of them.
bool is_shared_fill(const Stmt& s, const std::vector<Buffer>& bufs) {
  auto in = [&](const Buffer& b) {
    for (auto& x : bufs)
      if (x.get() == b.get()) return true;
    return false;
  };
  bool writes = false, ok = true;
  struct V : IRVisitor {
    std::function<void(const StoreNode*)> on_store;
    std::function<void(const LoadNode*)> on_load;
    void visit_store(const StoreNode* op) override {
      on_store(op);
      IRVisitor::visit_store(op);
    }
    void visit_load(const LoadNode* op) override {
      on_load(op);
      IRVisitor::visit_load(op);
    }
  } v;
  v.on_store = [&](const StoreNode* op) {
    if (in(op->buffer))
      writes = true;
    else
      ok = false;
  };
  v.on_load = [&](const LoadNode* op) {
    if (op->buffer->scope == scope::kShared) ok = false;
  };
  v.visit(s);
  return ok && writes;
}

// Stores of a fill: each gets `lanes` consecutive slots of the register buffer, in visiting order.
class SlotAssigner : public IRVisitor {
 public:
  std::map<const StoreNode*, int64_t> slot;
  int64_t size = 0;
  DataType dtype;
  std::string error;

 protected:
  void visit_for(const ForNode* op) override {
    if (op->for_kind != ForKind::ThreadBinding) ++serial_;
    IRVisitor::visit_for(op);
    if (op->for_kind != ForKind::ThreadBinding) --serial_;
  }
  void visit_store(const StoreNode* op) override {
    if (serial_ > 0) error = "the store to '" + op->buffer->name + "' is inside a serial loop (unroll it)";
    if (size > 0 && op->buffer->dtype != dtype) error = "the shared buffers have different element types";
    dtype = op->buffer->dtype;
    slot[op] = size;
    size += op->value.type().lanes();
  }

 private:
  int serial_ = 0;
};

Expr slot_index(int64_t slot, int lanes) {
  return lanes == 1 ? Expr(static_cast<int>(slot)) : ramp(Expr(static_cast<int>(slot)), Expr(1), lanes);
}

// The fill with every store redirected: into the registers (prefetch) or from them (commit).
class Redirect : public IRMutator {
 public:
  Redirect(const SlotAssigner& slots, const Buffer& regs, bool prefetch)
      : slots_(slots), regs_(regs), prefetch_(prefetch) {}

 protected:
  Stmt mutate_store(const Stmt& s, const StoreNode* op) override {
    int lanes = op->value.type().lanes();
    Expr idx = slot_index(slots_.slot.at(op), lanes);
    if (prefetch_) return store(regs_, op->value, idx);
    return store(op->buffer, load(op->value.type(), regs_, idx), op->index);
  }

 private:
  const SlotAssigner& slots_;
  const Buffer& regs_;
  bool prefetch_;
};

class Prefetch : public IRMutator {
 protected:
  Stmt mutate_attr(const Stmt& s, const AttrNode* op) override {
    if (op->key != kPragma) return IRMutator::mutate_attr(s, op);
    Stmt body = mutate(op->body);
    auto* loop = body.as<ForNode>();
    if (!loop || loop->for_kind != ForKind::Serial)
      LOOM_THROW(LoweringError, "prefetch_shared: the pragma must mark a serial loop");
    return rewrite(loop);
  }

 private:
  Stmt rewrite(const ForNode* loop) {
    const std::string where = "prefetch_shared at loop '" + loop->var.name() + "': ";
    std::vector<Buffer> bufs;
    std::vector<Stmt> items;
    flatten(loop->body, bufs, items);
    size_t nfill = 0;
    while (nfill < items.size() && is_shared_fill(items[nfill], bufs)) ++nfill;
    if (nfill == 0 || bufs.empty())
      LOOM_THROW(LoweringError, where, "its body does not start by filling shared buffers");
    for (size_t i = nfill; i < items.size(); ++i)
      if (is_shared_fill(items[i], bufs))
        LOOM_THROW(LoweringError, where, "a shared buffer is filled after the computation started");
    Stmt fills = seq(std::vector<Stmt>(items.begin(), items.begin() + std::ptrdiff_t(nfill)));
    Stmt compute = seq(std::vector<Stmt>(items.begin() + std::ptrdiff_t(nfill), items.end()));
    SlotAssigner slots;
    slots.visit(fills);
    if (!slots.error.empty()) LOOM_THROW(LoweringError, where, slots.error);
    Buffer regs =
        make_buffer(loop->var.name() + ".prefetch", slots.dtype, {Expr(static_cast<int>(slots.size))}, scope::kLocal);
    Stmt prefetch = Redirect(slots, regs, true).mutate(fills);
    Stmt commit = Redirect(slots, regs, false).mutate(fills);
    Expr end = simplify(loop->min + loop->extent);
    Expr has_next = loop->var + 1 < end;
    Stmt first = substitute(seq({prefetch, commit}), {{loop->var.get(), loop->min}});
    Stmt next = substitute(prefetch, {{loop->var.get(), loop->var + 1}});
    Stmt body = seq({if_then_else(has_next, next), compute, if_then_else(has_next, commit)});
    Stmt out = seq({first, for_loop(loop->var, loop->min, loop->extent, loop->for_kind, body, loop->thread_tag)});
    out = allocate(regs, out);
    for (auto it = bufs.rbegin(); it != bufs.rend(); ++it) out = allocate(*it, out);
    return out;
  }
  // The loop body as a list of statements, with the shared allocations between them taken out.
  static void flatten(const Stmt& s, std::vector<Buffer>& bufs, std::vector<Stmt>& items) {
    if (auto* a = s.as<AllocateNode>(); a && a->buffer->scope == scope::kShared) {
      bufs.push_back(a->buffer);
      flatten(a->body, bufs, items);
    } else if (auto* q = s.as<SeqNode>()) {
      for (auto& c : q->seq) flatten(c, bufs, items);
    } else {
      items.push_back(s);
    }
  }
};

}  // namespace

Stmt prefetch_shared(const Stmt& s) {
  Prefetch p;
  return p.mutate(s);
}

}  // namespace loom::schedule::passes
