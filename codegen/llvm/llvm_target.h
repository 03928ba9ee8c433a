// Target machine set-up, IR translation + optimization pipeline shared by the JIT and the exporter
// (internal to the LLVM backend).
#pragma once
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>
#include <vector>

#include "loom/codegen/llvm.h"

namespace loom::codegen::llvm_backend {

struct TargetChoice {
  std::string triple, cpu, features;
};

void initialize_llvm();
// The host's CPU and features, or the CPU (and features) named by the options; for another
// architecture's triple, that target (its generic CPU unless one is named).
TargetChoice choose_target(const LLVMOptions& options);
// Whether the options name a triple of another architecture than the host's.
bool is_cross(const LLVMOptions& options);
llvm::CodeGenOptLevel codegen_opt_level(int opt_level);
// `pic` for code linked into shared libraries.
std::unique_ptr<llvm::TargetMachine> make_target_machine(const TargetChoice& target, const LLVMOptions& options,
                                                         bool pic);
// prefer-vector-width for the target (0: leave the target's default).
int vector_width_for(const llvm::TargetMachine& tm, const LLVMOptions& options);

// Translates and verifies `funcs` into a new module, not yet optimized. With `metadata`, the
// module also carries the JSON signature symbol for exported libraries.
std::unique_ptr<llvm::Module> translate_module(const std::vector<ir::LoweredFunc>& funcs, llvm::LLVMContext& ctx,
                                               llvm::TargetMachine& tm, const LLVMOptions& options, bool metadata);
// Runs the optimization pipeline; writes options.dump_ir_path / dump_asm_path.
void optimize_module(llvm::Module& m, llvm::TargetMachine& tm, const LLVMOptions& options);
// translate_module, then optimize_module.
std::unique_ptr<llvm::Module> compile_module(const std::vector<ir::LoweredFunc>& funcs, llvm::LLVMContext& ctx,
                                             llvm::TargetMachine& tm, const LLVMOptions& options, bool metadata);
// The object code of `funcs` for `target` (`pic` for shared libraries): read from the kernel cache
// when an entry for the same unoptimized IR, target, options and build exists, else compiled and
// stored there (kernel_cache.cc). No cache when options ask for an IR or assembly dump.
std::string compile_object(const std::vector<ir::LoweredFunc>& funcs, const TargetChoice& target,
                           const LLVMOptions& options, bool pic, bool metadata);
// Machine code for the module as assembly text or an object file.
std::string emit_machine_code(llvm::Module& module, llvm::TargetMachine& tm, bool assembly);

std::string module_names(const std::vector<ir::LoweredFunc>& funcs);  // "f, g" for messages

}  // namespace loom::codegen::llvm_backend
