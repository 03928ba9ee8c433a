// Pass: loops marked unrolled with a constant extent become a sequence of copies of their body.
// A non-constant extent keeps the loop (and says so in the IR as a serial loop).
#include "loom/ir/functor.h"
#include "loom/ir/simplify.h"
#include "passes.h"

namespace loom::schedule::passes {

using namespace loom::ir;

namespace {
class Unroller : public IRMutator {
 protected:
  Stmt mutate_for(const Stmt& s, const ForNode* op) override {
    Stmt body = mutate(op->body);
    if (op->for_kind != ForKind::Unrolled) {
      return body.same_as(op->body) ? s : for_loop(op->var, op->min, op->extent, op->for_kind, body, op->thread_tag);
    }
    Expr ext = simplify(op->extent);
    auto* n = as_const_int(ext);
    if (!n) return for_loop(op->var, op->min, ext, ForKind::Serial, body);
    std::vector<Stmt> copies;
    for (int64_t i = 0; i < *n; ++i)
      copies.push_back(substitute(body, {{op->var.get(), simplify(op->min + Expr(static_cast<int>(i)))}}));
    return seq(std::move(copies));
  }
};
}  // namespace

Stmt unroll_loops(const Stmt& s) {
  Unroller u;
  return u.mutate(s);
}

}  // namespace loom::schedule::passes
