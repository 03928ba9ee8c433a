// Pass: substitute the bodies of compute_inline stages into their readers, so later passes only
// see reads of stages that are really computed.
#include "loom/ir/functor.h"
#include "passes.h"

namespace loom::schedule::passes {

using namespace loom::ir;

namespace {
class Inliner : public IRMutator {
 public:
  explicit Inliner(const LowerState& st) : st_(st) {}

 protected:
  Expr mutate_tensor_read(const Expr& e, const TensorReadNode* op) override {
    Expr r = IRMutator::mutate_tensor_read(e, op);
    auto* rr = r.as<TensorReadNode>();
    StageNode* s = stage_for(st_, rr->op.get());
    if (s->attach_type != AttachType::Inline) return r;
    VarMap map;
    for (size_t d = 0; d < s->op->axis.size(); ++d) map.emplace_back(s->op->axis[d]->var.get(), rr->indices[d]);
    // The inlined body may itself read inlined stages.
    return mutate(substitute(s->op->body, map));
  }

 private:
  const LowerState& st_;
};
}  // namespace

void inline_stages(LowerState& st) {
  Inliner inliner(st);
  for (auto& s : st.sch->stages()) {
    if (!s->op->is_compute()) continue;
    st.bodies[s.node().get()] = inliner.mutate(s->op->body);
  }
}

}  // namespace loom::schedule::passes
