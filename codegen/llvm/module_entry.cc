// The entry of libloom_llvm.so (shared builds; codegen/src/llvm_module_api.h): everything else in
// the module is hidden, so its calls between its own functions never reach libloom_codegen's
// forwarders of the same names.
#include "../src/llvm_module_api.h"

extern "C" __attribute__((visibility("default"))) const loom::codegen::LlvmModuleApi* loom_llvm_module_api() {
  using namespace loom::codegen;
  static const LlvmModuleApi api = [] {
    LlvmModuleApi a;
    a.build_llvm_fn = &build_llvm;
    a.export_library_fn = &export_library;
    a.emit_llvm_ir_fn = &emit_llvm_ir;
    a.emit_assembly_fn = &emit_assembly;
    a.kernel_cache_stats_fn = &kernel_cache_stats;
    a.kernel_cache_directory_fn = &kernel_cache_directory;
    a.host_target_description_fn = &host_target_description;
    a.target_info_fn = &target_info;
    return a;
  }();
  return &api;
}
