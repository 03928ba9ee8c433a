#include "model_artifacts.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "files.h"
#include "loom/accel/config.h"
#include "loom/frontend/load.h"
#include "loom/graph/build.h"
#include "loom/graph/quantize.h"
#include "loom/regress/runner.h"
#include "loom/runtime/error.h"

namespace loom::regress {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// What every model job quantizes with: 4 random calibration inputs from the model's input
// distribution, and as many held-out ones for the report.
constexpr const char* kCalibration = "4";

void save_atomically(const fs::path& p, const runtime::ModelFile& m) {
  replace_atomically(p, [&](const fs::path& tmp) { runtime::save_model_file(tmp.string(), m); });
}

// An exclusive lock on `path` for the scope (flock: released by the kernel if the job dies).
class FileLock {
 public:
  explicit FileLock(const fs::path& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ < 0) LOOM_THROW(RuntimeError, "cannot open the lock '", path.string(), "'");
    while (flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) LOOM_THROW(RuntimeError, "cannot lock '", path.string(), "'");
  }
  ~FileLock() { ::close(fd_); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

json calibration_json(const std::vector<graph::PointCalibration>& c) {
  json a = json::array();
  for (const auto& p : c) a.push_back({p.node, p.max_abs, p.threshold, p.exponent});
  return a;
}

std::vector<graph::PointCalibration> calibration_from(const json& a) {
  std::vector<graph::PointCalibration> c;
  for (const json& p : a)
    c.push_back({p.at(0).get<int>(), p.at(1).get<double>(), p.at(2).get<double>(), p.at(3).get<int>(), {}});
  return c;
}

graph::Graph load_float(const Workload& w) { return frontend::load_model(w.target, 1, w.image ? w.image : 224); }

std::vector<std::string> distributions(const graph::Graph& g) {
  std::vector<std::string> d;
  for (size_t k = 0; k < g.inputs.size(); ++k) d.push_back(frontend::input_distribution(g, k).str());
  return d;
}

}  // namespace

ModelArtifacts model_artifacts(const JobSpec& job, const Workload& w, const fs::path& artifacts) {
  accel::AccelConfig cfg = accel::AccelConfig::from_json(job.config.dump(), "config '" + job.config_name + "'");
  ModelArtifacts a;
  graph::QuantizeOptions qo;
  if (artifacts.empty()) {  // not shared: everything here
    graph::Graph g = load_float(w);
    frontend::CalibrationSets sets = frontend::calibration_sets(kCalibration, "auto", g);
    graph::QuantizeResult q = graph::quantize_checked(g, sets.calibration, sets.held_out, qo);
    a.quantization = json::parse(q.report->to_json());
    a.input_distributions = distributions(g);
    a.float_model = graph::build(g, {}).file;
    a.cpu_int8 = graph::build(q.graph, {}).file;
    graph::BuildOptions bo;
    bo.accel = cfg;
    a.accel = graph::build(q.graph, bo).file;
    a.note = "quantized and compiled in this job";
    return a;
  }
  // The model's identity: a built-in's name and image size, or the ONNX file's contents.
  const bool file = fs::is_regular_file(w.target);
  const std::string model_id = (file ? "file " + content_hash(read_file(w.target)) : "builtin " + w.target) + "@" +
                               std::to_string(w.image) + " calibrate " + kCalibration + " " + loom_build_id();
  const fs::path dir = artifacts / ("model-" + content_hash(model_id));
  fs::create_directories(dir);
  std::optional<graph::Graph> g;
  std::vector<graph::PointCalibration> calibration;
  bool built_here = false;
  {
    FileLock lock(artifacts / ("model-" + content_hash(model_id) + ".lock"));
    if (!fs::exists(dir / "calibration.json")) {
      g = load_float(w);
      frontend::CalibrationSets sets = frontend::calibration_sets(kCalibration, "auto", *g);
      graph::QuantizeResult q = graph::quantize_checked(*g, sets.calibration, sets.held_out, qo);
      save_atomically(dir / "float.loom", graph::build(*g, {}).file);
      save_atomically(dir / "cpu_int8.loom", graph::build(q.graph, {}).file);
      write_atomically(dir / "report.json", q.report->to_json());
      write_atomically(dir / "inputs.json", json(distributions(*g)).dump());
      write_atomically(dir / "calibration.json", calibration_json(q.calibration).dump());  // last: complete
      built_here = true;
    }
    calibration = calibration_from(json::parse(read_file(dir / "calibration.json")));
  }
  a.float_model = runtime::load_model_file((dir / "float.loom").string());
  a.cpu_int8 = runtime::load_model_file((dir / "cpu_int8.loom").string());
  a.quantization = json::parse(read_file(dir / "report.json"));
  a.input_distributions = json::parse(read_file(dir / "inputs.json")).get<std::vector<std::string>>();
  const std::string accel_key = content_hash(cfg.to_json());
  const fs::path accel_file = dir / ("accel-" + accel_key + ".loom");
  bool accel_here = false;
  {
    FileLock lock(dir / ("accel-" + accel_key + ".lock"));
    if (!fs::exists(accel_file)) {
      if (!g) g = load_float(w);
      graph::BuildOptions bo;
      bo.accel = cfg;
      save_atomically(accel_file, graph::build(graph::quantize_calibrated(*g, calibration, qo).graph, bo).file);
      accel_here = true;
    }
  }
  a.accel = runtime::load_model_file(accel_file.string());
  a.note = std::string(built_here ? "quantized here" : "quantization shared") + ", " +
           (accel_here ? "compiled for the config here" : "accelerator build shared") + " (" + dir.string() + ")";
  return a;
}

}  // namespace loom::regress
