// Pass: serialize_small_parallel (model kernels on a CPU, LowerOptions::min_parallel_work). A
// parallel loop whose whole body does less work than the threshold runs serially: below it, the
// fork-join of loom_parallel_for costs more than the second thread saves (DenseNet's 7x7 layers
// ran slower on 2 threads than on 1). Work is counted in stores and intrinsic calls (one vector
// store, scalar store or call each, after unrolling, vectorization and tensorization) and in
// transcendental math (exp, log, tanh, erf, ...: kMathCallWork each), times the extents of the
// loops around them; of an if-else, the larger branch. With hints (LowerOptions::
// parallel_work_hints) the loops kept carry that count (attr_key::kParallelWork), which the
// runtime compares with its own host's threshold: the compile-time one is then only a floor.
#include "loom/ir/functor.h"
#include "passes.h"

namespace loom::schedule::passes {

using namespace loom::ir;

namespace {

// Stores and intrinsic calls executed by a statement, each weighted by the trip counts of the
// loops around it (a loop of unknown extent counts as kUnknownExtent trips). Saturates rather than
// overflows.
class WorkCounter : public IRVisitor {
 public:
  static constexpr int64_t kUnknownExtent = 64;
  static constexpr int64_t kLimit = int64_t(1) << 50;
  static constexpr int64_t kMathCallWork = 8;  // a transcendental call, in stores
  int64_t work = 0;

  // A statement that is a call (a tensorized intrinsic: an int8 conv's dot products) is work too.
  using IRVisitor::visit;
  void visit(const Stmt& s) override {
    if (s.defined() && s.kind() == StmtKind::Evaluate) work = std::min(kLimit, work + factor_);
    IRVisitor::visit(s);
  }

 protected:
  void visit_for(const ForNode* op) override {
    auto* n = as_const_int(op->extent);
    int64_t trips = n ? std::max<int64_t>(*n, 0) : kUnknownExtent;
    int64_t saved = factor_;
    int64_t product;
    factor_ =
        __builtin_mul_overflow(factor_, std::max<int64_t>(trips, 1), &product) ? kLimit : std::min(kLimit, product);
    if (trips > 0) visit(op->body);
    factor_ = saved;
  }
  // Either branch, not both: the larger one (a partitioned loop's full tiles and its tail).
  void visit_if(const IfThenElseNode* op) override {
    int64_t before = work, most = 0;
    for (const Stmt& branch : {op->then_case, op->else_case}) {
      if (!branch.defined()) continue;
      work = 0;
      visit(branch);
      most = std::max(most, work);
    }
    work = std::min(kLimit, before + most);
  }
  void visit_store(const StoreNode* op) override {
    work = std::min(kLimit, work + factor_);
    IRVisitor::visit_store(op);
  }
  // A vector exp costs ~15-20 cycles where a store costs one or two: softmax's 12288 vector stores
  // over BERT's attention scores would run on one thread.
  void visit_call(const CallNode* op) override {
    static const char* const kMath[] = {"exp", "exp2", "log", "log2", "tanh", "erf", "sigmoid", "pow", "sin", "cos"};
    for (const char* m : kMath)
      if (op->name == m) work = std::min(kLimit, work + factor_ * kMathCallWork);
    IRVisitor::visit_call(op);
  }

 private:
  int64_t factor_ = 1;
};

class SmallParallelSerializer : public IRMutator {
 public:
  SmallParallelSerializer(int64_t min_work, bool hints) : min_work_(min_work), hints_(hints) {}

 protected:
  Stmt mutate_for(const Stmt& s, const ForNode* op) override {
    if (op->for_kind != ForKind::Parallel) return IRMutator::mutate_for(s, op);
    WorkCounter c;
    c.visit(s);
    if (c.work >= min_work_) {
      if (!hints_) return s;  // a nested parallel loop runs serially anyway
      // The runtime may run this one serially, and then a nested one in parallel: it gets its own.
      Stmt body = mutate(op->body);
      return attr(
          attr_key::kParallelWork, Expr(c.work),
          body.same_as(op->body) ? s : for_loop(op->var, op->min, op->extent, op->for_kind, body, op->thread_tag));
    }
    // Serial now: a parallel loop inside it is judged on its own work.
    return for_loop(op->var, op->min, op->extent, ForKind::Serial, mutate(op->body), op->thread_tag);
  }

 private:
  int64_t min_work_;
  bool hints_;
};

}  // namespace

Stmt serialize_small_parallel(const Stmt& s, int64_t min_work, bool hints) {
  if (min_work <= 0 && !hints) return s;
  SmallParallelSerializer m(min_work, hints);
  return m.mutate(s);
}

}  // namespace loom::schedule::passes
