// LLVM CPU backend: compiles lowered loop IR to host machine code, either JIT-compiled into this
// process (build_llvm) or exported as a shared library that runtime::Module::load reads back
// (export_library). Every function follows the ABI in loom/runtime/module.h.
//
// When Loom is built without LLVM (LOOM_ENABLE_LLVM=OFF) these functions throw CodegenError;
// llvm_enabled() says which build this is.
//
// Compiled kernels are kept in the kernel cache, on disk: object code keyed by the kernels' LLVM
// IR before optimization, the target, the options and this build of Loom and LLVM, so compiling
// the same kernels again skips LLVM's optimizer and code generator. Its directory is the one
// LOOM_KERNEL_CACHE names ("off": no cache), else $XDG_CACHE_HOME/loom/kernels or
// ~/.cache/loom/kernels; it holds at most LOOM_KERNEL_CACHE_MB megabytes (default 1024), the
// least recently used entries going first. A cache that cannot be read or written only costs time.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "loom/ir/stmt.h"
#include "loom/runtime/module.h"

namespace loom::codegen {

struct LLVMOptions {
  int opt_level = 3;  // 0..3, for both the IR pipeline and the machine code generator
  // Empty: the host. Another triple ("aarch64-linux-gnu", "armv7a-linux-gnueabihf")
  // cross-compiles: emit_assembly, emit_llvm_ir, target_info and export_library (linked with that
  // target's C compiler, see export_library) work; build_llvm (JIT) needs the host's.
  std::string target_triple;
  // Empty: the host CPU ("znver4", "skylake-avx512", ...); for another architecture, the CPU of
  // the boards Loom targets (cortex-a53 for aarch64, cortex-a9 for 32-bit Arm), else "generic".
  std::string target_cpu;
  std::string target_features;  // empty: the host's features (or the CPU's defaults if target_cpu is set)
  // Widest vector the optimizer should form (prefer-vector-width): 0 picks 512 when the target has
  // AVX-512, else the target's default.
  int vector_width = 0;
  // Optimized LLVM IR / assembly are written here when non-empty (for inspection).
  std::string dump_ir_path;
  std::string dump_asm_path;
};

bool llvm_enabled();

// Signature (argument names, shapes, dtypes; symbolic extents and their variables) of a lowered
// function. Throws CodegenError for an extent that is not affine in shape variables.
runtime::FunctionSignature signature_of(const ir::LoweredFunc& f);

// JIT-compiles the functions (ORC LLJIT) for the target in `options`.
runtime::Module build_llvm(const std::vector<ir::LoweredFunc>& funcs, const LLVMOptions& options = {});

// Writes a shared library with the functions and their signatures (embedded as JSON metadata), by
// emitting an object file and linking it with a C compiler driver: $LOOM_CC when set, else this
// host's, or for another architecture Debian's cross compiler (aarch64-linux-gnu-gcc,
// arm-linux-gnueabihf-gcc; crossbuild-essential-arm64/-armhf). Its only undefined
// symbols besides libm are loom_runtime's hooks, resolved from the process that loads it.
void export_library(const std::vector<ir::LoweredFunc>& funcs, const std::string& path,
                    const LLVMOptions& options = {});

// The optimized LLVM IR / assembly of the functions, as text (for tests and tools).
std::string emit_llvm_ir(const std::vector<ir::LoweredFunc>& funcs, const LLVMOptions& options = {});
std::string emit_assembly(const std::vector<ir::LoweredFunc>& funcs, const LLVMOptions& options = {});

// Kernel cache lookups in this process: entries found, and modules compiled with the cache on.
struct KernelCacheStats {
  int64_t hits = 0, misses = 0;
};
KernelCacheStats kernel_cache_stats();
// The kernel cache's directory (empty: no cache).
std::filesystem::path kernel_cache_directory();

// The CPU name and feature string the backend targets by default (for logs and benchmarks).
std::string host_target_description();

// What schedules need to know about the target of `options` (the host by default).
struct TargetInfo {
  std::string triple, cpu, features;
  // The extensions of runtime::checked_cpu_features the code may use: recorded in compiled
  // models and checked against the CPU that loads them.
  std::vector<std::string> isa_features;
  int vector_bits = 128;      // widest vector the backend uses: 512 (AVX-512), 256 (AVX2/AVX), 128
  int vector_registers = 16;  // architectural vector registers (32 with AVX-512)
  // Integer dot products that accumulate in one instruction (x86 VNNI: vpdpbusd, vpdpwssd) on
  // vectors of vector_bits.
  bool int8_dot = false;
  int float32_lanes() const { return vector_bits / 32; }
};
TargetInfo target_info(const LLVMOptions& options = {});

}  // namespace loom::codegen
