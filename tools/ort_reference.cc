#include "ort_reference.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "loom/runtime/error.h"
#include "loom/runtime/spawn.h"

namespace loom::tools {

namespace fs = std::filesystem;

namespace {

// The folder holding node_modules/onnxruntime-node.
std::string ort_dir() {
  if (const char* d = std::getenv("LOOM_ORT_DIR")) return d;
#ifdef LOOM_DEFAULT_ORT_DIR
  return LOOM_DEFAULT_ORT_DIR;
#else
  return "";
#endif
}

// node on PATH, or "".
std::string find_node() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && ::access((fs::path(d) / "node").c_str(), X_OK) == 0) return (fs::path(d) / "node").string();
  return "";
}

// Reads job.json and model.onnx in the folder given (onnxruntime-node from the second argument's
// node_modules), runs the model with graph optimizations off (the values are the operators' own)
// or, when the job says so, all on (QDQ groups fused into int8 kernels), writes each output asked for as raw bytes and
// result.json.
constexpr const char* kRunner = R"js('use strict';
const fs = require('fs'), path = require('path');
const ortDir = process.argv[3];
const ort = require(path.join(ortDir, 'node_modules', 'onnxruntime-node'));
const arrays = {float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array, int16: Int16Array,
                int32: Int32Array, int64: BigInt64Array, bool: Uint8Array};
async function main() {
  const work = process.argv[2];
  const job = JSON.parse(fs.readFileSync(path.join(work, 'job.json')));
  const session = await ort.InferenceSession.create(path.join(work, 'model.onnx'),
      {graphOptimizationLevel: job.optimize ? 'all' : 'disabled', intraOpNumThreads: 1, interOpNumThreads: 1});
  const feeds = {};
  for (const x of job.inputs) {
    const b = fs.readFileSync(path.join(work, x.file));
    const data = new arrays[x.type](b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
    feeds[x.name] = new ort.Tensor(x.type, data, x.dims);
  }
  const results = await session.run(feeds, job.outputs);
  const outputs = job.outputs.map((name, k) => {
    const t = results[name], file = 'out' + k + '.bin';
    fs.writeFileSync(path.join(work, file), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    return {name, type: t.type, dims: t.dims, file};
  });
  const version = require(path.join(ortDir, 'node_modules', 'onnxruntime-node', 'package.json')).version;
  fs.writeFileSync(path.join(work, 'result.json'), JSON.stringify({version, outputs}));
}
main().catch((e) => { console.error(e.message); process.exit(1); });
)js";

std::string ort_type(DataType t) {
  if (t == DataType::Float(32)) return "float32";
  if (t == DataType::Float(64)) return "float64";
  if (t == DataType::Int(8)) return "int8";
  if (t == DataType::UInt(8)) return "uint8";
  if (t == DataType::Int(16)) return "int16";
  if (t == DataType::Int(32)) return "int32";
  if (t == DataType::Int(64)) return "int64";
  if (t.is_bool()) return "bool";
  LOOM_THROW(Error, "ONNX Runtime reference: inputs of type ", t.str(), " are not passed to it");
}

void write_file(const fs::path& p, const void* data, size_t bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(static_cast<const char*>(data), std::streamsize(bytes));
  if (!f) LOOM_THROW(RuntimeError, "ONNX Runtime reference: cannot write '", p.string(), "'");
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

std::string ort_unavailable() {
  if (find_node().empty()) return "`node` is not on PATH (Debian: nodejs)";
  const std::string dir = ort_dir();
  if (dir.empty() || !fs::exists(fs::path(dir) / "node_modules" / "onnxruntime-node" / "package.json"))
    return "onnxruntime-node is not installed in '" + dir +
           "' (scripts/bootstrap.sh installs it there; $LOOM_ORT_DIR names another folder)";
  return "";
}

OrtRun run_ort(const std::string& model_bytes, const std::vector<std::pair<std::string, NDArray>>& inputs,
               const std::vector<std::string>& outputs, bool optimize) {
  if (std::string why = ort_unavailable(); !why.empty()) LOOM_THROW(Error, "ONNX Runtime reference: ", why);
  char tmpl[] = "/tmp/loom-ort-XXXXXX";
  if (!::mkdtemp(tmpl)) LOOM_THROW(RuntimeError, "ONNX Runtime reference: cannot make a scratch folder in /tmp");
  const fs::path work = tmpl;
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } cleanup{work};
  write_file(work / "model.onnx", model_bytes.data(), model_bytes.size());
  write_file(work / "runner.js", kRunner, std::char_traits<char>::length(kRunner));
  nlohmann::json job = {{"outputs", outputs}, {"inputs", nlohmann::json::array()}, {"optimize", optimize}};
  for (size_t k = 0; k < inputs.size(); ++k) {
    const NDArray& a = inputs[k].second;
    const std::string file = "in" + std::to_string(k) + ".bin";
    write_file(work / file, a.raw_data(), a.nbytes());
    job["inputs"].push_back(
        {{"name", inputs[k].first}, {"type", ort_type(a.dtype())}, {"dims", a.shape()}, {"file", file}});
  }
  std::ofstream(work / "job.json") << job.dump();
  runtime::LoggedRun r =
      runtime::run_logged({find_node(), (work / "runner.js").string(), work.string(), fs::absolute(ort_dir()).string()},
                          work / "log.txt", 600);
  if (!r.ok()) {
    std::string log = read_file(work / "log.txt");
    while (!log.empty() && (log.back() == '\n' || log.back() == ' ')) log.pop_back();
    LOOM_THROW(Error, "ONNX Runtime could not run the model: ",
               r.end == runtime::LoggedRun::End::TimedOut ? "it ran past 600 s"
               : log.empty()                              ? r.error
                                                          : log);
  }
  nlohmann::json result = nlohmann::json::parse(read_file(work / "result.json"));
  OrtRun out;
  out.version = result.at("version").get<std::string>();
  for (const auto& o : result.at("outputs")) {
    if (o.at("type") != "float32")
      LOOM_THROW(Error, "ONNX Runtime reference: value '", o.at("name").get<std::string>(), "' is ",
                 o.at("type").get<std::string>(), ", not float32");
    std::vector<int64_t> dims = o.at("dims").get<std::vector<int64_t>>();
    NDArray a = NDArray::empty(dims, DataType::Float(32));
    const std::string bytes = read_file(work / o.at("file").get<std::string>());
    if (bytes.size() != a.nbytes())
      LOOM_THROW(Error, "ONNX Runtime reference: value '", o.at("name").get<std::string>(), "' came back with ",
                 bytes.size(), " bytes for ", a.nbytes());
    std::memcpy(a.raw_data(), bytes.data(), bytes.size());
    out.values.emplace(o.at("name").get<std::string>(), std::move(a));
  }
  return out;
}

}  // namespace loom::tools
