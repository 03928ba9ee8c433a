#include "loom/codegen/llvm.h"
#include "loom/ir/printer.h"

namespace loom::codegen {

runtime::FunctionSignature signature_of(const ir::LoweredFunc& f) {
  runtime::FunctionSignature sig;
  sig.name = f.name;
  for (auto& b : f.args) {
    runtime::ArgSpec a;
    a.name = b->name;
    a.dtype = b->dtype;
    for (auto& e : b->shape) {
      auto* c = ir::as_const_int(e);
      if (!c)
        LOOM_THROW(CodegenError, f.name, ": argument '", b->name, "' has a non-constant extent '", ir::to_string(e),
                   "'; only constant shapes are supported");
      a.shape.push_back(*c);
    }
    sig.args.push_back(std::move(a));
  }
  return sig;
}

}  // namespace loom::codegen
