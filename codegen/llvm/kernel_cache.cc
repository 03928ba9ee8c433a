// The kernel cache: object code keyed by everything that decides it, so that compiling the same
// kernels again (the same model, another run, another test) skips LLVM's optimizer and code
// generator, which take most of a model's compile time.
#include <dlfcn.h>
#include <llvm-c/Core.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/raw_ostream.h>
#include <sys/stat.h>

#include <atomic>
#include <fstream>

#include "llvm_target.h"
#include "loom/runtime/disk_cache.h"
#include "loom/runtime/env.h"

namespace loom::codegen {

namespace {

std::atomic<int64_t> g_hits{0}, g_misses{0}, g_stores{0};

std::string read_binary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The file that holds the code at `address` (this library, or the executable it is linked into).
std::string file_of(const void* address) {
  Dl_info info{};
  return dladdr(address, &info) && info.dli_fname ? info.dli_fname : "";
}

// This build of Loom's code generator (its binary's digest: a rebuild that changes how IR is
// optimized or emitted changes it) and of LLVM (its version, and its library's size and time, as
// hashing 130 MB in every process would cost more than most compiles).
const std::string& build_identity() {
  static const std::string id = [] {
    std::string self = file_of(reinterpret_cast<const void*>(&build_identity));
    std::string s = "codegen " + runtime::binary_digest(read_binary(self)) + "\nllvm " LLVM_VERSION_STRING;
    std::string llvm = file_of(reinterpret_cast<const void*>(&LLVMGetVersion));
    struct stat st {};
    if (!llvm.empty() && ::stat(llvm.c_str(), &st) == 0)
      s += " " + llvm + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtime);
    return s;
  }();
  return id;
}

uint64_t max_cache_bytes() {
  return uint64_t(runtime::env::integer("LOOM_KERNEL_CACHE_MB", 1, int64_t(1) << 30).value_or(1024)) << 20;
}

}  // namespace

KernelCacheStats kernel_cache_stats() { return {g_hits.load(), g_misses.load()}; }

std::filesystem::path kernel_cache_directory() { return runtime::cache_directory("LOOM_KERNEL_CACHE", "kernels"); }

namespace llvm_backend {

std::string compile_object(const std::vector<ir::LoweredFunc>& funcs, const TargetChoice& target,
                           const LLVMOptions& options, bool pic, bool metadata) {
  const uint64_t max_bytes = max_cache_bytes();  // a bad value is an error whether or not it is needed
  auto tm = make_target_machine(target, options, pic);
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
       << " pic " << pic << "\n";
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
