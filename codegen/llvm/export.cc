// export_library (object file + system linker), text emitters, and target description.
#include <llvm/IR/LLVMContext.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/raw_ostream.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include "lld_link.h"
#include "llvm_target.h"
#include "loom/runtime/cpu_target.h"
#include "loom/runtime/env.h"
#include "loom/runtime/spawn.h"

namespace loom::codegen {

using namespace llvm_backend;

bool llvm_enabled() { return true; }

std::string host_target_description() {
  TargetChoice t = choose_target({});
  auto tm = make_target_machine(t, {}, CodeFor::Text);
  std::string s = t.triple + ", cpu " + t.cpu;
  int vw = vector_width_for(*tm, {});
  if (vw) s += ", vector width " + std::to_string(vw);
  return s;
}

std::string emit_llvm_ir(const std::vector<ir::LoweredFunc>& funcs, const LLVMOptions& options) {
  auto tm = make_target_machine(choose_target(options), options, CodeFor::Text);
  llvm::LLVMContext ctx;
  auto m = compile_module(funcs, ctx, *tm, options, false);
  std::string text;
  llvm::raw_string_ostream os(text);
  m->print(os, nullptr);
  return os.str();
}

std::string emit_assembly(const std::vector<ir::LoweredFunc>& funcs, const LLVMOptions& options) {
  auto tm = make_target_machine(choose_target(options), options, CodeFor::Text);
  llvm::LLVMContext ctx;
  auto m = compile_module(funcs, ctx, *tm, options, false);
  return emit_machine_code(*m, *tm, true);
}

// What every host kernel library's link asks of the linker besides the output and its inputs:
// the unwinder's frame index, GNU hash tables and a build id.
static const std::vector<std::string> kHostLinkFlags{"--eh-frame-hdr", "--hash-style=gnu", "--build-id"};

// The host's linker with libgcc (its helpers for 128-bit division and half floats), when the
// build found them and LOOM_CC names no driver: linking with it directly skips the compiler
// driver's two processes; a kernel library needs no start files or C library of its own.
static std::optional<std::vector<std::string>> host_linker(const LLVMOptions& options) {
#if defined(LOOM_HOST_LD) && defined(LOOM_HOST_LIBGCC)
  if (!is_cross(options) && !runtime::env::text("LOOM_CC")) {
    std::vector<std::string> command{LOOM_HOST_LD};
    command.insert(command.end(), kHostLinkFlags.begin(), kHostLinkFlags.end());
    return command;
  }
#else
  (void)options;
#endif
  return std::nullopt;
}

// The same link with lld in this process, where the build has lld's library and the host's libm
// and libgcc: no linker process at all. False when it cannot run (the caller starts `ld`).
// libgcc is named only where an object calls its helpers (__divti3, __truncsfhf2, ...: the only
// undefined symbols named with two underscores; the others are libm's, libc's and the loom_*
// hooks the loading process provides), since lld reads every member of an archive it is given.
static bool link_host_library_in_process(const LLVMOptions& options, const std::string& path,
                                         const std::vector<std::string>& objects,
                                         const std::vector<std::string>& object_paths) {
#if defined(LOOM_HAVE_LLD) && defined(LOOM_HOST_LIBM) && defined(LOOM_HOST_LIBGCC)
  if (is_cross(options) || runtime::env::text("LOOM_CC")) return false;
  auto calls_runtime_helpers = [](const std::string& object) {
    auto file = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(object, "kernels.o"));
    if (!file) {
      llvm::consumeError(file.takeError());
      return true;  // cannot tell: link libgcc, as ld would
    }
    for (const llvm::object::SymbolRef& sym : (*file)->symbols()) {
      auto flags = sym.getFlags();
      auto name = sym.getName();
      if (!flags || !name) {
        if (!flags) llvm::consumeError(flags.takeError());
        if (!name) llvm::consumeError(name.takeError());
        return true;
      }
      if ((*flags & llvm::object::SymbolRef::SF_Undefined) && name->starts_with("__")) return true;
    }
    return false;
  };
  std::vector<std::string> args{"--threads=1"};
  args.insert(args.end(), kHostLinkFlags.begin(), kHostLinkFlags.end());
  args.insert(args.end(), {"-shared", "-o", path});
  args.insert(args.end(), object_paths.begin(), object_paths.end());
  args.push_back(LOOM_HOST_LIBM);
  if (std::any_of(objects.begin(), objects.end(), calls_runtime_helpers)) args.push_back(LOOM_HOST_LIBGCC);
  const InProcessLink link = link_in_process(args);
  if (link.ran && !link.ok)
    LOOM_THROW(CodegenError, "export_library: linking '", path, "' with lld (in process) failed: ", link.log);
  return link.ran;
#else
  (void)options, (void)path, (void)objects, (void)object_paths;
  return false;
#endif
}

