// Pass: build the loop nest of every computed stage from its leaf iteration variables, place
// stages computed at a loop of another stage inside that loop, and wrap each non-output stage in
// a Realize of the region it produces. Reductions get an init nest (over the data-parallel loops
// inside the first reduction loop) followed by the update nest.
#include <algorithm>

#include "loom/ir/functor.h"
#include "loom/ir/simplify.h"
#include "passes.h"

namespace loom::schedule::passes {

using namespace loom::ir;

namespace {

class NestBuilder {
 public:
  explicit NestBuilder(const LowerState& st) : st_(st) {}

  Stmt build_top() {
    const auto& stages = st_.sch->stages();
    Stmt body = no_op();
    for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
      const StageNode& s = *it->node();
      if (!s.op->is_compute() || s.attach_type != AttachType::Root) continue;
      Stmt nest = build_stage(s);
      body = s.is_output ? seq({nest, body}) : realize(s.op, st_.regions.at(&s), s.scope, seq({nest, body}));
    }
    return body;
  }

 private:
  // Stages attached at `iv`, producers first.
  std::vector<const StageNode*> attached_at(const IterVar& iv) const {
    std::vector<const StageNode*> out;
    for (auto& s : st_.sch->stages())
      if (s->attach_type == AttachType::Scope && s->attach_ivar == iv) out.push_back(s.node().get());
    return out;
  }

  Stmt wrap_attached(const IterVar& iv, Stmt body) {
    auto children = attached_at(iv);
    for (auto it = children.rbegin(); it != children.rend(); ++it) {
      const StageNode& c = **it;
      body = realize(c.op, st_.regions.at(&c), c.scope, seq({build_stage(c), body}));
    }
    return body;
  }

  Stmt make_loop(const StageNode& s, const IterVar& iv, Stmt body) {
    body = wrap_attached(iv, body);
    IterVarAttr a;
    if (auto it = s.attrs.find(iv.get()); it != s.attrs.end()) a = it->second;
    Stmt loop = for_loop(iv->var, Expr(0), st_.ranges.at(iv.get()).extent, a.kind, body, a.thread_tag);
    for (auto p = a.pragmas.rbegin(); p != a.pragmas.rend(); ++p) loop = attr("pragma_" + p->first, p->second, loop);
    return loop;
  }

  Stmt wrap_loops(const StageNode& s, size_t from, size_t to, Stmt body) {
    for (size_t p = to; p-- > from;) body = make_loop(s, s.leaf_iter_vars[p], body);
    return body;
  }

  // Leaf position of a tensorize annotation, or n.
  static size_t tensorize_position(const StageNode& s) {
    for (size_t p = 0; p < s.leaf_iter_vars.size(); ++p) {
      auto it = s.attrs.find(s.leaf_iter_vars[p].get());
      if (it != s.attrs.end() && it->second.tensorize) return p;
    }
    return s.leaf_iter_vars.size();
  }

  Stmt build_stage(const StageNode& s) {
    size_t tp = tensorize_position(s);
    if (tp < s.leaf_iter_vars.size()) return build_tensorized(s, tp);
    auto offsets = root_offsets(s, st_);
    VarMap values;
    std::vector<Expr> indices;
    Expr guard_data, guard_reduce;
    auto add_guard = [](Expr& g, Expr c) { g = g.defined() ? (g && c) : c; };
    for (size_t d = 0; d < s.root_iter_vars.size(); ++d) {
      const IterVar& r = s.root_iter_vars[d];
      const Range& rg = st_.ranges.at(r.get());
      Expr off = offsets.at(r.get());
      Expr value = simplify(rg.min + off);
      values.emplace_back(r->var.get(), value);
      bool is_reduce = r->kind == IterKind::Reduce;
      if (!is_reduce) indices.push_back(value);
      // Split loops may overshoot a non-multiple extent; attached regions may stick out of the
      // tensor. The simplifier drops whichever guard it can prove.
      Expr& g = is_reduce ? guard_reduce : guard_data;
      add_guard(g, off < rg.extent);
      if (!is_reduce && s.attach_type == AttachType::Scope) {
        add_guard(g, value >= 0);
        add_guard(g, value < s.op->shape[d]);
      }
    }
    Expr body = substitute(st_.bodies.at(&s), values);
    auto guarded = [](Expr g, Stmt st) { return g.defined() ? if_then_else(g, st) : st; };
    size_t n = s.leaf_iter_vars.size();

    auto* red = body.as<ReduceNode>();
    if (!red) return wrap_loops(s, 0, n, guarded(guard_data, provide(s.op, indices, body)));

    size_t first_reduce = 0;
    while (first_reduce < n && s.leaf_iter_vars[first_reduce]->kind != IterKind::Reduce) ++first_reduce;
    Expr self = Expr(std::make_shared<const TensorReadNode>(s.op, indices));
    Stmt init = guarded(guard_data, provide(s.op, indices, reduce_identity(red->reduce_kind, s.op->dtype)));
    Expr cond = guard_data;
    if (guard_reduce.defined()) cond = cond.defined() ? (cond && guard_reduce) : guard_reduce;
    if (red->condition.defined()) cond = cond.defined() ? (cond && red->condition) : red->condition;
    Stmt update = guarded(cond, provide(s.op, indices, reduce_combine(red->reduce_kind, self, red->source)));
    Stmt init_nest = wrap_loops_plain(s, first_reduce, n, init);
    Stmt update_nest = wrap_loops(s, first_reduce, n, update);
    return wrap_loops(s, 0, first_reduce, seq({init_nest, update_nest}));
  }

  // Loops outside the tensorized nest stay; the nest becomes the intrinsic. Inside a reduction
  // the intrinsic's reset part runs in the init nest and its update part in the update nest.
  Stmt build_tensorized(const StageNode& s, size_t tp) {
    size_t first_reduce = 0, n = s.leaf_iter_vars.size();
    while (first_reduce < n && s.leaf_iter_vars[first_reduce]->kind != IterKind::Reduce) ++first_reduce;
    bool reduction = !s.op->reduce_axes().empty();
    if (!reduction || tp <= first_reduce) return wrap_loops(s, 0, tp, tensorize_nest(s, tp, st_, IntrinPart::Full));
    Stmt init = wrap_loops_plain(s, first_reduce, tp, tensorize_nest(s, tp, st_, IntrinPart::Reset));
    Stmt update = wrap_loops(s, first_reduce, tp, tensorize_nest(s, tp, st_, IntrinPart::Update));
    return wrap_loops(s, 0, first_reduce, seq({init, update}));
  }

  // Init nest: the data-parallel loops inside the first reduction loop, without attachments
  // (those belong to the update nest, where the data is consumed).
  Stmt wrap_loops_plain(const StageNode& s, size_t from, size_t to, Stmt body) {
    for (size_t p = to; p-- > from;) {
      const IterVar& iv = s.leaf_iter_vars[p];
      if (iv->kind == IterKind::Reduce) continue;
      IterVarAttr a;
      if (auto it = s.attrs.find(iv.get()); it != s.attrs.end()) a = it->second;
      body = for_loop(iv->var, Expr(0), st_.ranges.at(iv.get()).extent, a.kind, body, a.thread_tag);
    }
    return body;
  }

  const LowerState& st_;
};

}  // namespace

Stmt schedule_ops(const LowerState& st) {
  NestBuilder b(st);
  return b.build_top();
}

}  // namespace loom::schedule::passes
