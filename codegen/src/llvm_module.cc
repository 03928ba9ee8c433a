// libloom_codegen's side of the LLVM backend module (llvm_module_api.h): the public functions of
// loom/codegen/llvm.h, each loading libloom_llvm.so (beside this library) on first use.
#include <dlfcn.h>

#include <filesystem>
#include <mutex>

#include "llvm_module_api.h"
#include "loom/runtime/error.h"

namespace loom::codegen {

namespace {

const LlvmModuleApi& module_api() {
  static const LlvmModuleApi* api = nullptr;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info self{};
    if (!dladdr(reinterpret_cast<void*>(&llvm_enabled), &self) || !self.dli_fname) {
      error = "cannot find the folder of libloom_codegen";
      return;
    }
    const std::string path = (std::filesystem::path(self.dli_fname).parent_path() / LOOM_LLVM_MODULE).string();
    // Never unloaded: JIT-compiled code and LLVM's own state live in it until the process ends.
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib) {
      const char* e = dlerror();
      error = "cannot load " + path + " (" + (e ? e : "unknown error") + ")";
      return;
    }
    auto entry = reinterpret_cast<decltype(&loom_llvm_module_api)>(dlsym(lib, "loom_llvm_module_api"));
    if (!entry) {
      error = path + " lacks loom_llvm_module_api";
      return;
    }
    const LlvmModuleApi* a = entry();
    if (!a || a->version != LlvmModuleApi::kVersion) {
      error = path + " is of another Loom build (interface version " + std::to_string(a ? a->version : 0) + ", want " +
              std::to_string(LlvmModuleApi::kVersion) + ")";
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
