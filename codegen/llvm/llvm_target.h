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
// What the machine code is for: text to read (emit_assembly, target queries), a shared library
// (export_library: position-independent), or this process's JIT (build_llvm: position-independent
// with the small code model, as ORC's LLJIT sets up its own machine; the JIT default would be the
// large code model, every constant and call through a 64-bit address).
enum class CodeFor { Text, SharedLibrary, Jit };
const char* to_string(CodeFor f);
std::unique_ptr<llvm::TargetMachine> make_target_machine(const TargetChoice& target, const LLVMOptions& options,
                                                         CodeFor code_for);
// This thread's target machine for these settings, made on first use and kept: making one
// parses every feature of the CPU, a large part of compiling a small model.
llvm::TargetMachine& target_machine_for(const TargetChoice& target, const LLVMOptions& options, CodeFor code_for);
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
// `f` alone in a new module, its LLVM functions named after `symbol` (messages name f.name).
std::unique_ptr<llvm::Module> translate_kernel(const ir::LoweredFunc& f, const std::string& symbol,
                                               llvm::LLVMContext& ctx, llvm::TargetMachine& tm,
                                               const LLVMOptions& options);
// A module of exported entries: funcs[i].name tail-calls targets[i] (a kernel compiled in a module
// of its own); with `metadata`, also the JSON signature symbol for exported libraries.
std::unique_ptr<llvm::Module> translate_forwarders(const std::vector<ir::LoweredFunc>& funcs,
                                                   const std::vector<std::string>& targets, llvm::LLVMContext& ctx,
                                                   llvm::TargetMachine& tm, const LLVMOptions& options, bool metadata);
// The object code of `funcs` for `target`, as object files to link together (kernel_cache.cc):
// one per distinct kernel, named by its content, and one of entries under the functions' own
// names that forward to them (with the metadata symbol when asked). A kernel's object is read
// from the kernel cache when an entry for the same unoptimized IR, target, options, use and build
// exists, else compiled (the misses in parallel, on up to runtime::num_threads() threads) and
// stored there; kernels equal but for their names and buffer names share an entry. With an IR or
// assembly dump asked for, one object of all the functions, without the cache.
std::vector<std::string> compile_objects(const std::vector<ir::LoweredFunc>& funcs, const TargetChoice& target,
                                         const LLVMOptions& options, CodeFor code_for, bool metadata);
// Whether this build of the code generator and of LLVM can be told apart from others (their
// build-ids); without it there is no kernel cache.
bool build_identity_known();
// Machine code for the module as assembly text or an object file.
std::string emit_machine_code(llvm::Module& module, llvm::TargetMachine& tm, bool assembly);

std::string module_names(const std::vector<ir::LoweredFunc>& funcs);  // "f, g" for messages

}  // namespace loom::codegen::llvm_backend
