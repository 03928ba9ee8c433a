#include "loom/schedule/schedule.h"

#include <algorithm>
#include <set>

#include "loom/ir/functor.h"
#include "loom/ir/printer.h"

namespace loom::schedule {

using namespace loom::ir;

namespace {

std::string iv_name(const IterVar& v) { return v ? v->var.name() : "<null>"; }

IterVar new_iv(const std::string& name, Expr extent, IterKind kind) {
  return make_iter_var(Var(name), Range{Expr(0), std::move(extent)}, kind);
}

bool contains(const std::vector<IterVar>& vs, const IterVar& v) {
  return std::find(vs.begin(), vs.end(), v) != vs.end();
}

StagePtr make_stage(const OpRef& op, Schedule* sch) {
  auto s = std::make_shared<StageNode>();
  s->op = op;
  s->origin_op = op;
  s->schedule = sch;
  if (op->is_compute()) {
    s->root_iter_vars = op->axis;
    for (auto& r : op->reduce_axes()) s->root_iter_vars.push_back(r);
  }
  s->leaf_iter_vars = s->root_iter_vars;
  s->all_iter_vars = s->root_iter_vars;
  return s;
}

// Rewrites reads of any operation in `from` to reads of `to` (same indices).
class ReadRedirector : public IRMutator {
 public:
  ReadRedirector(std::set<const Operation*> from, OpRef to) : from_(std::move(from)), to_(std::move(to)) {}

 protected:
  Expr mutate_tensor_read(const Expr& e, const TensorReadNode* op) override {
    Expr r = IRMutator::mutate_tensor_read(e, op);
    auto* rr = r.as<TensorReadNode>();
    if (!from_.count(rr->op.get())) return r;
    return Expr(std::make_shared<const TensorReadNode>(to_, rr->indices));
  }

