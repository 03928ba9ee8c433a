// `loom regress MANIFEST`: simulation regressions. The manifest's jobs (workloads x configs x
// backends, each with an expected outcome) run on the local cores or as a Slurm job array; results
// are cached by their inputs, and merge into JUnit XML, CSV and Markdown reports (docs/regress.md).
#ifdef LOOM_HAVE_REGRESS
#include <filesystem>
#include <iostream>

#include "cli.h"
#include "command.h"
#include "loom/regress/job.h"
#include "loom/regress/manifest.h"
#include "loom/regress/runner.h"
#include "loom/runtime/error.h"

namespace loom::tools {

namespace {

int regress_cmd(const std::vector<std::string>& args) {
  CLI::App app{
      "Run a regression manifest (workloads x accelerator configs x backends, each with an expected outcome) on the "
      "local cores or on a Slurm cluster; JUnit XML, CSV and Markdown reports",
      "loom regress"};
  std::string manifest, out;
  regress::RunOptions o;
  bool slurm = false, local = false, list = false;
  app.add_option("manifest", manifest, "the manifest (JSON, or YAML as .yaml/.yml; docs/regress.md)")
      ->check(CLI::ExistingFile);
  app.add_option("--out", out,
                 "the work folder: jobs/NAME/{log.txt,result.json,outputs}, reports (default: "
                 "MANIFEST's name with .regress)");
  app.add_flag("--local", local, "run the jobs as processes on this machine (the default)");
  app.add_flag("--slurm", slurm, "run the jobs as one Slurm job array per round (sbatch, squeue, scancel)");
  number_option(app, "-j,--jobs", o.jobs, "--local: jobs at once (default: the cores)", 1, 4096);
  app.add_flag("--force", o.force, "run every job, cached passes too");
  app.add_flag("--coverage", o.coverage,
               "jobs on the rtl backend simulate its coverage build; the run merges their line, branch, toggle and "
               "cover-property counts with the random programs' ISA bins into rtl_coverage.dat, coverage.json, "
               "coverage.html and report.md (docs/regress.md)");
  app.add_option("--only", o.only, "run only the jobs whose name contains this (repeat for more)");
  app.add_flag("--list", list, "print the jobs the manifest expands to, and run nothing");
  app.add_flag("-q,--quiet", o.quiet, "no progress bar; print only failures");
  app.add_option("--partition", o.slurm.partition, "--slurm: sbatch --partition");
  app.add_option("--account", o.slurm.account, "--slurm: sbatch --account");
  app.add_option("--time", o.slurm.time,
                 "--slurm: sbatch --time of each task (default: the longest job limit plus a minute)");
  number_option(app, "--max-running", o.slurm.max_running, "--slurm: tasks of the array running at once", 1, 100000);
  number_option(app, "--max-array", o.slurm.max_array,
                "--slurm: tasks per job array (more jobs: more arrays; the cluster's MaxArraySize bounds it)", 1,
                10000000)
      ->capture_default_str();
  number_option(app, "--pack", o.slurm.pack,
                "--slurm: jobs per array task, run one after the other (amortizes the scheduler's delay over short "
                "jobs)",
                1, 100000)
      ->capture_default_str();
  app.add_option("--sbatch-arg", o.slurm.sbatch_args, "--slurm: another sbatch option, verbatim (repeat for more)");
  number_option(app, "--poll", o.slurm.poll_s, "--slurm: seconds between squeue polls", 0.05, 600.0)
      ->capture_default_str();
  number_option(app, "--pending-timeout", o.slurm.pending_timeout_s,
                "--slurm: give up on tasks that no node can run (drained, down) after this many seconds (default: "
                "wait)",
                1.0, 1e7);
  // What a local process or a Slurm task runs: one job of a round.
  std::string worker;
  int round = 0, task = 0;
  bool die_with_parent = false;
  app.add_option("--worker", worker, "(internal) run one task of a round in this work folder");
  number_option(app, "--round", round, "(internal) --worker: the round", 0, 1 << 30);
  number_option(app, "--task", task, "(internal) --worker: the task", 0, 1 << 30);
  int count = 1;
  number_option(app, "--count", count, "(internal) --worker: tasks from --task on", 1, 1 << 30);
  app.add_flag("--die-with-parent", die_with_parent, "(internal) --worker: stop when the runner dies");
  bool build_id = false;
  app.add_flag("--build-id", build_id,
               "(internal) print the build of Loom this executable's jobs run under (what results are keyed by)");
  if (int rc = parse(app, args); rc >= 0) return rc;

  if (build_id) {
    std::cout << regress::loom_build_id() << "\n";
    return 0;
  }
  if (!worker.empty()) return regress::run_worker(worker, round, task, count, die_with_parent);
  if (manifest.empty()) LOOM_THROW(Error, "loom regress needs a manifest (see docs/regress.md)");
  if (slurm && local) LOOM_THROW(Error, "--local and --slurm: choose one executor");
  o.executor = slurm ? "slurm" : "local";
  if (!slurm)
    for (const char* opt : {"--partition", "--account", "--time", "--max-running", "--max-array", "--pack",
                            "--sbatch-arg", "--poll", "--pending-timeout"})
      if (app.count(opt)) LOOM_THROW(Error, opt, " applies to --slurm");
  if (slurm && app.count("--jobs")) LOOM_THROW(Error, "--jobs applies to --local (on Slurm: --max-running)");
  regress::Manifest m = regress::load_manifest(manifest);
  if (list) {
    size_t blocked = 0;
    for (const regress::JobSpec& j : m.jobs) {
      std::string problem = regress::job_problem(j);
      blocked += !problem.empty();
      std::cout << j.name << "  " << j.workload << (problem.empty() ? "" : "  [cannot run: " + problem + "]") << "\n";
    }
    std::cout << m.jobs.size() << " jobs" << (blocked ? ", " + std::to_string(blocked) + " cannot run here" : "")
              << "\n";
    return blocked ? 1 : 0;
  }
  o.out = out.empty() ? std::filesystem::path(manifest).stem().string() + ".regress" : out;
  o.out = std::filesystem::absolute(o.out);
  if (std::filesystem::exists(o.out) && !std::filesystem::is_directory(o.out))
    LOOM_THROW(Error, "--out '", o.out.string(), "' is a file, not a folder");
  return regress::run_regression(m, o);
}

}  // namespace

LOOM_REGISTER_COMMAND("regress",
                      "run a regression manifest (workloads x configs x backends) locally or on Slurm, with cached "
                      "results and JUnit/CSV/Markdown reports",
                      regress_cmd);

}  // namespace loom::tools
#endif
