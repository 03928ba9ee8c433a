// Whether an element-wise stage's last two axes can run as one loop of vectors: every element it
// reads, through the stages inlined into it, is a constant step from the one before as that fused
// loop advances (contiguous, strided or the same one), across the rows' ends too. A channel
// shuffle's [C, 14, 14] rows of 14 are too short for a vector and ran as scalar copies; fused,
// they are 196 contiguous elements. A read that starts over at each row's end (softmax's division
// by its row sum, a blocked layout's channels) would gather in a pattern a row-wise loop does
// not, which cost more than the short rows (docs/results.md, the A/B measurements).
#include "loom/ir/functor.h"
#include "loom/ir/simplify.h"
#include "model_schedule_util.h"

namespace loom::ops::detail {

using namespace loom::ir;
using schedule::Schedule;
using schedule::Stage;

namespace {

struct RowCheck {
  const Schedule& s;
  Var f, g;  // the fused loop's variable, and another value of it

  bool inlined(const Operation* op) const {
    for (const Stage& st : s.stages())
      if (st->op.get() == op) return st->attach_type == schedule::AttachType::Inline;
    return false;
  }

  // Every read in `body` (its variables replaced by `sub`) steps by a constant as f does.
  bool reads_contiguously(const Expr& body, const VarMap& sub, int depth) const {
    if (depth > 64) return false;
    bool ok = true;
    post_order_visit(body, [&](const Expr& e) {
      auto* r = e.as<TensorReadNode>();
      if (!ok || !r) return;
      std::vector<Expr> idx;
      for (const Expr& i : r->indices) idx.push_back(substitute(i, sub));
      if (r->op->is_compute() && inlined(r->op.get()) && r->op->reduce_axes().empty()) {
        VarMap inner;
        for (size_t k = 0; k < r->op->axis.size() && k < idx.size(); ++k)
          inner.emplace_back(r->op->axis[k]->var.get(), idx[k]);
        ok = reads_contiguously(r->op->body, inner, depth + 1);
        return;
      }
      // A stored tensor: its flat offset, row-major.
      Expr offset = make_const(DataType::Int(32), 0);
      for (size_t k = 0; k < idx.size(); ++k) {
        const int64_t* n = as_const_int(r->op->shape[k]);
        if (!n) {
          ok = false;
          return;
        }
        offset = offset * make_const(DataType::Int(32), double(*n)) + idx[k];
      }
      Expr step = simplify(substitute(offset, {{f.get(), g + 1}}) - substitute(offset, {{f.get(), g}}));
      ok = as_const_int(step) != nullptr;
    });
    return ok;
  }
};

}  // namespace

bool rows_read_contiguously(const Schedule& s, const Stage& st) {
  const Operation& op = *st->op;
  if (!op.is_compute() || !op.reduce_axes().empty() || op.axis.size() < 2) return false;
  const IterVar& rows = op.axis[op.axis.size() - 2];
  const IterVar& cols = op.axis.back();
  const int64_t* nr = as_const_int(rows->dom.extent);
  const int64_t* nc = as_const_int(cols->dom.extent);
  if (!nr || !nc || *nr < 2 || *nc < 1) return false;
  RowCheck check{s, Var("fused_rows"), Var("fused_rows_next")};
  const Expr width = make_const(DataType::Int(32), double(*nc));
  VarMap sub = {{rows->var.get(), check.f / width}, {cols->var.get(), check.f % width}};
  return check.reads_contiguously(op.body, sub, 0);
}

}  // namespace loom::ops::detail