 private:
  std::set<const Operation*> from_;
  OpRef to_;
};

// A copy of `op` with a new body, keeping its axes (so existing schedule handles stay valid).
OpRef with_body(const OpRef& op, Expr body) {
  auto n = std::make_shared<Operation>(*op);
  n->body = std::move(body);
  return n;
}

}  // namespace

// ---------------- Stage ----------------

IterVar Stage::axis(size_t i) const {
  if (!node_->op->is_compute() || i >= node_->op->axis.size())
    LOOM_THROW(ScheduleError, "stage '", name(), "' has no axis ", i, " (it has ", node_->op->axis.size(), ")");
  return node_->op->axis[i];
}

IterVar Stage::reduce_axis(size_t i) const {
  auto r = node_->op->reduce_axes();
  if (i >= r.size())
    LOOM_THROW(ScheduleError, "stage '", name(), "' has no reduce axis ", i, " (it has ", r.size(), ")");
  return r[i];
}

void Stage::check_leaf(const IterVar& v, const char* primitive) const {
  if (!v) LOOM_THROW(ScheduleError, primitive, " on stage '", name(), "': null iter var");
  if (node_->op->is_placeholder())
    LOOM_THROW(ScheduleError, primitive, ": '", name(), "' is a placeholder and has no loops");
  if (contains(node_->leaf_iter_vars, v)) return;
  if (contains(node_->all_iter_vars, v))
    LOOM_THROW(ScheduleError, primitive, " on stage '", name(), "': iter var '", iv_name(v),
               "' was already split or fused; use its outer/inner/fused parts");
  Stage owner = node_->schedule ? node_->schedule->owner_of(v) : Stage();
  if (owner.node())
    LOOM_THROW(ScheduleError, primitive, " on stage '", name(), "': iter var '", iv_name(v), "' belongs to stage '",
               owner.name(), "', not to '", name(), "'");
  LOOM_THROW(ScheduleError, primitive, " on stage '", name(), "': iter var '", iv_name(v), "' is not one of its loops");
}

std::pair<IterVar, IterVar> Stage::split(const IterVar& parent, Expr factor) {
  check_leaf(parent, "split");
  auto* f = as_const_int(factor);
  if (!f || *f <= 0)
    LOOM_THROW(ScheduleError, "split of '", iv_name(parent), "' in stage '", name(),
               "': factor must be a positive constant, got ", to_string(factor));
  Expr ext = parent->dom.extent;
  Expr outer_ext =
      as_const_int(ext) ? Expr(static_cast<int>((*as_const_int(ext) + *f - 1) / *f)) : (ext + (*f - 1)) / factor;
  IterKind k = parent->kind;
  IterVar outer = new_iv(iv_name(parent) + ".outer", outer_ext, k);
  IterVar inner = new_iv(iv_name(parent) + ".inner", factor, k);
  auto& leaves = node_->leaf_iter_vars;
  auto pos = std::find(leaves.begin(), leaves.end(), parent);
  pos = leaves.erase(pos);
  leaves.insert(pos, {outer, inner});
  node_->all_iter_vars.push_back(outer);
  node_->all_iter_vars.push_back(inner);
  node_->relations.push_back(Relation{Relation::Kind::Split, parent, outer, inner, nullptr, factor});
  return {outer, inner};
}

std::pair<IterVar, IterVar> Stage::split_nparts(const IterVar& parent, Expr nparts) {
  check_leaf(parent, "split_nparts");
  auto* n = as_const_int(nparts);
  auto* ext = as_const_int(parent->dom.extent);
  if (!n || *n <= 0)
    LOOM_THROW(ScheduleError, "split_nparts of '", iv_name(parent), "' in stage '", name(),
               "': nparts must be a positive constant");
  if (!ext)
    LOOM_THROW(ScheduleError, "split_nparts of '", iv_name(parent), "' in stage '", name(),
               "' needs a constant extent");
  return split(parent, Expr(static_cast<int>((*ext + *n - 1) / *n)));
}

std::vector<IterVar> Stage::tile(const IterVar& x, const IterVar& y, Expr xf, Expr yf) {
  auto [xo, xi] = split(x, std::move(xf));
  auto [yo, yi] = split(y, std::move(yf));
  reorder({xo, yo, xi, yi});
  return {xo, yo, xi, yi};
}

Stage& Stage::reorder(const std::vector<IterVar>& order) {
  std::set<const IterVarNode*> seen;
  std::vector<size_t> positions;
  auto& leaves = node_->leaf_iter_vars;
  for (auto& v : order) {
    check_leaf(v, "reorder");
    if (!seen.insert(v.get()).second)
      LOOM_THROW(ScheduleError, "reorder on stage '", name(), "': iter var '", iv_name(v), "' appears twice");
    positions.push_back(std::find(leaves.begin(), leaves.end(), v) - leaves.begin());
  }
  // The named vars keep their set of positions but take the requested relative order.
  std::sort(positions.begin(), positions.end());
  for (size_t i = 0; i < order.size(); ++i) leaves[positions[i]] = order[i];
  return *this;
}

IterVar Stage::fuse(const IterVar& outer, const IterVar& inner) {
  check_leaf(outer, "fuse");
  check_leaf(inner, "fuse");
  auto& leaves = node_->leaf_iter_vars;
  auto po = std::find(leaves.begin(), leaves.end(), outer) - leaves.begin();
  auto pi = std::find(leaves.begin(), leaves.end(), inner) - leaves.begin();
  if (pi != po + 1)
    LOOM_THROW(ScheduleError, "fuse on stage '", name(), "': '", iv_name(outer), "' and '", iv_name(inner),
               "' must be adjacent loops, outer first");
  if (outer->kind != inner->kind)
    LOOM_THROW(ScheduleError, "fuse on stage '", name(), "': cannot fuse data-parallel '",
               iv_name(outer->kind == IterKind::Reduce ? inner : outer), "' with reduction '",
               iv_name(outer->kind == IterKind::Reduce ? outer : inner), "'");
  Expr ext = outer->dom.extent * inner->dom.extent;
  if (as_const_int(outer->dom.extent) && as_const_int(inner->dom.extent))
    ext = Expr(static_cast<int>(*as_const_int(outer->dom.extent) * *as_const_int(inner->dom.extent)));
  IterVar fused = new_iv(iv_name(outer) + "." + iv_name(inner) + ".fused", ext, outer->kind);
  leaves.erase(leaves.begin() + po, leaves.begin() + pi + 1);
  leaves.insert(leaves.begin() + po, fused);
  node_->all_iter_vars.push_back(fused);
  node_->relations.push_back(Relation{Relation::Kind::Fuse, nullptr, outer, inner, fused, Expr()});
  return fused;
}

Stage& Stage::compute_at(const Stage& parent, const IterVar& ivar) {
  if (node_->op->is_placeholder()) LOOM_THROW(ScheduleError, "compute_at: '", name(), "' is a placeholder");
  if (node_->is_output)
    LOOM_THROW(ScheduleError, "compute_at: '", name(), "' is an output and must be computed at root");
  if (!parent.node()) LOOM_THROW(ScheduleError, "compute_at of '", name(), "': null parent stage");
  if (parent.node() == node_)
    LOOM_THROW(ScheduleError, "compute_at: stage '", name(), "' cannot be computed inside itself");
  if (!contains(parent->all_iter_vars, ivar))
    LOOM_THROW(ScheduleError, "compute_at of '", name(), "': iter var '", iv_name(ivar), "' is not a loop of stage '",
               parent.name(), "'");
  node_->attach_type = AttachType::Scope;
  node_->attach_stage = parent.node();
  node_->attach_ivar = ivar;
  return *this;
}

Stage& Stage::compute_inline() {
  if (node_->op->is_placeholder()) LOOM_THROW(ScheduleError, "compute_inline: '", name(), "' is a placeholder");
  if (node_->is_output) LOOM_THROW(ScheduleError, "compute_inline: '", name(), "' is an output");
  if (node_->op->body.as<ReduceNode>())
    LOOM_THROW(ScheduleError, "compute_inline: '", name(), "' is a reduction and cannot be inlined");
  node_->attach_type = AttachType::Inline;
  node_->attach_stage.reset();
  node_->attach_ivar = nullptr;
  return *this;
}

Stage& Stage::compute_root() {
  node_->attach_type = AttachType::Root;
  node_->attach_stage.reset();
  node_->attach_ivar = nullptr;
  return *this;
}

Stage& Stage::vectorize(const IterVar& v) {
  check_leaf(v, "vectorize");
  if (v->kind == IterKind::Reduce)
    LOOM_THROW(ScheduleError, "vectorize on stage '", name(), "': '", iv_name(v), "' is a reduction axis");
  attr(v).kind = ForKind::Vectorized;
  return *this;
}
Stage& Stage::unroll(const IterVar& v) {
  check_leaf(v, "unroll");
  attr(v).kind = ForKind::Unrolled;
  return *this;
}
Stage& Stage::parallel(const IterVar& v) {
  check_leaf(v, "parallel");
  if (v->kind == IterKind::Reduce)
    LOOM_THROW(ScheduleError, "parallel on stage '", name(), "': '", iv_name(v), "' is a reduction axis (would race)");
  attr(v).kind = ForKind::Parallel;
  return *this;
}
Stage& Stage::bind(const IterVar& v, const std::string& tag) {
  check_leaf(v, "bind");
  static const std::set<std::string> kTags = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z", "threadIdx.x",
                                              "threadIdx.y", "threadIdx.z", "vthread"};
  if (!kTags.count(tag)) LOOM_THROW(ScheduleError, "bind on stage '", name(), "': unknown thread tag '", tag, "'");
  if (v->kind == IterKind::Reduce)
    LOOM_THROW(ScheduleError, "bind on stage '", name(), "': '", iv_name(v), "' is a reduction axis");
  // A virtual thread is a loop whose iterations an accelerator backend interleaves as
  // independent contexts (double buffering); GPU tags become thread indices.
  attr(v).kind = tag == "vthread" ? ForKind::VirtualThread : ForKind::ThreadBinding;
  attr(v).thread_tag = tag;
  return *this;
}
Stage& Stage::pragma(const IterVar& v, const std::string& pname, Expr value) {
  check_leaf(v, "pragma");
  if (pname.empty()) LOOM_THROW(ScheduleError, "pragma on stage '", name(), "': empty pragma name");
  attr(v).pragmas.emplace_back(pname, std::move(value));
  return *this;
}
Stage& Stage::set_scope(const std::string& scope) {
  if (node_->is_output || node_->op->is_placeholder())
    LOOM_THROW(ScheduleError, "set_scope: '", name(), "' is an input or output and lives in global memory");
  node_->scope = scope;
  return *this;
}

