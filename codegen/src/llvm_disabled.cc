// Stand-ins used when Loom is built without LLVM (LOOM_ENABLE_LLVM=OFF).
#include "loom/codegen/llvm.h"

namespace loom::codegen {

namespace {
[[noreturn]] void no_llvm(const char* what) {
  LOOM_THROW(CodegenError, what, ": Loom was built without the LLVM backend (configure with -DLOOM_ENABLE_LLVM=ON)");
}
}  // namespace

bool llvm_enabled() { return false; }
runtime::Module build_llvm(const std::vector<ir::LoweredFunc>&, const LLVMOptions&) { no_llvm("build_llvm"); }
void export_library(const std::vector<ir::LoweredFunc>&, const std::string&, const LLVMOptions&) {
  no_llvm("export_library");
}
std::string emit_llvm_ir(const std::vector<ir::LoweredFunc>&, const LLVMOptions&) { no_llvm("emit_llvm_ir"); }
std::string emit_assembly(const std::vector<ir::LoweredFunc>&, const LLVMOptions&) { no_llvm("emit_assembly"); }
std::string host_target_description() { return "none (built without LLVM)"; }
TargetInfo target_info(const LLVMOptions&) { return {}; }
KernelCacheStats kernel_cache_stats() { return {}; }
std::filesystem::path kernel_cache_directory() { return {}; }

}  // namespace loom::codegen
