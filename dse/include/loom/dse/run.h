// Running a sweep's points: on threads of this process, or as typed `dse-point` jobs of a
// regression run (loom regress's local process pool or a Slurm job array, with its cache: a point
// this build already computed is not run again). Either way each point's result is the same.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "loom/dse/sweep.h"
#include "loom/regress/manifest.h"
#include "loom/regress/runner.h"

namespace loom::dse {

struct SweepRunOptions {
  std::string executor = "threads";  // threads, local or slurm
  int jobs = 1;                      // points at once (threads, local)
  bool quiet = false;                // no progress bar
  regress::RunOptions regress;       // local, slurm: the regression run's options (its out is set here)
};

struct SweepRun {
  int exit_code = 0;    // 0, or the regression run's when it did not finish (3 incomplete, 130 interrupted)
  std::string missing;  // the points without a result, by job name
};

// Fills every point's result. `out` is the sweep's folder (regress/ inside for local and slurm).
SweepRun run_sweep(std::vector<Point>& points, const std::filesystem::path& out, const SweepRunOptions& o);

// The regression job of a point: kind dse-point, backend perf, the point's config and the perf
// options of its run parameters, named and found by the point's id alone.
regress::JobSpec point_job(const Point& p);
// The point a dse-point job describes (Error naming the job).
PointSpec point_spec(const regress::JobSpec& job);

// `loom dse --run-job FILE`: the point on line `line` of a points.jsonl (or the one whose id is
// `id`), run as the sweep ran it; its result with the id.
nlohmann::json run_job_line(const std::string& file, int line, const std::string& id);

}  // namespace loom::dse
