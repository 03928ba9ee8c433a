// Schedules: how the computation described by tensor expressions is turned into loops.
// A Schedule holds one Stage per operation; primitives on a Stage restructure its loop nest
// (split, fuse, reorder, ...) or place it (compute_at, compute_inline, compute_root); the
// Schedule itself adds cache stages in a memory scope (cache_read, cache_write).
// Primitives check what they can immediately and throw loom::ScheduleError naming the stage and
// iteration variable; checks that depend on the whole schedule run during lowering.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "loom/ir/stmt.h"
#include "loom/ir/tensor.h"
#include "loom/schedule/tensor_intrin.h"

namespace loom::schedule {

using ir::Expr;
using ir::ForKind;
using ir::IterVar;
using ir::OpRef;
using ir::Tensor;

struct Relation {
  enum class Kind : uint8_t { Split, Fuse };
  Kind kind;
  // Split: parent -> (outer, inner) with inner extent `factor`.
  // Fuse: (outer, inner) -> fused.
  IterVar parent, outer, inner, fused;
  Expr factor;
};

struct IterVarAttr {
  ForKind kind = ForKind::Serial;
  std::string thread_tag;                             // for bind()
  std::vector<std::pair<std::string, Expr>> pragmas;  // emitted as attr "pragma_<name>"
  TensorIntrin tensorize;                             // replaces the nest from this loop inwards
};

enum class AttachType : uint8_t { Root, Inline, Scope };

class Schedule;
struct StageNode;
using StagePtr = std::shared_ptr<StageNode>;

struct StageNode {
  OpRef op;                             // current operation (rewritten by cache_read/cache_write)
  OpRef origin_op;                      // the operation the user created
  std::vector<IterVar> root_iter_vars;  // data-parallel axes, then reduce axes
  std::vector<IterVar> leaf_iter_vars;  // current loop order, outermost first
  std::vector<IterVar> all_iter_vars;   // every iter var ever created on this stage
  std::vector<Relation> relations;
  std::map<const ir::IterVarNode*, IterVarAttr> attrs;
  AttachType attach_type = AttachType::Root;
  std::weak_ptr<StageNode> attach_stage;
  IterVar attach_ivar;
  std::string scope = "global";
  std::vector<int> storage_order;  // dimension order of the allocation, outermost first (empty: natural)
  bool is_output = false;
  Schedule* schedule = nullptr;
};

class Stage {
 public:
  Stage() = default;
  explicit Stage(StagePtr n) : node_(std::move(n)) {}
  StageNode* operator->() const { return node_.get(); }
  const StagePtr& node() const { return node_; }
  const std::string& name() const { return node_->op->name; }
  bool operator==(const Stage& o) const { return node_ == o.node_; }

  // Root axes of the stage's current operation.
  IterVar axis(size_t i) const;
  IterVar reduce_axis(size_t i) const;
  const std::vector<IterVar>& leaf_iter_vars() const { return node_->leaf_iter_vars; }

  // Loop-structure primitives.
  std::pair<IterVar, IterVar> split(const IterVar& parent, Expr factor);
  std::pair<IterVar, IterVar> split_nparts(const IterVar& parent, Expr nparts);
  // tile(x, y, fx, fy) -> {x.outer, y.outer, x.inner, y.inner}, reordered in that order.
  std::vector<IterVar> tile(const IterVar& x, const IterVar& y, Expr x_factor, Expr y_factor);
  Stage& reorder(const std::vector<IterVar>& order);
  IterVar fuse(const IterVar& outer, const IterVar& inner);

  // Placement primitives.
  Stage& compute_at(const Stage& parent, const IterVar& ivar);
  Stage& compute_inline();
  Stage& compute_root();

  // Loop annotations.
  Stage& vectorize(const IterVar& v);
  Stage& unroll(const IterVar& v);
  Stage& parallel(const IterVar& v);
  Stage& bind(const IterVar& v, const std::string& thread_tag);
  Stage& pragma(const IterVar& v, const std::string& name, Expr value = Expr(1));
  Stage& set_scope(const std::string& scope);
  // Computes the loop nest from `v` inwards with a tensor intrinsic (checked during lowering).
  Stage& tensorize(const IterVar& v, const TensorIntrin& intrin);
  // Lays out this stage's (intermediate) buffer with dimensions in `order`, outermost first, e.g.
  // {0, 2, 3, 1} keeps channels innermost so a vectorized channel loop touches contiguous memory.
  Stage& storage_order(const std::vector<int>& order);

 private:
  void check_leaf(const IterVar& v, const char* primitive) const;
  IterVarAttr& attr(const IterVar& v) { return node_->attrs[v.get()]; }
  StagePtr node_;
};

class Schedule {
 public:
  // Stages for every operation reachable from `outputs`, producers first.
  explicit Schedule(const std::vector<Tensor>& outputs);
  Schedule(const Schedule&) = delete;
  Schedule& operator=(const Schedule&) = delete;

  // The stage computing `t` (t may be a tensor the user created before rewrites).
  Stage operator[](const Tensor& t) const;
  Stage stage_of(const ir::Operation* op) const;  // null stage if unknown
  const std::vector<Stage>& stages() const { return stages_; }
  const std::vector<Tensor>& outputs() const { return outputs_; }

  // New stage copying `t` into `scope`; `readers` now read the copy. Returns the copy.
  Tensor cache_read(const Tensor& t, const std::string& scope, const std::vector<Tensor>& readers);
  // New stage computing `t`'s body into `scope`; `t` becomes a copy out of it. Returns the
  // cache tensor.
  Tensor cache_write(const Tensor& t, const std::string& scope);

  // The stage that owns `v`, if any (used to name it in errors).
  Stage owner_of(const IterVar& v) const;

 private:
  void register_op(const OpRef& op, const Stage& s);
  std::vector<Stage> stages_;
  std::vector<Tensor> outputs_;
  std::map<const ir::Operation*, StagePtr> op_to_stage_;
};

}  // namespace loom::schedule
