// NVRTC: CUDA C to PTX and a cubin in one compilation (a real architecture keeps the PTX too), with
// ptxas' verbose report parsed for each kernel's registers; an on-disk cache of compiled programs.
#include <nvrtc.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "loom/codegen/cuda.h"
#include "loom/runtime/env.h"

namespace loom::codegen::cuda {

namespace {

double g_last_seconds = 0;

void check(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) LOOM_THROW(CodegenError, "NVRTC ", what, ": ", nvrtcGetErrorString(r));
}

std::vector<std::string> nvrtc_options(const CudaOptions& o) {
  std::vector<std::string> opts = {"--gpu-architecture=" + o.arch, "--ptxas-options=-v", "-std=c++17"};
  if (o.fast_math) opts.push_back("--use_fast_math");
  return opts;
}

std::filesystem::path cache_dir(const CudaOptions& o) {
  if (!o.cache_dir.empty()) return o.cache_dir;
  if (auto d = runtime::env::text("LOOM_CUDA_CACHE")) return *d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "loom" / "cuda";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "loom" / "cuda";
  return {};
}

// FNV-1a over everything that decides the compiled code.
std::string cache_key(const runtime::CudaProgram& p, const CudaOptions& o) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  };
  mix(p.source);
  mix(nvrtc_version());
  for (auto& opt : nvrtc_options(o)) mix(opt);
  std::ostringstream os;
  os << std::hex << h;
  return os.str() + "_" + o.arch;
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

bool read_cache(runtime::CudaProgram& p, const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return false;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    runtime::CudaProgram c = runtime::CudaProgram::deserialize(bytes, file.string());
    if (c.source != p.source || c.arch != p.arch) return false;  // a hash collision: compile
    p.ptx = std::move(c.ptx);
    p.cubin = std::move(c.cubin);
    p.compile_log = std::move(c.compile_log);
    return true;
  } catch (const Error&) {
    return false;  // a damaged entry is compiled again and overwritten
  }
}

void write_cache(const runtime::CudaProgram& p, const std::filesystem::path& file) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) return;  // a cache that cannot be written only costs time
  std::filesystem::path tmp = file;
  tmp += ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    std::string bytes = p.serialize();
    out.write(bytes.data(), std::streamsize(bytes.size()));
    if (!out) return;
  }
  std::filesystem::rename(tmp, file, ec);  // atomic: concurrent compilers never see half a file
}

}  // namespace

bool nvrtc_enabled() { return true; }

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "";
  return std::to_string(major) + "." + std::to_string(minor);
}

double last_compile_seconds() { return g_last_seconds; }

void compile(runtime::CudaProgram& p, const CudaOptions& o) {
  g_last_seconds = 0;
  static const std::regex arch(R"(sm_[0-9]{2,3}a?)");
  if (!std::regex_match(o.arch, arch))
    LOOM_THROW(CodegenError, "CUDA architecture '", o.arch, "' is not sm_<major><minor> (e.g. sm_90, sm_90a)");
  std::filesystem::path file;
  if (o.use_cache) {
    std::filesystem::path dir = cache_dir(o);
    if (!dir.empty()) file = dir / (cache_key(p, o) + ".loomcuda");
    if (!file.empty() && read_cache(p, file)) {
      apply_registers(p, o);
      return;
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram prog = nullptr;
  check(nvrtcCreateProgram(&prog, p.source.c_str(), "loom_kernels.cu", 0, nullptr, nullptr), "creating a program");
  std::vector<std::string> opts = nvrtc_options(o);
  std::vector<const char*> copts;
  for (auto& s : opts) copts.push_back(s.c_str());
  nvrtcResult r = nvrtcCompileProgram(prog, int(copts.size()), copts.data());
  size_t n = 0;
  nvrtcGetProgramLogSize(prog, &n);
  std::string log(n, '\0');
  if (n) nvrtcGetProgramLog(prog, log.data());
  while (!log.empty() && log.back() == '\0') log.pop_back();
  if (r != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    LOOM_THROW(CodegenError, "NVRTC could not compile the CUDA C of ", p.functions.empty() ? "?" : p.functions[0].name,
               " for ", o.arch, ":\n", log);
  }
  size_t ptx_n = 0, cubin_n = 0;
  check(nvrtcGetPTXSize(prog, &ptx_n), "reading the PTX size");
  p.ptx.assign(ptx_n, '\0');
  check(nvrtcGetPTX(prog, p.ptx.data()), "reading the PTX");
  while (!p.ptx.empty() && p.ptx.back() == '\0') p.ptx.pop_back();
  check(nvrtcGetCUBINSize(prog, &cubin_n), "reading the cubin size");
  p.cubin.assign(cubin_n, '\0');
  check(nvrtcGetCUBIN(prog, p.cubin.data()), "reading the cubin");
  nvrtcDestroyProgram(&prog);
  p.compile_log = log;
  p.arch = o.arch;
  g_last_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  apply_registers(p, o);
  if (!file.empty()) write_cache(p, file);
}

}  // namespace loom::codegen::cuda
