// libloom_codegen's side of the LLVM backend module (llvm_module_api.h): the public functions of
// loom/codegen/llvm.h, each loading libloom_llvm.so (beside this library) on first use.
#include <mutex>
#include <string>

#include "llvm_module_api.h"
#include "loom/runtime/error.h"
#include "loom/runtime/shared_object.h"

namespace loom::codegen {

namespace {

const LlvmModuleApi& module_api() {
  static const LlvmModuleApi* api = nullptr;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    auto entry = reinterpret_cast<decltype(&loom_llvm_module_api)>(runtime::load_module_symbol(
        reinterpret_cast<const void*>(&llvm_enabled), LOOM_LLVM_MODULE, "loom_llvm_module_api", error));
    if (!entry) return;
    const LlvmModuleApi* a = entry();
    if (!a || a->version != LlvmModuleApi::kVersion) {
      error = std::string(LOOM_LLVM_MODULE) + " is of another Loom build (interface version " +
              std::to_string(a ? a->version : 0) + ", want " + std::to_string(LlvmModuleApi::kVersion) + ")";
      return;
    }
    api = a;
  });
  if (!api) LOOM_THROW(CodegenError, "the LLVM CPU backend: ", error);
  return *api;
}

}  // namespace

bool llvm_enabled() { return true; }

runtime::Module build_llvm(const std::vector<ir::LoweredFunc>& funcs, const LLVMOptions& options) {
  return module_api().build_llvm_fn(funcs, options);
}

void export_library(const std::vector<ir::LoweredFunc>& funcs, const std::string& path, const LLVMOptions& options) {
  module_api().export_library_fn(funcs, path, options);
}

std::string emit_llvm_ir(const std::vector<ir::LoweredFunc>& funcs, const LLVMOptions& options) {
  return module_api().emit_llvm_ir_fn(funcs, options);
}

std::string emit_assembly(const std::vector<ir::LoweredFunc>& funcs, const LLVMOptions& options) {
  return module_api().emit_assembly_fn(funcs, options);
}

KernelCacheStats kernel_cache_stats() { return module_api().kernel_cache_stats_fn(); }

std::filesystem::path kernel_cache_directory() { return module_api().kernel_cache_directory_fn(); }

std::string host_target_description() { return module_api().host_target_description_fn(); }

TargetInfo target_info(const LLVMOptions& options) { return module_api().target_info_fn(options); }

}  // namespace loom::codegen
