// build_llvm: JIT compilation with ORC LLJIT into the current process.
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include "llvm_target.h"
#include "loom/runtime/module.h"
#include "loom/runtime/thread_pool.h"

namespace loom::codegen {

using namespace llvm_backend;

namespace {

template <typename T>
T unwrap(llvm::Expected<T> v, const std::string& what) {
  if (!v) LOOM_THROW(CodegenError, "llvm codegen: ", what, ": ", llvm::toString(v.takeError()));
  return std::move(*v);
}

void check(llvm::Error e, const std::string& what) {
  if (e) LOOM_THROW(CodegenError, "llvm codegen: ", what, ": ", llvm::toString(std::move(e)));
}

// The runtime hooks compiled code calls, bound by address so resolution does not depend on how
// the process exported them.
llvm::orc::SymbolMap runtime_symbols(llvm::orc::LLJIT& jit) {
  llvm::orc::SymbolMap syms;
  auto add = [&](const char* name, auto* fn) {
    syms[jit.mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(reinterpret_cast<void*>(fn)),
                                       llvm::JITSymbolFlags::Exported};
  };
  add("loom_parallel_for", &loom_parallel_for);
  add("loom_parallel_for_work", &loom_parallel_for_work);
  add("loom_parallel_for_alternating", &loom_parallel_for_alternating);
  add("loom_set_last_error", &loom_set_last_error);
  add("loom_alloc", &loom_alloc);
  add("loom_free", &loom_free);
  return syms;
}

}  // namespace

runtime::Module build_llvm(const std::vector<ir::LoweredFunc>& funcs, const LLVMOptions& options) {
  if (is_cross(options))
    LOOM_THROW(CodegenError, "llvm codegen: cannot JIT-compile ", module_names(funcs), " for '", options.target_triple,
               "' on this host; use emit_assembly (or a native build) for another architecture");
  TargetChoice target = choose_target(options);
  std::vector<std::string> objects = compile_objects(funcs, target, options, CodeFor::Jit, /*metadata=*/false);

  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(target.triple)};
  jtmb.setCPU(target.cpu);
  jtmb.addFeatures(std::vector<std::string>{});
  if (!target.features.empty()) jtmb.getFeatures() = llvm::SubtargetFeatures(target.features);
  jtmb.setCodeGenOptLevel(codegen_opt_level(options.opt_level));
  jtmb.getOptions().AllowFPOpFusion = llvm::FPOpFusion::Fast;
  std::string what = "JIT compilation of " + module_names(funcs);
  std::unique_ptr<llvm::orc::LLJIT> jit =
      unwrap(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create(), what);
  llvm::orc::JITDylib& lib = jit->getMainJITDylib();
  check(lib.define(llvm::orc::absoluteSymbols(runtime_symbols(*jit))), what);
  // libm (expf, tanhf, ...) and anything else from the process.
  lib.addGenerator(unwrap(
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit->getDataLayout().getGlobalPrefix()), what));
  for (auto& object : objects)
    check(jit->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object, module_names(funcs))), what);

  std::vector<runtime::FunctionSignature> sigs;
  std::vector<runtime::CompiledFn> fns;
  for (auto& f : funcs) {
    auto addr = unwrap(jit->lookup(f.name), what + ": symbol '" + f.name + "'");
    sigs.push_back(signature_of(f));
    fns.push_back(addr.toPtr<runtime::CompiledFn>());
  }
  std::shared_ptr<llvm::orc::LLJIT> owner(std::move(jit));
  return runtime::Module(std::move(sigs), std::move(fns), std::shared_ptr<void>(owner, owner.get()));
}

}  // namespace loom::codegen
