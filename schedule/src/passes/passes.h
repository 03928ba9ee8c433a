// Internal interface of the lowering passes: one function per pass, one pass per file.
#pragma once
#include <map>
#include <vector>

#include "loom/ir/stmt.h"
#include "loom/schedule/schedule.h"

namespace loom::schedule::passes {

// What the passes before storage flattening know about the schedule.
struct LowerState {
  const Schedule* sch = nullptr;
  // Body of each compute stage after substituting inlined stages (inline_stages).
  std::map<const StageNode*, ir::Expr> bodies;
  // Range of every iter var of every stage (infer_bounds). Leaves start at 0.
  std::map<const ir::IterVarNode*, ir::Range> ranges;
  // Region each non-output compute stage must produce (infer_bounds).
  std::map<const StageNode*, ir::Region> regions;
};

// Stage of an operation or of any earlier version of it.
StageNode* stage_for(const LowerState& st, const ir::Operation* op);

void inline_stages(LowerState& st);           // inline_stages.cc
void infer_bounds(LowerState& st);            // infer_bounds.cc
ir::Stmt schedule_ops(const LowerState& st);  // schedule_ops.cc
ir::Stmt storage_flatten(const ir::Stmt& s, const LowerState& st, const std::vector<Tensor>& args,
                         std::vector<ir::Buffer>* arg_buffers);  // storage_flatten.cc
// Replaces the nest of stage `s` from leaf `p` inwards by its tensor intrinsic (tensorize.cc).
ir::Stmt tensorize_nest(const StageNode& s, size_t p, const LowerState& st, IntrinPart part);
ir::Stmt inject_dma_copy(const ir::Stmt& s);  // inject_dma_copy.cc
// narrow_vector_bits > 0: a vector loop active on a prefix of its lanes becomes that many lanes,
// in whole registers of this many bits and one narrower (CPU).
ir::Stmt partition_loops(const ir::Stmt& s, int narrow_vector_bits);  // partition_loops.cc
ir::Stmt unroll_loops(const ir::Stmt& s);                             // unroll_loops.cc
ir::Stmt vectorize_loops(const ir::Stmt& s);                          // vectorize_loops.cc
// Float divisions by a loop-invariant divisor multiply by its reciprocal, computed before the loop
// (hoist_reciprocals.cc; CPU lowering).
ir::Stmt hoist_reciprocals(const ir::Stmt& s);
// serialize_small_parallel.cc: parallel loops doing fewer than `min_work` stores run serially
// (min_work <= 0: unchanged); with `hints`, the others carry their work (attr_key::kParallelWork).
ir::Stmt serialize_small_parallel(const ir::Stmt& s, int64_t min_work, bool hints);
// prefetch_ahead.cc: loops marked pragma(r, "prefetch", d) prefetch what the enclosing loop's
// iteration i + d will load (CPU lowering); emit = false only drops the pragma (GPU lowering).
ir::Stmt prefetch_ahead(const ir::Stmt& s, bool emit);
ir::Stmt prefetch_shared(const ir::Stmt& s);  // prefetch_shared.cc (GPU lowering only)
ir::Stmt thread_sync(const ir::Stmt& s);      // thread_sync.cc (GPU lowering only)

// Iteration-variable relations (iter_relations.cc).
// Offsets of a stage's root vars as expressions of its leaf loop vars (leaf loops start at 0).
std::map<const ir::IterVarNode*, ir::Expr> root_offsets(const StageNode& s, const LowerState& st);
// Symbolic interval of an expression given intervals of its variables.
struct Interval {
  ir::Expr min, max;
};
using IntervalMap = std::map<const ir::VarNode*, Interval>;
Interval eval_interval(const ir::Expr& e, const IntervalMap& vars);

}  // namespace loom::schedule::passes