Stage& Stage::tensorize(const IterVar& v, const TensorIntrin& intrin) {
  check_leaf(v, "tensorize");
  if (!intrin) LOOM_THROW(ScheduleError, "tensorize on stage '", name(), "': null intrinsic");
  attr(v).tensorize = intrin;
  return *this;
}

Stage& Stage::storage_order(const std::vector<int>& order) {
  if (node_->is_output || node_->op->is_placeholder())
    LOOM_THROW(ScheduleError, "storage_order: '", name(), "' is an input or output; its layout is fixed by the caller");
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int>(i) || sorted.size() != node_->op->shape.size())
      LOOM_THROW(ScheduleError, "storage_order of '", name(), "': expected a permutation of its ",
                 node_->op->shape.size(), " dimensions");
  node_->storage_order = order;
  return *this;
}

// ---------------- Schedule ----------------

Schedule::Schedule(const std::vector<Tensor>& outputs) : outputs_(outputs) {
  if (outputs.empty()) LOOM_THROW(ScheduleError, "create schedule: no output tensors");
  for (auto& op : topo_sort(outputs)) {
    Stage s(make_stage(op, this));
    stages_.push_back(s);
    register_op(op, s);
  }
  for (auto& t : outputs) {
    if (t.op()->is_placeholder())
      LOOM_THROW(ScheduleError, "create schedule: output '", t.name(), "' is a placeholder");
    op_to_stage_.at(t.op().get())->is_output = true;
  }
}

