// export_library (object file + system linker), text emitters, and target description.
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/raw_ostream.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "llvm_target.h"
#include "loom/runtime/env.h"

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

namespace {

// Runs argv[0] (looked up on PATH) with stdout and stderr in `log`, and waits: its exit status, or
// -1 when it could not start. posix_spawn rather than system(): no shell, and no fork that copies
// this process's page tables (a compiler process is large; a model compiles a library per build).
int run_logged(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int err = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    std::ofstream(log) << "cannot run '" << argv[0] << "': " << std::strerror(err) << "\n";
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

void export_library(const std::vector<ir::LoweredFunc>& funcs, const std::string& path, const LLVMOptions& options) {
  if (is_cross(options))
    LOOM_THROW(CodegenError, "llvm codegen: cannot export ", module_names(funcs), " for '", options.target_triple,
               "': the library is linked with this host's C compiler; use emit_assembly for another architecture");
  std::string object =
      compile_object(funcs, choose_target(options), options, CodeFor::SharedLibrary, /*metadata=*/true);

  namespace fs = std::filesystem;
  fs::path obj_path = fs::temp_directory_path() / ("loom_export_" + std::to_string(getpid()) + "_" +
                                                   std::to_string(reinterpret_cast<uintptr_t>(&object)) + ".o");
  {
    std::ofstream out(obj_path, std::ios::binary);
    if (!out.write(object.data(), static_cast<std::streamsize>(object.size())))
      LOOM_THROW(CodegenError, "export_library: cannot write object file '", obj_path.string(), "'");
  }
  fs::path log_path = obj_path;
  log_path.replace_extension(".log");
#ifdef LOOM_HOST_CC
  std::string cc = LOOM_HOST_CC;
#else
  std::string cc = "cc";
#endif
  if (auto env_cc = runtime::env::text("LOOM_CC")) cc = *env_cc;
  // loom_* hooks stay undefined: the process that loads the library provides them.
  int rc = run_logged({cc, "-shared", "-o", path, obj_path.string(), "-lm"}, log_path);
  std::string log;
  {
    std::ifstream in(log_path);
    log.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::error_code ec;
  fs::remove(obj_path, ec);
  fs::remove(log_path, ec);
  if (rc != 0)
    LOOM_THROW(CodegenError, "export_library: linking '", path, "' with '", cc, "' failed (status ", rc, "): ", log);
}

}  // namespace loom::codegen
