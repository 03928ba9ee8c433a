// Pass: storage flattening. Every tensor becomes a flat Buffer: arguments for inputs and
// outputs, Allocates (in the stage's memory scope) for realized intermediates. Multi-dimensional
// Provide/TensorRead become Store/Load at row-major offsets relative to the realized region.
#include <map>
#include <set>

#include "loom/ir/buffer.h"
#include "loom/ir/functor.h"
#include "loom/ir/printer.h"
#include "loom/ir/simplify.h"
#include "passes.h"

namespace loom::schedule::passes {

using namespace loom::ir;

namespace {

struct BufferInfo {
  Buffer buffer;            // flat allocation, or the argument buffer
  std::vector<Expr> shape;  // logical shape of the realized region
  std::vector<Expr> mins;   // where that region starts in the tensor
  std::vector<int> order;   // storage order of the dimensions (empty: natural)
};

class Flattener : public IRMutator {
 public:
  explicit Flattener(const LowerState& st) : st_(st) {}
  std::map<const StageNode*, BufferInfo> buffers;
  // The arguments' shape variables: an extent over them alone is known on entry (a temporary of
  // that size lives on the heap), unlike one over a loop's variable.
  std::set<const VarNode*> shape_vars;

 protected:
  Stmt mutate_realize(const Stmt& s, const RealizeNode* op) override {
    StageNode* stage = stage_for(st_, op->op.get());
    std::vector<Expr> extents, mins;
    for (size_t d = 0; d < op->bounds.size(); ++d) {
      Expr ext = simplify(op->bounds[d].extent);
      if (!as_const_int(ext) && !over_shape_vars(ext))
        LOOM_THROW(LoweringError, "cannot allocate '", op->op->name, "': extent of dimension ", d, " is '",
                   to_string(ext),
                   "', which is not a constant; compute it at a loop where the region it needs is fixed-size");
      extents.push_back(ext);
      mins.push_back(op->bounds[d].min);
    }
    Expr size = Expr(1);
    for (auto& e : extents) size = simplify(size * e);
    Buffer flat = make_buffer(op->op->name, op->op->dtype, {size}, op->scope);
    buffers[stage] = BufferInfo{flat, extents, mins, stage->storage_order};
    Stmt body = mutate(op->body);
    buffers.erase(stage);
    return allocate(flat, body);
  }

  Stmt mutate_provide(const Stmt& s, const ProvideNode* op) override {
    Expr v = mutate(op->value);
    const BufferInfo& bi = lookup(op->op.get());
    return store(bi.buffer, v, flat_index(bi, op->indices, op->op->name));
  }

  Expr mutate_tensor_read(const Expr& e, const TensorReadNode* op) override {
    std::vector<Expr> idx;
    for (auto& i : op->indices) idx.push_back(mutate(i));
    const BufferInfo& bi = lookup(op->op.get());
    return load(bi.buffer->dtype, bi.buffer, flat_index(bi, idx, op->op->name));
  }

 private:
  const BufferInfo& lookup(const Operation* op) {
    StageNode* s = stage_for(st_, op);
    auto it = buffers.find(s);
    if (it == buffers.end())
      LOOM_THROW(LoweringError, "tensor '", s->op->name, "' is used but is neither an argument nor realized here",
                 s->op->is_placeholder() ? " (add it to the function's arguments)" : "");
    return it->second;
  }

  bool over_shape_vars(const Expr& e) const {
    bool ok = true;
    post_order_visit(e, [&](const Expr& x) {
      if (auto* v = x.as<VarNode>()) ok &= shape_vars.count(v) != 0;
    });
    return ok;
  }

  static Expr flat_index(const BufferInfo& bi, const std::vector<Expr>& idx, const std::string& name) {
    LOOM_CHECK(idx.size() == bi.shape.size(), "rank mismatch flattening ", name);
    std::vector<int> order = bi.order;
    if (order.empty())
      for (size_t d = 0; d < idx.size(); ++d) order.push_back(static_cast<int>(d));
    std::vector<Expr> stored_shape;
    for (int d : order) stored_shape.push_back(bi.shape[d]);
    auto strides = row_major_strides(stored_shape);
    Expr flat = Expr(0);
    for (size_t p = 0; p < order.size(); ++p) flat = flat + (idx[order[p]] - bi.mins[order[p]]) * strides[p];
    return simplify(flat);
  }

  const LowerState& st_;
};

}  // namespace

Stmt storage_flatten(const Stmt& s, const LowerState& st, const std::vector<Tensor>& args,
                     std::vector<Buffer>* arg_buffers) {
  Flattener f(st);
  std::vector<Buffer> made;
  for (auto& t : args) {
    StageNode* stage = stage_for(st, t.op().get());
    if (f.buffers.count(stage)) LOOM_THROW(LoweringError, "tensor '", t.name(), "' is listed twice in the arguments");
    Buffer b = make_buffer(t.name(), t.dtype(), t.shape(), scope::kGlobal);
    f.buffers[stage] = BufferInfo{b, t.shape(), std::vector<Expr>(t.shape().size(), Expr(0)), {}};
    arg_buffers->push_back(b);
    made.push_back(b);
  }
  for (const Var& v : shape_vars(made)) f.shape_vars.insert(v.get());
  for (auto& out : st.sch->outputs()) {
    if (!f.buffers.count(stage_for(st, out.op().get())))
      LOOM_THROW(LoweringError, "output '", out.name(), "' must be one of the function's arguments");
  }
  for (auto& t : args) {
    StageNode* stage = stage_for(st, t.op().get());
    if (stage->op->is_compute() && !stage->is_output)
      LOOM_THROW(LoweringError, "argument '", t.name(),
                 "' is an intermediate tensor; only inputs and outputs can be arguments");
  }
  return f.mutate(s);
}

}  // namespace loom::schedule::passes