void Schedule::register_op(const OpRef& op, const Stage& s) { op_to_stage_[op.get()] = s.node(); }

Stage Schedule::stage_of(const Operation* op) const {
  auto it = op_to_stage_.find(op);
  return it == op_to_stage_.end() ? Stage() : Stage(it->second);
}

Stage Schedule::operator[](const Tensor& t) const {
  if (!t.defined()) LOOM_THROW(ScheduleError, "schedule lookup of an undefined tensor");
  Stage s = stage_of(t.op().get());
  if (!s.node()) LOOM_THROW(ScheduleError, "tensor '", t.name(), "' is not part of this schedule");
  return s;
}

Stage Schedule::owner_of(const IterVar& v) const {
  for (auto& s : stages_)
    if (contains(s->all_iter_vars, v)) return s;
  return Stage();
}

Tensor Schedule::cache_read(const Tensor& t, const std::string& scope, const std::vector<Tensor>& readers) {
  Stage producer = (*this)[t];
  if (readers.empty()) LOOM_THROW(ScheduleError, "cache_read of '", t.name(), "': no readers given");
  // All versions of the producer's op count as "reads of t".
  std::set<const Operation*> versions;
  for (auto& [op, st] : op_to_stage_)
    if (st == producer.node()) versions.insert(op);
  Tensor cur(producer->op);
  Tensor cache = compute(
      cur.shape(), ComputeFn([&](const std::vector<Var>& v) { return cur(std::vector<Expr>(v.begin(), v.end())); }),
      t.name() + "." + scope);
  Stage cs(make_stage(cache.op(), this));
  cs->scope = scope;
  for (auto& r : readers) {
    Stage rs = (*this)[r];
    if (rs.node() == producer.node())
      LOOM_THROW(ScheduleError, "cache_read of '", t.name(), "': a tensor cannot read itself");
    bool reads = false;
    for (auto& in : rs->op->input_tensors()) reads |= versions.count(in.op().get()) != 0;
    if (!reads) LOOM_THROW(ScheduleError, "cache_read of '", t.name(), "': '", rs.name(), "' does not read it");
    ReadRedirector redirect(versions, cache.op());
    rs->op = with_body(rs->op, redirect.mutate(rs->op->body));
    register_op(rs->op, rs);
  }
  auto pos = std::find(stages_.begin(), stages_.end(), producer);
  stages_.insert(pos + 1, cs);
  register_op(cache.op(), cs);
  return cache;
}

Tensor Schedule::cache_write(const Tensor& t, const std::string& scope) {
  Stage st = (*this)[t];
  if (!st->op->is_compute()) LOOM_THROW(ScheduleError, "cache_write of '", t.name(), "': not a compute");
  if (!st->relations.empty() || st->attach_type != AttachType::Root)
    LOOM_THROW(ScheduleError, "cache_write of '", t.name(), "': must be applied before the stage is scheduled");
  const OpRef& op = st->op;
  // The cache computes the original body over fresh axes (and fresh reduce axes).
  VarMap remap;
  std::vector<IterVar> axes;
  for (auto& a : op->axis) {
    auto nv = make_iter_var(Var(a->var.name() + ".c"), a->dom, a->kind);
    remap.emplace_back(a->var.get(), nv->var);
    axes.push_back(nv);
  }
  Expr body = op->body;
  if (auto* red = body.as<ReduceNode>()) {
    std::vector<IterVar> raxes;
    for (auto& r : red->axes) {
      auto nv = make_iter_var(Var(r->var.name() + ".c"), r->dom, r->kind);
      remap.emplace_back(r->var.get(), nv->var);
      raxes.push_back(nv);
    }
    body =
        Expr(std::make_shared<const ReduceNode>(red->reduce_kind, substitute(red->source, remap), raxes,
                                                red->condition.defined() ? substitute(red->condition, remap) : Expr()));
  } else {
    body = substitute(body, remap);
  }
  Tensor cache = compute_with_axes(axes, body, t.name() + "." + scope, op->tag);
  Stage cs(make_stage(cache.op(), this));
  cs->scope = scope;
  // The original stage becomes a plain copy out of the cache, over its original axes.
  std::vector<Expr> idx;
  for (auto& a : op->axis) idx.push_back(a->var);
  auto copy = std::make_shared<Operation>(*op);
  copy->body = cache(idx);
  st->op = copy;
  st->root_iter_vars = op->axis;
  st->leaf_iter_vars = op->axis;
  st->all_iter_vars = op->axis;
  st->attrs.clear();
  register_op(copy, st);
  auto pos = std::find(stages_.begin(), stages_.end(), st);
  stages_.insert(pos, cs);
  register_op(cache.op(), cs);
  return cache;
}

}  // namespace loom::schedule
