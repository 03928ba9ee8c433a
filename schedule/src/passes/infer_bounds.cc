// Pass: bound inference. Root stages produce their whole shape. A stage computed at loop `iv`
// of a consumer produces exactly the region the consumer reads during one iteration of `iv`:
// the consumer's loops outside and at `iv` are fixed, the loops inside it sweep their ranges.
// Ranges of split/fused iteration variables follow from their roots.
#include <algorithm>

#include "loom/ir/functor.h"
#include "loom/ir/gpu.h"
#include "loom/ir/printer.h"
#include "loom/ir/simplify.h"
#include "passes.h"

namespace loom::schedule::passes {

using namespace loom::ir;

namespace {

// Ranges of derived iter vars from their parents (relations are in creation order).
void pass_down(const StageNode& s, LowerState& st) {
  for (auto& rel : s.relations) {
    if (rel.kind == Relation::Kind::Split) {
      Expr ext = st.ranges.at(rel.parent.get()).extent;
      st.ranges[rel.outer.get()] = Range{Expr(0), simplify((ext + rel.factor - 1) / rel.factor)};
      st.ranges[rel.inner.get()] = Range{Expr(0), rel.factor};
    } else {
      Expr e = simplify(st.ranges.at(rel.outer.get()).extent * st.ranges.at(rel.inner.get()).extent);
      st.ranges[rel.fused.get()] = Range{Expr(0), e};
    }
  }
}

std::vector<const TensorReadNode*> reads_of(const Expr& body, const LowerState& st, const StageNode* producer) {
  std::vector<const TensorReadNode*> out;
  post_order_visit(body, [&](const Expr& e) {
    if (auto* r = e.as<TensorReadNode>())
      if (stage_for(st, r->op.get()) == producer) out.push_back(r);
  });
  return out;
}

// Intervals of the consumer's root vars while its loops up to and including `at` are fixed
// (`at` null: every loop sweeps its range).
IntervalMap consumer_root_intervals(const StageNode& c, const IterVar& at, const LowerState& st) {
  auto pos = std::find(c.leaf_iter_vars.begin(), c.leaf_iter_vars.end(), at);
  IntervalMap leaf;
  bool fixed = at != nullptr;
  for (auto it = c.leaf_iter_vars.begin(); it != c.leaf_iter_vars.end(); ++it) {
    const Var& v = (*it)->var;
    if (fixed)
      leaf[v.get()] = Interval{v, v};
    else
      leaf[v.get()] = Interval{Expr(0), simplify(st.ranges.at(it->get()).extent - 1)};
    if (it == pos) fixed = false;
  }
  auto offsets = root_offsets(c, st);
  IntervalMap roots;
  for (auto& r : c.root_iter_vars) {
    Interval off = eval_interval(offsets.at(r.get()), leaf);
    LOOM_CHECK(off.min.defined(), "root offset of '", r->var.name(), "' not analyzable");
    Expr mn = st.ranges.at(r.get()).min;
    roots[r->var.get()] = Interval{simplify(mn + off.min), simplify(mn + off.max)};
  }
  return roots;
}

// A shared buffer serves every thread of the block: its region is the union over the threadIdx
// loops (as TVM's bound inference relaxes thread indices for shared scope), not one thread's.
void relax_threads(std::vector<Interval>& box, const LowerState& st) {
  IntervalMap threads;
  for (auto& stage : st.sch->stages())
    for (auto& [iv, a] : stage->attrs) {
      auto tag = a.kind == ForKind::ThreadBinding ? parse_thread_tag(a.thread_tag) : std::nullopt;
      auto r = st.ranges.find(iv);
      if (tag && !tag->block && r != st.ranges.end())
        threads[iv->var.get()] = Interval{Expr(0), simplify(r->second.extent - 1)};
    }
  if (threads.empty()) return;
  for (auto& b : box) {
    Interval lo = eval_interval(b.min, threads), hi = eval_interval(b.max, threads);
    if (lo.min.defined() && hi.max.defined()) b = Interval{lo.min, hi.max};
  }
}

// Where a reader runs relative to loop `at` of `parent`, when it runs inside it: the stages it is
// computed in below `parent` (innermost first) and the loops of `parent` inside `at` down to the
// one it (or the outermost of those stages) is computed at.
struct NestedReader {
  bool inside = false;
  std::vector<const StageNode*> around;
  std::vector<IterVar> parent_loops;
};

NestedReader nested_in(const StageNode* o, const StageNode* parent, const IterVar& at) {
  NestedReader r;
  for (const StageNode* cur = o; cur->attach_type == AttachType::Scope && r.around.size() < 1000;) {
    auto p = cur->attach_stage.lock();
    if (!p) break;
    if (p.get() != parent) {
      r.around.push_back(p.get());
      cur = p.get();
      continue;
    }
    const auto& loops = parent->leaf_iter_vars;
    auto from = std::find(loops.begin(), loops.end(), at), to = std::find(loops.begin(), loops.end(), cur->attach_ivar);
    if (from == loops.end() || to == loops.end() || to < from || (to == from && cur == o)) return {};
    r.parent_loops.assign(from + 1, to + 1);
    r.inside = true;
    return r;
  }
  return {};
}

// Widens `i` over every loop a nested reader runs in below the producer's loop: what it reads
// during one iteration of that loop.
Interval relax_over(Interval i, const NestedReader& n, const LowerState& st) {
  auto widen = [&](const std::vector<IterVar>& vars) {
    IntervalMap loops;
    for (const IterVar& iv : vars)
      loops[iv->var.get()] = Interval{Expr(0), simplify(st.ranges.at(iv.get()).extent - 1)};
    Interval lo = eval_interval(i.min, loops), hi = eval_interval(i.max, loops);
    i = lo.min.defined() && hi.max.defined() ? Interval{lo.min, hi.max} : Interval{};
  };
  for (const StageNode* a : n.around)
    if (i.min.defined()) widen(a->leaf_iter_vars);
  if (i.min.defined()) widen(n.parent_loops);
  return i;
}

Region infer_attached_region(const StageNode& s, const LowerState& st) {
  auto parent = s.attach_stage.lock();
  const std::string& name = s.op->name;
  if (!parent) LOOM_THROW(ScheduleError, "compute_at of '", name, "': the parent stage no longer exists");
  if (parent->attach_type == AttachType::Inline)
    LOOM_THROW(ScheduleError, "compute_at of '", name, "': parent '", parent->op->name,
               "' is inlined and has no loops");
  if (std::find(parent->leaf_iter_vars.begin(), parent->leaf_iter_vars.end(), s.attach_ivar) ==
      parent->leaf_iter_vars.end())
    LOOM_THROW(ScheduleError, "compute_at of '", name, "': '", s.attach_ivar->var.name(), "' is no longer a loop of '",
               parent->op->name, "' (it was split or fused; attach to one of its parts)");
  // Readers: the parent, stages computed at the same loop of the parent (they run after this one
  // inside that loop, so they see the same produced region), and stages computed inside those
  // (a local accumulator computed in a register tile of a stage computed at the loop: its reads
  // over every loop of the stages around it). Anyone else would need the tensor outside the loop
  // where it lives.
  struct Reader {
    const StageNode* stage;
    IterVar fixed_at;
    NestedReader nested;  // for a reader computed deeper inside the loop
  };
  std::vector<Reader> readers;
  const StageNode* outside_reader = nullptr;
  for (auto& other : st.sch->stages()) {
    const StageNode* o = other.node().get();
    if (!o->op->is_compute() || o->attach_type == AttachType::Inline) continue;
    if (reads_of(st.bodies.at(o), st, &s).empty()) continue;
    if (other.node() == parent) {
      readers.push_back({o, s.attach_ivar, {}});
    } else if (o->attach_type == AttachType::Scope && o->attach_stage.lock() == parent &&
               o->attach_ivar == s.attach_ivar) {
      readers.push_back({o, nullptr, {}});
    } else if (NestedReader n = nested_in(o, parent.get(), s.attach_ivar); n.inside) {
      readers.push_back({o, nullptr, std::move(n)});
    } else if (!outside_reader) {
      outside_reader = o;
    }
  }
  if (readers.empty())
    LOOM_THROW(
        ScheduleError, "compute_at of '", name, "': '", parent->op->name,
        "' does not read it (nor does any stage computed at the same loop), so it is not a consumer to compute it in");
  if (outside_reader)
    LOOM_THROW(ScheduleError, "compute_at of '", name, "' inside '", parent->op->name, "': '", outside_reader->op->name,
               "' also reads it; compute it at root, or compute '", outside_reader->op->name, "' at the same loop");

  size_t ndim = s.op->axis.size();
  std::vector<Interval> box(ndim);
  for (const Reader& reader : readers) {
    IntervalMap roots = consumer_root_intervals(*reader.stage, reader.fixed_at, st);
    for (auto* r : reads_of(st.bodies.at(reader.stage), st, &s)) {
      for (size_t d = 0; d < ndim; ++d) {
        Interval i = eval_interval(r->indices[d], roots);
        if (i.min.defined() && reader.nested.inside) i = relax_over(i, reader.nested, st);
        if (!i.min.defined()) i = Interval{Expr(0), simplify(s.op->shape[d] - 1)};  // not analyzable: all of it
        if (!box[d].min.defined()) {
          box[d] = i;
        } else {
          box[d].min = simplify(ir::min(box[d].min, i.min));
          box[d].max = simplify(ir::max(box[d].max, i.max));
        }
      }
    }
  }
  if (s.scope == scope::kShared) relax_threads(box, st);
  Region region;
  for (size_t d = 0; d < ndim; ++d) region.push_back(Range{box[d].min, simplify(box[d].max - box[d].min + 1)});
  return region;
}

void check_no_attach_cycle(const StageNode& s) {
  const StageNode* cur = &s;
  for (int depth = 0; cur && cur->attach_type == AttachType::Scope; ++depth) {
    auto p = cur->attach_stage.lock();
    if (p.get() == &s || depth > 1000)
      LOOM_THROW(ScheduleError, "compute_at of '", s.op->name, "': stages are attached inside each other in a cycle");
    cur = p.get();
  }
}

}  // namespace

void infer_bounds(LowerState& st) {
  const auto& stages = st.sch->stages();
  // Consumers come after producers in stage order: walk backwards.
  for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
    const StageNode& s = *it->node();
    if (!s.op->is_compute() || s.attach_type == AttachType::Inline) continue;
    Region region;
    if (s.attach_type == AttachType::Scope) {
      check_no_attach_cycle(s);
      region = infer_attached_region(s, st);
    } else {
      for (auto& e : s.op->shape) region.push_back(Range{Expr(0), e});
    }
    st.regions[&s] = region;
    for (size_t d = 0; d < s.op->axis.size(); ++d) st.ranges[s.op->axis[d].get()] = region[d];
    for (auto& r : s.op->reduce_axes()) st.ranges[r.get()] = r->dom;
    pass_down(s, st);
  }
}

}  // namespace loom::schedule::passes
