#include "loom/dse/run.h"

#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>

#include "loom/regress/progress.h"
#include "loom/runtime/error.h"

namespace loom::dse {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void run_on_threads(std::vector<Point>& points, const SweepRunOptions& o) {
  const Workload work = Workload::from(points.front().spec.workload, points.front().spec.evaluation.accuracy_inputs);
  std::atomic<size_t> next{0}, done{0};
  std::mutex print;
  auto worker = [&] {
    for (size_t i; (i = next++) < points.size();) {
      points[i].result = run_point(points[i].spec, work);
      size_t d = ++done;
      std::lock_guard<std::mutex> lock(print);
      regress::draw_progress(o.quiet, d, points.size(), 0, 0);
    }
  };
  std::vector<std::thread> pool;
  for (int k = 0; k < std::min<int>(std::max(1, o.jobs), int(points.size())); ++k) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  regress::end_progress(o.quiet);
}

SweepRun run_as_jobs(std::vector<Point>& points, const fs::path& out, const SweepRunOptions& o) {
  regress::Manifest m;
  m.name = "dse";
  m.path = (out / "points.jsonl").string();
  for (const Point& p : points) m.jobs.push_back(point_job(p));
  regress::RunOptions ro = o.regress;
  ro.executor = o.executor;
  ro.jobs = o.jobs;
  ro.quiet = o.quiet;
  ro.out = fs::absolute(out / "regress");
  SweepRun run;
  run.exit_code = regress::run_regression(m, ro);
  for (size_t i = 0; i < points.size(); ++i) {
    std::optional<regress::JobOutcome> outcome = regress::finished_outcome(ro.out, m.jobs[i]);
    if (outcome && outcome->status == "pass") {
      try {
        points[i].result = PointResult::from_json(outcome->metrics);
        if (points[i].result.legal) summarize(points[i].result, points[i].spec.config);
        continue;
      } catch (const Error&) {  // metrics that are no point's result: as if it had none
      }
    }
    points[i].result = PointResult{};
    points[i].result.reason = "no result: see " + (ro.out / "jobs" / m.jobs[i].name / "log.txt").string();
    points[i].missing = true;
    run.missing += (run.missing.empty() ? "" : ", ") + m.jobs[i].name;
  }
  return run;
}

}  // namespace

SweepRun run_sweep(std::vector<Point>& points, const fs::path& out, const SweepRunOptions& o) {
  if (points.empty()) return {};
  if (o.executor == "threads") {
    run_on_threads(points, o);
    return {};
  }
  if (o.executor != "local" && o.executor != "slurm")
    LOOM_THROW(Error, "executor '", o.executor, "': expected threads, local or slurm");
  return run_as_jobs(points, out, o);
}

json run_job_line(const std::string& file, int line, const std::string& id) {
  std::ifstream f(file);
  if (!f) LOOM_THROW(Error, "cannot read '", file, "'");
  json j;
  int found = 0;
  std::string text;
  for (int k = 1; std::getline(f, text); ++k) {
    if (id.empty() && k != line) continue;
    try {
      j = json::parse(text);
    } catch (const std::exception& e) {
      if (!id.empty()) continue;  // looking for an id: a line that is not JSON is not it
      LOOM_THROW(Error, "--run-job '", file, "' line ", k, ": not JSON: ", e.what());
    }
    if (!id.empty() && !(j.is_object() && j.value("id", json()) == id)) continue;
    found = k;
    break;
  }
  if (!found) {
    if (!id.empty()) LOOM_THROW(Error, "--run-job '", file, "' has no point of id ", id);
    LOOM_THROW(Error, "--run-job '", file, "' has no line ", line);
  }
  const std::string where = "--run-job '" + file + "' line " + std::to_string(found);
  if (!j.is_object() || !j.contains("job")) LOOM_THROW(Error, where, ": expected {\"id\", \"job\": {...}}");
  PointSpec spec = PointSpec::from_json(j["job"], where);
  if (j.contains("id") && j["id"] != spec.id())
    LOOM_THROW(Error, where, ": id ", j["id"].dump(), " is not the description's (", spec.id(),
               "): the job was edited");
  json r = run_point(spec, Workload::from(spec.workload, spec.evaluation.accuracy_inputs)).to_json();
  r["id"] = spec.id();
  return r;
}

}  // namespace loom::dse