// The C compiler driver that links a library for the options' target (see export_library).
static std::string c_compiler_for(const LLVMOptions& options, const std::vector<ir::LoweredFunc>& funcs) {
  if (auto env_cc = runtime::env::text("LOOM_CC")) return *env_cc;
  if (!is_cross(options)) {
#ifdef LOOM_HOST_CC
    return LOOM_HOST_CC;
#else
    return "cc";
#endif
  }
  const TargetChoice t = choose_target(options);
  const std::string arch = runtime::triple_cpu_arch(t.triple);
  if (arch == "aarch64") return "aarch64-linux-gnu-gcc";
  if (arch == "arm" && t.triple.find("hf") != std::string::npos) return "arm-linux-gnueabihf-gcc";
  LOOM_THROW(CodegenError, "llvm codegen: cannot export ", module_names(funcs), " for '", options.target_triple,
             "': no cross C compiler is known for it (aarch64-linux-gnu and arm-linux-gnueabihf are); set LOOM_CC "
             "to one that links shared libraries for it");
}

void export_library(const std::vector<ir::LoweredFunc>& funcs, const std::string& path, const LLVMOptions& options) {
  const std::optional<std::vector<std::string>> ld = host_linker(options);
  const std::string cc = ld ? ld->front() : c_compiler_for(options, funcs);
  const std::vector<std::string> objects =
      compile_objects(funcs, choose_target(options), options, CodeFor::SharedLibrary, /*metadata=*/true);

  namespace fs = std::filesystem;
  std::string folder_template = (fs::temp_directory_path() / "loom_export_XXXXXX").string();
  if (!mkdtemp(folder_template.data()))
    LOOM_THROW(CodegenError, "export_library: cannot make a temporary folder '", folder_template,
               "': ", std::strerror(errno));
  const fs::path folder = folder_template;
  struct RemovedAtExit {
    fs::path folder;
    ~RemovedAtExit() {
      std::error_code ec;
      fs::remove_all(folder, ec);
    }
  } removed_at_exit{folder};
  std::vector<std::string> object_paths;
  for (size_t i = 0; i < objects.size(); ++i) {
    fs::path obj_path = folder / (std::to_string(i) + ".o");
    std::ofstream out(obj_path, std::ios::binary);
    if (!out.write(objects[i].data(), static_cast<std::streamsize>(objects[i].size())))
      LOOM_THROW(CodegenError, "export_library: cannot write object file '", obj_path.string(), "'");
    object_paths.push_back(obj_path.string());
  }
  if (link_host_library_in_process(options, path, objects, object_paths)) return;
  std::vector<std::string> command = ld ? *ld : std::vector<std::string>{""};
  command.insert(command.end(), {"-shared", "-o", path});
  command.insert(command.end(), object_paths.begin(), object_paths.end());
  command.push_back("-lm");
#ifdef LOOM_HOST_LIBGCC
  if (ld) command.push_back(LOOM_HOST_LIBGCC);
#endif
  const fs::path log_path = folder / "link.log";
  // loom_* hooks stay undefined: the process that loads the library provides them.
  command[0] = cc;
  const runtime::LoggedRun run = runtime::run_logged(command, log_path);
  if (run.end == runtime::LoggedRun::End::NotStarted)
    std::ofstream(log_path) << "cannot run '" << cc << "': " << run.error
                            << (is_cross(options) ? " (install crossbuild-essential-arm64 or -armhf, or set LOOM_CC)"
                                                  : "")
                            << "\n";
  const int rc = run.end == runtime::LoggedRun::End::Exited     ? run.status
                 : run.end == runtime::LoggedRun::End::Signaled ? 128 + run.status
                                                                : -1;
  std::string log;
  {
    std::ifstream in(log_path);
    log.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (!run.ok())
    LOOM_THROW(CodegenError, "export_library: linking '", path, "' with '", cc, "' failed (status ", rc, "): ", log);
}

}  // namespace loom::codegen
