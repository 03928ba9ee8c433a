// The kernel cache: object code keyed by everything that decides it, so that compiling the same
// kernels again (the same model, another run, another test) skips LLVM's optimizer and code
// generator, which take most of a model's compile time. Each kernel is a module and an object of
// its own, keyed without its name or its buffers' names: a kernel that another model (or another
// calibration of the same model) also has is compiled once, and the misses of one compile run on
// several threads.
#include <llvm-c/Core.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <map>
#include <string_view>
#include <thread>

#include "llvm_target.h"
#include "loom/runtime/build_id.h"
#include "loom/runtime/disk_cache.h"
#include "loom/runtime/env.h"
#include "loom/runtime/thread_pool.h"

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

namespace {

// A kernel's symbol while its IR is keyed, so that the key does not depend on its name.
constexpr std::string_view kPlaceholder = "loom.kernel";

struct Kernel {
  std::unique_ptr<llvm::LLVMContext> ctx;  // declared before the module, destroyed after it
  std::unique_ptr<llvm::Module> module;    // until compiled
  std::string symbol;                      // loom_k_<hash of the key>
  std::string key;
  std::filesystem::path file;  // its cache entry; empty without a cache
  std::string object;
};

std::string key_header(llvm::TargetMachine& tm, const TargetChoice& target, const LLVMOptions& options,
                       CodeFor code_for) {
  std::string h;
  llvm::raw_string_ostream os(h);
  os << "loom kernel cache 2\n"
     << build_identity() << "\n"
     << target.triple << "\n"
     << target.cpu << "\n"
     << target.features << "\nopt " << options.opt_level << " vector width " << vector_width_for(tm, options) << " for "
     << to_string(code_for) << "\n";
  return h;
}

// Translates `f` under the placeholder, keys it, and renames it after the key's hash.
Kernel translate(const ir::LoweredFunc& f, llvm::TargetMachine& tm, const LLVMOptions& options,
                 const std::string& header) {
  Kernel k;
  k.ctx = std::make_unique<llvm::LLVMContext>();
  k.ctx->setDiscardValueNames(true);  // buffer and loop names stay out of the key
  k.module = translate_kernel(f, std::string(kPlaceholder), *k.ctx, tm, options);
  k.key = header;
  llvm::raw_string_ostream os(k.key);
  k.module->print(os, nullptr);
  k.symbol = "loom_k_" + runtime::content_hash(k.key);
  for (llvm::Function& fn : *k.module)
    if (fn.getName().starts_with(kPlaceholder)) fn.setName(k.symbol + fn.getName().substr(kPlaceholder.size()).str());
  k.module->setModuleIdentifier(k.symbol);
  return k;
}

// Optimizes and emits the kernels on up to runtime::num_threads() threads, each with its own
// target machine (a module and its context are only ever used by one thread at a time).
void compile_in_parallel(const std::vector<Kernel*>& kernels, const TargetChoice& target, const LLVMOptions& options,
                         CodeFor code_for) {
  if (kernels.empty()) return;
  const size_t workers = std::min(kernels.size(), size_t(std::max(1, runtime::num_threads())));
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> errors(workers);
  auto work = [&](size_t w) {
    try {
      llvm::TargetMachine& tm = target_machine_for(target, options, code_for);
      for (size_t i; (i = next++) < kernels.size();) {
        Kernel& k = *kernels[i];
        optimize_module(*k.module, tm, options);
        k.object = emit_machine_code(*k.module, tm, /*assembly=*/false);
        k.module.reset();
      }
    } catch (...) {
      errors[w] = std::current_exception();
      next = kernels.size();
    }
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work, w);
  work(0);
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

std::vector<std::string> compile_objects(const std::vector<ir::LoweredFunc>& funcs, const TargetChoice& target,
                                         const LLVMOptions& options, CodeFor code_for, bool metadata) {
  const uint64_t max_bytes = max_cache_bytes();  // a bad value is an error whether or not it is needed
  llvm::TargetMachine& tm = target_machine_for(target, options, code_for);
  if (!options.dump_ir_path.empty() || !options.dump_asm_path.empty()) {
    // A dump shows the functions as one module, after the optimizer: no cache, no split.
    llvm::LLVMContext ctx;
    auto m = compile_module(funcs, ctx, tm, options, metadata);
    return {emit_machine_code(*m, tm, /*assembly=*/false)};
  }
  const std::filesystem::path dir = kernel_cache_directory();
  const std::string header = key_header(tm, target, options, code_for);

  std::vector<Kernel> kernels;  // distinct, in the order of first use
  std::map<std::string, size_t> by_symbol;
  std::vector<std::string> targets;
  for (auto& f : funcs) {
    Kernel k = translate(f, tm, options, header);
    targets.push_back(k.symbol);
    auto [it, added] = by_symbol.emplace(k.symbol, kernels.size());
    if (added)
      kernels.push_back(std::move(k));
    else if (kernels[it->second].key != k.key)
      LOOM_THROW(CodegenError, "llvm codegen: kernels '", f.name, "' and another of ", module_names(funcs),
                 " differ but their keys hash alike (", k.symbol, "); compile them in separate calls");
  }
  std::vector<Kernel*> misses;
  for (Kernel& k : kernels) {
    if (!dir.empty()) {
      k.file = dir / (k.symbol + ".o");
      if (auto object = runtime::read_cache_entry(k.file, k.key)) {
        ++g_hits;
        k.object = std::move(*object);
        k.module.reset();
        continue;
      }
      ++g_misses;
    }
    misses.push_back(&k);
  }
  compile_in_parallel(misses, target, options, code_for);
  for (Kernel* k : misses)
    if (!k->file.empty() && runtime::write_cache_entry(k->file, k->object, k->key) && g_stores++ % 32 == 0)
      runtime::trim_cache(dir, ".o", max_bytes);

  std::vector<std::string> objects;
  {
    llvm::LLVMContext ctx;
    auto entries = translate_forwarders(funcs, targets, ctx, tm, options, metadata);
    objects.push_back(emit_machine_code(*entries, tm, /*assembly=*/false));
  }
  for (Kernel& k : kernels) objects.push_back(std::move(k.object));
  return objects;
}

}  // namespace llvm_backend
}  // namespace loom::codegen
