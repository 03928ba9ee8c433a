#include "loom/codegen/llvm.h"
#include "loom/ir/buffer.h"
#include "loom/ir/printer.h"

namespace loom::codegen {

runtime::FunctionSignature signature_of(const ir::LoweredFunc& f) {
  runtime::FunctionSignature sig;
  sig.name = f.name;
  for (const ir::Var& v : ir::shape_vars(f)) sig.shape_vars.push_back(v.name());
  for (auto& b : f.args) {
    runtime::ArgSpec a;
    a.name = b->name;
    a.dtype = b->dtype;
    for (auto& e : b->shape) {
      std::optional<runtime::DimExpr> d = ir::to_dim_expr(e);
      if (!d)
        LOOM_THROW(CodegenError, f.name, ": argument '", b->name, "' has the extent '", ir::to_string(e),
                   "', which is neither constant nor affine in shape variables");
      a.shape.push_back(d->is_constant() ? d->offset : -1);
      a.dims.push_back(*d);
    }
    if (runtime::is_static(a.dims)) a.dims.clear();
    sig.args.push_back(std::move(a));
  }
  return sig;
}

}  // namespace loom::codegen
