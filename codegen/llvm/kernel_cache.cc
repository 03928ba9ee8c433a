// The kernel cache: object code keyed by everything that decides it, so that compiling the same
// kernels again (the same model, another run, another test) skips LLVM's optimizer and code
// generator, which take most of a model's compile time.
#include <llvm-c/Core.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/raw_ostream.h>

#include <atomic>
#include <cstring>
#include <string_view>

#include "llvm_target.h"
#include "loom/runtime/build_id.h"
#include "loom/runtime/disk_cache.h"
#include "loom/runtime/env.h"

namespace loom::codegen {

namespace {

std::atomic<int64_t> g_hits{0}, g_misses{0}, g_stores{0};

// This build of Loom's code generator (a rebuild that changes how IR is optimized or emitted changes
// it) and of LLVM (its version, and its library's build-id). Empty when it cannot be told, and
// then there is no cache: an entry of another build could be taken for this one's.
const std::string& build_identity() {
  static const std::string id = [] {
    std::string codegen = runtime::loaded_build_id(reinterpret_cast<const void*>(&build_identity));
    std::string llvm = runtime::loaded_build_id(reinterpret_cast<const void*>(&LLVMGetVersion));
    if (codegen.empty() || llvm.empty()) return std::string();
    return "codegen " + codegen + "\nllvm " LLVM_VERSION_STRING " " + llvm;
  }();
  return id;
}

uint64_t max_cache_bytes() {
  return uint64_t(runtime::env::integer("LOOM_KERNEL_CACHE_MB", 1, int64_t(1) << 30).value_or(1024)) << 20;
}

}  // namespace

KernelCacheStats kernel_cache_stats() { return {g_hits.load(), g_misses.load()}; }

std::filesystem::path kernel_cache_directory() {
  if (llvm_backend::build_identity_known()) return runtime::cache_directory("LOOM_KERNEL_CACHE", "kernels");
  return {};
}

namespace llvm_backend {

bool build_identity_known() { return !build_identity().empty(); }

std::string compile_object(const std::vector<ir::LoweredFunc>& funcs, const TargetChoice& target,
                           const LLVMOptions& options, CodeFor code_for, bool metadata) {
  const uint64_t max_bytes = max_cache_bytes();  // a bad value is an error whether or not it is needed
  auto tm = make_target_machine(target, options, code_for);
  llvm::LLVMContext ctx;
  auto m = translate_module(funcs, ctx, *tm, options, metadata);
  const bool dumps = !options.dump_ir_path.empty() || !options.dump_asm_path.empty();
  const std::filesystem::path dir = dumps ? std::filesystem::path() : kernel_cache_directory();
  std::string key;
  std::filesystem::path file;
  if (!dir.empty()) {
    llvm::raw_string_ostream os(key);
    os << "loom kernel cache 1\n"
       << build_identity() << "\n"
       << target.triple << "\n"
       << target.cpu << "\n"
       << target.features << "\nopt " << options.opt_level << " vector width " << vector_width_for(*tm, options)
       << " for " << to_string(code_for) << "\n";
    m->print(os, nullptr);
    file = dir / (runtime::content_hash(key) + ".o");
    if (auto object = runtime::read_cache_entry(file, key)) {
      ++g_hits;
      return *object;
    }
    ++g_misses;
  }
  optimize_module(*m, *tm, options);
  std::string object = emit_machine_code(*m, *tm, /*assembly=*/false);
  if (!file.empty() && runtime::write_cache_entry(file, object, key) && g_stores++ % 32 == 0)
    runtime::trim_cache(dir, ".o", max_bytes);
  return object;
}

}  // namespace llvm_backend
}  // namespace loom::codegen
