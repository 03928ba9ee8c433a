// CudaProgram's binary form: "LOOMCUDA", a u32 version, then five u64-length-prefixed strings:
// the description (JSON: arch, functions with arguments, workspaces and kernels), the CUDA C
// source, the PTX, the cubin and the compile log.
#include <cstring>

#include <nlohmann/json.hpp>

#include "loom/runtime/cuda.h"
#include "loom/runtime/error.h"

namespace loom::runtime {

using nlohmann::json;

namespace {

constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'C', 'U', 'D', 'A'};
constexpr uint32_t kVersion = 1;

void put_u64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }

json describe(const CudaProgram& p) {
  json fns = json::array();
  for (auto& f : p.functions) {
    json args = json::array(), kernels = json::array();
    for (auto& a : f.args) args.push_back({{"name", a.name}, {"shape", a.shape}, {"dtype", a.dtype.str()}});
    for (auto& k : f.kernels)
      kernels.push_back({{"name", k.name},
                         {"grid", k.grid},
                         {"block", k.block},
                         {"shared_bytes", k.shared_bytes},
                         {"buffers", k.buffers},
                         {"registers", k.registers}});
    fns.push_back({{"name", f.name}, {"args", args}, {"workspace_bytes", f.workspace_bytes}, {"kernels", kernels}});
  }
  return {{"arch", p.arch}, {"functions", fns}};
}

void check_program(const CudaProgram& p, const std::string& origin) {
  for (auto& f : p.functions) {
    size_t nbuf = f.args.size() + f.workspace_bytes.size();
    for (auto& k : f.kernels) {
      uint64_t threads = 1;
      for (int d = 0; d < 3; ++d) {
        if (k.grid[d] == 0 || k.block[d] == 0)
          LOOM_THROW(ModelError, origin, ": kernel ", k.name, " has an empty launch dimension");
        threads *= k.block[d];
      }
      if (threads > 1024)
        LOOM_THROW(ModelError, origin, ": kernel ", k.name, " asks for ", threads, " threads per block");
      for (uint32_t b : k.buffers)
        if (b >= nbuf)
          LOOM_THROW(ModelError, origin, ": kernel ", k.name, " takes buffer ", b, " of function ", f.name, "'s ",
                     nbuf);
    }
  }
}

}  // namespace

const CudaFunction& CudaProgram::function(const std::string& name) const {
  std::string names;
  for (auto& f : functions) {
    if (f.name == name) return f;
    names += (names.empty() ? "" : ", ") + f.name;
  }
  LOOM_THROW(RuntimeError, "CUDA program has no function '", name, "' (it has: ", names, ")");
}

std::string CudaProgram::serialize() const {
  std::string out(kMagic, 8);
  out.append(reinterpret_cast<const char*>(&kVersion), 4);
  const std::string meta = describe(*this).dump();
  for (const std::string* s : {&meta, &source, &ptx, &cubin, &compile_log}) {
    put_u64(out, s->size());
    out += *s;
  }
  return out;
}

CudaProgram CudaProgram::deserialize(const std::string& bytes, const std::string& origin) {
  if (bytes.size() < 12 || std::memcmp(bytes.data(), kMagic, 8) != 0)
    LOOM_THROW(ModelError, origin, ": not a CUDA program (no LOOMCUDA header)");
  uint32_t version = 0;
  std::memcpy(&version, bytes.data() + 8, 4);
  if (version != kVersion)
    LOOM_THROW(ModelError, origin, ": CUDA program format version ", version, " (this runtime reads ", kVersion, ")");
  size_t pos = 12;
  std::string parts[5];
  for (auto& part : parts) {
    uint64_t n = 0;
    if (bytes.size() - pos < 8) LOOM_THROW(ModelError, origin, ": CUDA program is truncated");
    std::memcpy(&n, bytes.data() + pos, 8);
    pos += 8;
    if (n > bytes.size() - pos) LOOM_THROW(ModelError, origin, ": CUDA program is truncated");
    part = bytes.substr(pos, n);
    pos += n;
  }
  if (pos != bytes.size()) LOOM_THROW(ModelError, origin, ": CUDA program has ", bytes.size() - pos, " trailing bytes");
  CudaProgram p;
  try {
    json j = json::parse(parts[0]);
    p.arch = j.at("arch").get<std::string>();
    for (auto& jf : j.at("functions")) {
      CudaFunction f;
      f.name = jf.at("name").get<std::string>();
      for (auto& a : jf.at("args"))
        f.args.push_back({a.at("name").get<std::string>(), a.at("shape").get<std::vector<int64_t>>(),
                          DataType::parse(a.at("dtype").get<std::string>())});
      f.workspace_bytes = jf.at("workspace_bytes").get<std::vector<uint64_t>>();
      for (auto& jk : jf.at("kernels")) {
        CudaKernelSpec k;
        k.name = jk.at("name").get<std::string>();
        k.grid = jk.at("grid").get<std::array<uint32_t, 3>>();
        k.block = jk.at("block").get<std::array<uint32_t, 3>>();
        k.shared_bytes = jk.at("shared_bytes").get<uint32_t>();
        k.buffers = jk.at("buffers").get<std::vector<uint32_t>>();
        k.registers = jk.at("registers").get<int>();
        f.kernels.push_back(std::move(k));
      }
      p.functions.push_back(std::move(f));
    }
  } catch (const json::exception& e) {
    LOOM_THROW(ModelError, origin, ": malformed CUDA program description: ", e.what());
  } catch (const TypeError& e) {
    LOOM_THROW(ModelError, origin, ": malformed CUDA program description: ", e.what());
  }
  p.source = std::move(parts[1]);
  p.ptx = std::move(parts[2]);
  p.cubin = std::move(parts[3]);
  p.compile_log = std::move(parts[4]);
  check_program(p, origin);
  return p;
}

}  // namespace loom::runtime
