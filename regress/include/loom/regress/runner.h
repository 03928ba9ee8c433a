// `loom regress`: runs a manifest's jobs in rounds. Each round hands the jobs still to run (not
// cached, or to be retried) to an executor; each job runs as `loom regress --worker`, which writes
// the job's folder (log.txt, outputs, result.json). A job whose result.json holds a pass under the
// same cache key (its description, the contents of its files, Loom's build) is not run again, so a
// runner killed and restarted resumes where it stopped.
#pragma once
#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/runtime/disk_cache.h"

#include "loom/regress/job.h"
#include "loom/regress/manifest.h"
#include "loom/regress/report.h"

namespace loom::regress {

// Set by the runner's SIGINT/SIGTERM handler: the executors stop and cancel what runs.
std::atomic<bool>& interrupted();
// "interrupted (Ctrl-C)" or "interrupted (SIGTERM)": what stopped the run, for the reports.
std::string interruption();

// Slurm submission options, passed through to sbatch.
struct SlurmOptions {
  std::string partition, account, time;  // time: sbatch --time (default: from the longest job limit)
  int max_running = 0;                   // the array's %limit (0: no limit)
  int max_array = 1000;                  // tasks per array (Slurm's MaxArraySize is 1001 by default)
  int pack = 1;                          // jobs per array task, run one after the other (short jobs)
  std::vector<std::string> sbatch_args;  // anything else, verbatim
  double poll_s = 1.0;                   // squeue interval
  double pending_timeout_s = 0;          // give up on tasks no node can run for this long (0: wait)
};

struct RunOptions {
  std::filesystem::path out;  // the work folder: jobs/NAME/, rounds/, slurm/, reports
  std::string executor = "local";
  int jobs = 0;  // local: processes at once (0: the cores)
  bool force = false, quiet = false;
  std::vector<std::string> only;  // run only jobs whose name contains one of these
  std::string loom;               // the loom executable the workers run (default: this program)
  // The jobs' RTL devices run the coverage build and the run merges their coverage (JobSpec::rtl_coverage).
  bool coverage = false;
  SlurmOptions slurm;
};

// One round of jobs to run: the worker runs task k of round r as job tasks[k].
struct Round {
  int index = 0;
  std::filesystem::path file;  // rounds/R.jsonl: one job per line, with its cache key and attempt
  std::vector<JobSpec> tasks;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;
  // Runs every task of the round (a task that dies without a result is the runner's to notice).
  // Returns "" or why it stopped early (interrupted, no node can run the tasks).
  virtual std::string run(const Round& round) = 0;
  // Why task k of the round ended without a result (what the cluster knows of it).
  virtual std::string lost_reason(const Round&, size_t) { return "its worker process died"; }
  // Before the first round: jobs a killed runner left running (a Slurm array) are waited for.
  // Returns that runner's id, whose results count as this run's (nullopt: nothing to resume); sets
  // `stop` if the wait ended early (interrupted, the cluster does not answer).
  virtual std::optional<std::string> resume(std::string& stop) {
    (void)stop;
    return std::nullopt;
  }
  // Whether task k's result may yet appear (its task completed on a node whose writes this
  // machine may see late), and how long to wait for it (a shared file system's attribute cache).
  virtual bool result_may_appear(const Round&, size_t) { return false; }
  virtual double result_grace_s() const { return 0; }
};

std::unique_ptr<Executor> make_local_executor(const RunOptions& o);
std::unique_ptr<Executor> make_slurm_executor(const RunOptions& o);  // Error if sbatch/squeue are missing

// Runs the manifest; returns the exit code (0 all passed, 1 failures, 3 incomplete, 130 interrupted).
int run_regression(const Manifest& m, const RunOptions& o);

// `loom regress --worker DIR --round R --task K [--count N]`: runs tasks K .. K+N-1 of the round
// one after the other, each writing its job's result.json.
int run_worker(const std::filesystem::path& dir, int round, int task, int count, bool die_with_parent);

// The status in job `name`'s result.json under work folder `out` ("pass", "fail", ...), or "" while
// it has none (what the executors' progress lines count).
std::string job_status(const std::filesystem::path& out, const std::string& name);

// The outcome job `job` left in work folder `out` under its present cache key (this build, its
// files as they are now), if it finished (passed or failed); what a caller that submitted typed
// jobs reads back (loom dse's points).
std::optional<JobOutcome> finished_outcome(const std::filesystem::path& out, const JobSpec& job);

// FNV-1a of `text` (64 bits, hex): stable across runs and machines (one hash for every id).
using runtime::content_hash;

// The cache key of a job: its description, its files' contents and this Loom build.
std::string cache_key(const JobSpec& job);
// This build of Loom: its version and a hash of the loaded Loom binaries. A runner whose workers
// are another program (Python's loom.regress.run runs the `loom` executable) takes their build
// instead: run_regression asks the workers' executable (`loom regress --build-id`) and keys
// results by its answer.
const std::string& loom_build_id();

}  // namespace loom::regress
