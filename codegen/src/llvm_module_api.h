// The LLVM CPU backend as a module: in shared builds codegen/llvm/ is libloom_llvm.so, which
// libloom_codegen loads the first time a program compiles for the CPU (llvm_module.cc), so that a
// process that never does (an error message, an accelerator run, a regression worker) does not
// pay for loading and relocating libLLVM. This table is the whole interface between the two.
#pragma once
#include "loom/codegen/llvm.h"

namespace loom::codegen {

struct LlvmModuleApi {
  static constexpr int kVersion = 1;
  int version = kVersion;
  decltype(&codegen::build_llvm) build_llvm_fn = nullptr;
  decltype(&codegen::export_library) export_library_fn = nullptr;
  decltype(&codegen::emit_llvm_ir) emit_llvm_ir_fn = nullptr;
  decltype(&codegen::emit_assembly) emit_assembly_fn = nullptr;
  decltype(&codegen::kernel_cache_stats) kernel_cache_stats_fn = nullptr;
  decltype(&codegen::kernel_cache_directory) kernel_cache_directory_fn = nullptr;
  decltype(&codegen::host_target_description) host_target_description_fn = nullptr;
  decltype(&codegen::target_info) target_info_fn = nullptr;
};

}  // namespace loom::codegen

// The module's one exported symbol.
extern "C" const loom::codegen::LlvmModuleApi* loom_llvm_module_api();
