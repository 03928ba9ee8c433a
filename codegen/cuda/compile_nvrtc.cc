// NVRTC: CUDA C to PTX and a cubin in one compilation (a real architecture keeps the PTX too), with
// ptxas' verbose report parsed for each kernel's registers; an on-disk cache of compiled programs.
//
// NVRTC is loaded with dlopen when a program is first compiled, not linked: a process that never
// compiles CUDA (most of them) does not pay for loading a 100 MB library, and Loom's binaries
// start on a machine without the CUDA toolkit (nvrtc_enabled() is then false).
#include <nvrtc.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <type_traits>

#include "loom/codegen/cuda.h"
#include "loom/runtime/disk_cache.h"
#include "loom/runtime/shared_object.h"

namespace loom::codegen::cuda {

namespace {

double g_last_seconds = 0;

// The NVRTC entry points Loom calls, resolved from the library once.
struct Nvrtc {
  decltype(&::nvrtcGetErrorString) GetErrorString = nullptr;
  decltype(&::nvrtcVersion) Version = nullptr;
  decltype(&::nvrtcCreateProgram) CreateProgram = nullptr;
  decltype(&::nvrtcCompileProgram) CompileProgram = nullptr;
  decltype(&::nvrtcGetProgramLogSize) GetProgramLogSize = nullptr;
  decltype(&::nvrtcGetProgramLog) GetProgramLog = nullptr;
  decltype(&::nvrtcDestroyProgram) DestroyProgram = nullptr;
  decltype(&::nvrtcGetPTXSize) GetPTXSize = nullptr;
  decltype(&::nvrtcGetPTX) GetPTX = nullptr;
  decltype(&::nvrtcGetCUBINSize) GetCUBINSize = nullptr;
  decltype(&::nvrtcGetCUBIN) GetCUBIN = nullptr;
  std::string error;  // why it could not be loaded; empty when it was
};

// The toolkit's library Loom was built against (its path, then its soname on the search path).
const Nvrtc& nvrtc_library() {
  static const Nvrtc lib = [] {
    Nvrtc n;
    std::string tried;
    void* handle = runtime::open_shared_object({LOOM_NVRTC_LIBRARY, LOOM_NVRTC_SONAME}, tried);
    if (!handle) {
      n.error = "cannot load NVRTC (" + tried + ")";
      return n;
    }
    auto bind = [&](auto& fn, const char* name) {
      std::string missing;
      if (!runtime::bind_symbol(handle, fn, {name}, missing) && n.error.empty())
        n.error = "NVRTC has no symbol " + missing;
    };
    bind(n.GetErrorString, "nvrtcGetErrorString");
    bind(n.Version, "nvrtcVersion");
    bind(n.CreateProgram, "nvrtcCreateProgram");
    bind(n.CompileProgram, "nvrtcCompileProgram");
    bind(n.GetProgramLogSize, "nvrtcGetProgramLogSize");
    bind(n.GetProgramLog, "nvrtcGetProgramLog");
    bind(n.DestroyProgram, "nvrtcDestroyProgram");
    bind(n.GetPTXSize, "nvrtcGetPTXSize");
    bind(n.GetPTX, "nvrtcGetPTX");
    bind(n.GetCUBINSize, "nvrtcGetCUBINSize");
    bind(n.GetCUBIN, "nvrtcGetCUBIN");
    return n;
  }();
  return lib;
}

// The loaded library, or a CodegenError saying why there is none.
const Nvrtc& nvrtc() {
  const Nvrtc& n = nvrtc_library();
  if (!n.error.empty()) LOOM_THROW(CodegenError, "CUDA backend: ", n.error);
  return n;
}

void check(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) LOOM_THROW(CodegenError, "NVRTC ", what, ": ", nvrtc().GetErrorString(r));
}

std::vector<std::string> nvrtc_options(const CudaOptions& o) {
  std::vector<std::string> opts = {"--gpu-architecture=" + o.arch, "--ptxas-options=-v", "-std=c++17"};
  if (o.fast_math) opts.push_back("--use_fast_math");
  return opts;
}

std::filesystem::path cache_dir(const CudaOptions& o) {
  if (!o.cache_dir.empty()) return o.cache_dir;
  return runtime::cache_directory("LOOM_CUDA_CACHE", "cuda");
}

// Which NVRTC compiles: the library file Loom loads (path, size, modification time), read without
// loading it, so that a cache hit never loads NVRTC; its version when the file is not there.
std::string nvrtc_identity() {
  struct stat st {};
  if (stat(LOOM_NVRTC_LIBRARY, &st) == 0)
    return std::string(LOOM_NVRTC_LIBRARY) + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtime);
  return "NVRTC " + nvrtc_version();
}

// Everything that decides the compiled code: the entry's check text and, hashed, its name.
std::string cache_key(const runtime::CudaProgram& p, const CudaOptions& o) {
  std::string key = "loom cuda cache 2\n" + nvrtc_identity() + "\n" + o.arch + "\n";
  for (auto& opt : nvrtc_options(o)) key += opt + '\xff';
  return key + "\n" + p.source;
}

// "Compiling entry function 'k' for 'sm_90'" ... "Used 10 registers" per kernel.
std::map<std::string, int> registers_from_log(const std::string& log) {
  std::map<std::string, int> regs;
  static const std::regex entry(R"(Compiling entry function '([A-Za-z0-9_]+)')"), used(R"(Used (\d+) registers)");
  std::string current;
  std::istringstream is(log);
  for (std::string line; std::getline(is, line);) {
    std::smatch m;
    if (std::regex_search(line, m, entry))
      current = m[1];
    else if (!current.empty() && std::regex_search(line, m, used))
      regs[current] = std::stoi(m[1]);
  }
  return regs;
}

void apply_registers(runtime::CudaProgram& p, const CudaOptions& o) {
  auto regs = registers_from_log(p.compile_log);
  for (auto& f : p.functions)
    for (auto& k : f.kernels) {
      auto it = regs.find(k.name);
      k.registers = it == regs.end() ? -1 : it->second;
      int64_t threads = int64_t(k.block[0]) * k.block[1] * k.block[2];
      if (k.registers > 0 && k.registers * threads > o.limits.max_registers_per_block)
        LOOM_THROW(LoweringError, f.name, ": kernel ", k.name, " needs ", k.registers, " registers per thread x ",
                   threads, " threads = ", k.registers * threads, " registers per block, over the limit of ",
                   o.limits.max_registers_per_block, ": use fewer threads per block or a smaller register tile");
    }
}

// An entry carries its key's check and a digest of its bytes (runtime/disk_cache.h): a damaged or
// colliding entry is compiled again and overwritten.
bool read_cache(runtime::CudaProgram& p, const std::filesystem::path& file, const std::string& key) {
  std::optional<std::string> bytes = runtime::read_cache_entry(file, key);
  if (!bytes) return false;
  try {
    runtime::CudaProgram c = runtime::CudaProgram::deserialize(*bytes, file.string());
    if (c.source != p.source || c.arch != p.arch) return false;
    p.ptx = std::move(c.ptx);
    p.cubin = std::move(c.cubin);
    p.compile_log = std::move(c.compile_log);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

bool nvrtc_enabled() { return nvrtc_library().error.empty(); }

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (!nvrtc_enabled() || nvrtc().Version(&major, &minor) != NVRTC_SUCCESS) return "";
  return std::to_string(major) + "." + std::to_string(minor);
}

double last_compile_seconds() { return g_last_seconds; }

void compile(runtime::CudaProgram& p, const CudaOptions& o) {
  g_last_seconds = 0;
  static const std::regex arch(R"(sm_[0-9]{2,3}a?)");
  if (!std::regex_match(o.arch, arch))
    LOOM_THROW(CodegenError, "CUDA architecture '", o.arch, "' is not sm_<major><minor> (e.g. sm_90, sm_90a)");
  std::filesystem::path file;
  std::string key;
  if (o.use_cache) {
    std::filesystem::path dir = cache_dir(o);
    if (!dir.empty()) {
      key = cache_key(p, o);
      file = dir / (runtime::content_hash(key) + "_" + o.arch + ".loomcuda");
    }
    if (!file.empty() && read_cache(p, file, key)) {
      apply_registers(p, o);
      return;
    }
  }
  const Nvrtc& nv = nvrtc();
  auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram prog = nullptr;
  check(nv.CreateProgram(&prog, p.source.c_str(), "loom_kernels.cu", 0, nullptr, nullptr), "creating a program");
  struct Destroy {  // on every way out, errors included
    const Nvrtc& nv;
    nvrtcProgram& prog;
    ~Destroy() { nv.DestroyProgram(&prog); }
  } destroy{nv, prog};
  std::vector<std::string> opts = nvrtc_options(o);
  std::vector<const char*> copts;
  for (auto& s : opts) copts.push_back(s.c_str());
  nvrtcResult r = nv.CompileProgram(prog, int(copts.size()), copts.data());
  size_t n = 0;
  nv.GetProgramLogSize(prog, &n);
  std::string log(n, '\0');
  if (n) nv.GetProgramLog(prog, log.data());
  while (!log.empty() && log.back() == '\0') log.pop_back();
  if (r != NVRTC_SUCCESS) {
    LOOM_THROW(CodegenError, "NVRTC could not compile the CUDA C of ", p.functions.empty() ? "?" : p.functions[0].name,
               " for ", o.arch, ":\n", log);
  }
  size_t ptx_n = 0, cubin_n = 0;
  check(nv.GetPTXSize(prog, &ptx_n), "reading the PTX size");
  p.ptx.assign(ptx_n, '\0');
  check(nv.GetPTX(prog, p.ptx.data()), "reading the PTX");
  while (!p.ptx.empty() && p.ptx.back() == '\0') p.ptx.pop_back();
  check(nv.GetCUBINSize(prog, &cubin_n), "reading the cubin size");
  p.cubin.assign(cubin_n, '\0');
  check(nv.GetCUBIN(prog, p.cubin.data()), "reading the cubin");
  p.compile_log = log;
  p.arch = o.arch;
  g_last_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  apply_registers(p, o);
  if (!file.empty()) runtime::write_cache_entry(file, p.serialize(), key);  // one not written only costs time
}

}  // namespace loom::codegen::cuda
