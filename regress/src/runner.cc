#include "loom/regress/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "files.h"
#include "loom/regress/job.h"
#include "loom/regress/job_kind.h"
#include "loom/regress/process.h"
#include "loom/regress/progress.h"
#include "loom/runtime/build_id.h"
#include "loom/runtime/error.h"
#include "loom/runtime/spawn.h"

namespace loom::regress {

namespace fs = std::filesystem;
using nlohmann::json;

std::atomic<bool>& interrupted() {
  static std::atomic<bool> flag{false};
  return flag;
}

static std::atomic<int> interrupting_signal{SIGINT};

std::string interruption() { return interrupting_signal == SIGTERM ? "interrupted (SIGTERM)" : "interrupted (Ctrl-C)"; }

namespace {

std::optional<json> read_json(const fs::path& p) {
  std::string text = read_file(p);
  if (text.empty()) return std::nullopt;
  try {
    return json::parse(text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// A job's result.json, if it is one (an object with the fields the runner reads, of their types)
// for the job `name`; a damaged or foreign file counts as none.
std::optional<json> read_result(const fs::path& p, const std::string& name) {
  auto r = read_json(p);
  if (!r || !r->is_object()) return std::nullopt;
  for (const char* k : {"status", "name", "key", "run"})
    if (!r->contains(k) || !(*r)[k].is_string()) return std::nullopt;
  if (!r->contains("attempt") || !(*r)["attempt"].is_number_integer() || (*r)["name"] != name) return std::nullopt;
  return r;
}

fs::path job_dir(const fs::path& out, const JobSpec& job) { return out / "jobs" / job.name; }

std::string hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// The statuses that mean "the job did not finish on its own": worth another attempt.
bool retryable(const std::string& status) { return status == "crash" || status == "timeout" || status == "lost"; }

void on_signal(int sig) {
  interrupting_signal = sig;
  interrupted() = true;
}
void on_worker_signal(int) { stop_requested() = true; }

}  // namespace

namespace {

// The Loom executable and libraries loaded when this library was: the objects every process of a
// run (runner and workers) has, whatever a job loads later (the systemc backend's module).
const std::vector<runtime::LoadedObject>& loaded_at_start() {
  static const std::vector<runtime::LoadedObject> objects = runtime::loaded_objects("libloom");
  return objects;
}
[[maybe_unused]] const bool snapshot_taken = !loaded_at_start().empty();

}  // namespace

// The workers' build, when they are another program than this one (set by run_regression).
std::string& workers_build_id() {
  static std::string id;
  return id;
}

const std::string& loom_build_id() {
  if (!workers_build_id().empty()) return workers_build_id();
  static const std::string id = [] {
    // Their build-ids (an object without one by its contents), then every other Loom library in
    // their folder by its contents: a rebuild of any of them changes the id.
    std::string all;
    std::set<std::string> named;
    for (const runtime::LoadedObject& o : loaded_at_start()) {
      all += o.path + " " + (o.build_id.empty() ? runtime::binary_digest(read_file(o.path)) : o.build_id) + "\n";
      named.insert(fs::path(o.path).filename().string());
    }
    for (const runtime::LoadedObject& o : loaded_at_start()) {
      if (o.path.find("libloom_regress") == std::string::npos) continue;
      std::error_code ec;
      std::set<fs::path> others;
      for (const auto& e : fs::directory_iterator(fs::path(o.path).parent_path(), ec)) {
        std::string name = e.path().filename().string();
        if (name.rfind("libloom", 0) == 0 && e.path().extension() == ".so" && !named.count(name))
          others.insert(e.path());
      }
      for (const fs::path& f : others) all += f.string() + " " + runtime::binary_digest(read_file(f.string())) + "\n";
    }
    return std::string("0.1+") + content_hash(all);
  }();
  return id;
}

// The digest of a file a job reads, computed once per file, size and modification time in this
// process: a model that a hundred jobs read is read and hashed once, not a hundred times. A file
// changed in the last seconds is hashed every time (a coarse clock may not show its next change).
std::string file_digest(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::string> digests;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  const auto time = ec ? fs::file_time_type() : fs::last_write_time(path, ec);
  if (ec || fs::file_time_type::clock::now() - time < std::chrono::seconds(3)) return content_hash(read_file(path));
  const std::string stamp = path + "\n" + std::to_string(size) + "\n" + std::to_string(time.time_since_epoch().count());
  std::lock_guard<std::mutex> lock(mu);
  auto it = digests.find(stamp);
  if (it == digests.end()) it = digests.emplace(stamp, content_hash(read_file(path))).first;
  return it->second;
}

std::string cache_key(const JobSpec& job) {
  json d = job.to_json();
  d.erase("timeout_s");  // how long a job may take and how often it is retried do not change its result
  d.erase("retries");
  std::string text = d.dump() + "\n" + loom_build_id();
  for (const auto& f : job.files) text += "\n" + f + " " + file_digest(f);
  return content_hash(text);
}

std::string job_status(const fs::path& out, const std::string& name) {
  auto r = read_json(out / "jobs" / name / "result.json");
  return r && r->is_object() && r->contains("status") && (*r)["status"].is_string() ? (*r)["status"].get<std::string>()
                                                                                    : "";
}

std::optional<JobOutcome> finished_outcome(const fs::path& out, const JobSpec& job) {
  auto r = read_result(job_dir(out, job) / "result.json", job.name);
  if (!r || (*r)["key"] != cache_key(job) || ((*r)["status"] != "pass" && (*r)["status"] != "fail"))
    return std::nullopt;
  try {
    return JobOutcome::from_json(*r);
  } catch (const Error&) {
    return std::nullopt;  // a damaged result counts as none
  }
}

namespace {

// Runs the job of one round-file line and writes its result.json; false if the worker was stopped.
bool run_one(const fs::path& dir, const std::string& line) {
  json entry = json::parse(line);
  JobSpec job = JobSpec::from_json(entry.at("job"));
  fs::path jd = job_dir(dir, job);
  fs::create_directories(jd);
  const int attempt = entry.at("attempt").get<int>();
  if (attempt > 1 && fs::exists(jd / "log.txt"))  // keep the earlier attempt's log
    fs::rename(jd / "log.txt", jd / ("log.attempt" + std::to_string(attempt - 1) + ".txt"));
  fs::remove(jd / "outcome.json");
  ChildStatus s = run_forked(
      [&] {
        JobOutcome o = run_job(job, jd, dir / "artifacts");
        write_atomically(jd / "outcome.json", o.to_json().dump());
        return 0;
      },
      (jd / "log.txt").string(), job.timeout_s);
  if (s.kind == ChildStatus::Stopped || stop_requested()) return false;  // no result: reported as not run
  json r;
  std::optional<json> outcome = read_json(jd / "outcome.json");
  if (s.kind == ChildStatus::Exited && s.code == 0 && outcome) {
    r = *outcome;
  } else {
    r = JobOutcome().to_json();
    r["status"] = s.kind == ChildStatus::TimedOut ? "timeout" : s.kind == ChildStatus::Signaled ? "crash" : "error";
    r["message"] = s.kind == ChildStatus::TimedOut ? "the job ran " + s.describe()
                   : s.kind == ChildStatus::Signaled
                       ? "the job process was " + s.describe() + " (see its log)"
                       : "the job process ended with " + s.describe() + " without a result (see its log)";
  }
  r["name"] = job.name;
  r["key"] = entry.at("key");
  r["run"] = entry.at("run");
  r["attempt"] = attempt;
  r["seconds"] = s.seconds;
  r["host"] = hostname();
  r["log"] = (fs::path("jobs") / job.name / "log.txt").string();
  r["build"] = loom_build_id();
  for (const char* v : {"SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_JOB_ID"})
    if (const char* e = std::getenv(v)) r["slurm"][v] = e;
  write_atomically(jd / "result.json", r.dump(1));
  return true;
}

}  // namespace

int run_worker(const fs::path& dir, int round, int task, int count, bool die_with_parent) {
  // A runner killed outright takes its local workers with it; a stopped one (SIGTERM, scancel)
  // has them kill their job's processes and leave without a result.
  if (die_with_parent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) return 1;  // the runner is already gone
  }
  struct sigaction sa = {};
  sa.sa_handler = on_worker_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGCHLD, SIG_DFL);
  fs::path file = dir / "rounds" / (std::to_string(round) + ".jsonl");
  std::ifstream f(file);
  std::string line;
  for (int k = 0; k < task; ++k)
    if (!std::getline(f, line)) LOOM_THROW(Error, "round file '", file.string(), "' has no task ", task);
  // Tasks task .. task+count-1, one after the other (the last array task may have fewer).
  for (int k = 0; k < count && !stop_requested(); ++k) {
    if (!std::getline(f, line)) {
      if (k == 0) LOOM_THROW(Error, "round file '", file.string(), "' has no task ", task);
      break;
    }
    if (!run_one(dir, line)) return 1;
  }
  return stop_requested() ? 1 : 0;
}

namespace {

// What `loom regress --build-id` prints for the executable `loom`: the build its workers key
// results by. Error naming the executable when it does not answer.
std::string ask_build_id(const std::string& loom, const fs::path& scratch) {
  const fs::path log = scratch / "build-id.txt";
  runtime::LoggedRun r = runtime::run_logged({loom, "regress", "--build-id"}, log, 60);
  std::string text = read_file(log.string());
  fs::remove(log);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (!r.ok() || text.rfind("0.1+", 0) != 0 || text.find('\n') != std::string::npos)
    LOOM_THROW(Error, "the workers' executable '", loom, "' did not tell its build (`", loom, " regress --build-id`): ",
               r.ok()                                         ? text
               : r.end == runtime::LoggedRun::End::NotStarted ? r.error
                                                              : text);
  return text;
}

}  // namespace

int run_regression(const Manifest& m, const RunOptions& o) {
  fs::create_directories(o.out / "rounds");
  // One runner per folder: a second one would run the same jobs into the same files.
  fs::path lock_path = o.out / ".lock";
  int lock = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) != 0)
    LOOM_THROW(Error, "another loom regress is running in '", o.out.string(), "' (", lock_path.string(), " is locked)");
  std::unique_ptr<Executor> ex = o.executor == "slurm" ? make_slurm_executor(o) : make_local_executor(o);
  interrupted() = false;
  // Ctrl-C and SIGTERM stop the run; the caller's handlers come back however it ends (a Python
  // runner keeps its KeyboardInterrupt).
  struct SignalGuard {
    struct sigaction old_int = {}, old_term = {};
    SignalGuard() {
      struct sigaction sa = {};
      sa.sa_handler = on_signal;
      sigaction(SIGINT, &sa, &old_int);
      sigaction(SIGTERM, &sa, &old_term);
    }
    ~SignalGuard() {
      sigaction(SIGINT, &old_int, nullptr);
      sigaction(SIGTERM, &old_term, nullptr);
    }
  } signals;
  signal(SIGCHLD, SIG_DFL);  // an inherited SIG_IGN would reap the workers before waitpid sees them

  std::vector<JobSpec> jobs;
  for (const JobSpec& j : m.jobs) {
    bool selected = o.only.empty();
    for (const auto& s : o.only) selected |= j.name.find(s) != std::string::npos;
    if (!selected) continue;
    jobs.push_back(j);
    jobs.back().rtl_coverage = o.coverage && declares_coverage(j.backend);
  }
  if (jobs.empty()) LOOM_THROW(Error, "--only selects none of the manifest's ", m.jobs.size(), " jobs");
  // Before anything runs: every job must be able to open its backends (an RTL model built for its
  // config, ...), so a run does not fail after the others' hours of work.
  {
    std::string problems;
    size_t count = 0;
    for (const JobSpec& j : jobs)
      if (std::string p = job_problem(j); !p.empty() && ++count <= 5) problems += "\n  " + j.name + ": " + p;
    if (count)
      LOOM_THROW(Error, count, " of the ", jobs.size(), " jobs cannot run here, so none ran:", problems,
                 count > 5 ? "\n  ..." : "", "\n(`loom regress --list` flags each; --only selects the others)");
  }
  {
    std::error_code ec;
    const bool other = !o.loom.empty() && !fs::equivalent(o.loom, self_executable(), ec);
    workers_build_id() = other ? ask_build_id(o.loom, o.out) : std::string();
  }
  // The previous run's reports go first: a run that dies before writing its own leaves none, never
  // an old one that looks like this run's.
  for (const char* f : {"report.xml", "report.csv", "report.md", "results.jsonl"}) fs::remove(o.out / f);
  {
    std::ofstream all(o.out / "jobs.jsonl");
    for (const JobSpec& j : jobs) all << j.to_json().dump() << "\n";
  }
  const std::string run_id = content_hash(hostname() + std::to_string(getpid()) +
                                          std::to_string(std::chrono::system_clock::now().time_since_epoch().count()));
  std::set<std::string> runs = {run_id};
  auto t0 = std::chrono::steady_clock::now();
  // A runner killed while its jobs ran on a cluster: wait for them and keep their results.
  std::string incomplete;
  if (auto previous = ex->resume(incomplete); previous && incomplete.empty()) runs.insert(*previous);

  std::vector<std::string> keys;
  for (const JobSpec& j : jobs) keys.push_back(cache_key(j));
  std::vector<std::optional<json>> results(jobs.size());
  size_t cached = 0, other_build = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    auto r = read_result(job_dir(o.out, jobs[i]) / "result.json", jobs[i].name);
    if (r && r->value("key", "") != keys[i] && r->value("build", "") != loom_build_id()) ++other_build;
    if (!r || r->value("key", "") != keys[i]) continue;
    if (r->value("status", "") == "pass" && !o.force) {
      results[i] = r;
      ++cached;
    } else if (runs.count(r->value("run", ""))) {
      results[i] = r;  // this run's (or the resumed one's) result: its attempts count
    }
  }
  int next_round = 0;
  for (auto& e : fs::directory_iterator(o.out / "rounds")) {
    std::string stem = e.path().stem().string();
    if (e.path().extension() == ".jsonl" && !stem.empty() && stem.size() < 9 &&
        stem.find_first_not_of("0123456789") == std::string::npos)
      next_round = std::max(next_round, std::stoi(stem) + 1);
  }
  if (!o.quiet)
    std::cout << "loom regress: " << jobs.size() << " jobs of " << m.path << " (" << cached << " cached"
              << (other_build ? ", " + std::to_string(other_build) + " results of another Loom build not reused" : "")
              << "), executor " << ex->name() << std::endl;

  while (incomplete.empty()) {
    Round round;
    round.index = next_round++;
    round.file = o.out / "rounds" / (std::to_string(round.index) + ".jsonl");
    std::vector<size_t> which;
    std::ostringstream lines;
    for (size_t i = 0; i < jobs.size(); ++i) {
      const auto& r = results[i];
      bool done = r && !(retryable(r->value("status", "")) && r->value("attempt", 1) <= jobs[i].retries &&
                         runs.count(r->value("run", "")));
      if (done) continue;
      int attempt = r && runs.count(r->value("run", "")) ? r->value("attempt", 0) + 1 : 1;
      which.push_back(i);
      round.tasks.push_back(jobs[i]);
      lines << json{{"job", jobs[i].to_json()}, {"key", keys[i]}, {"attempt", attempt}, {"run", run_id}}.dump() << "\n";
      fs::create_directories(job_dir(o.out, jobs[i]));
      fs::remove(job_dir(o.out, jobs[i]) / "result.json");
    }
    if (which.empty()) break;
    write_atomically(round.file, lines.str());
    if (!o.quiet && round.index > 0 && which.size() < jobs.size())
      std::cout << "round " << round.index << ": " << which.size() << " jobs" << std::endl;
    const auto round_start = fs::file_time_type::clock::now() - std::chrono::seconds(2);  // (clock skew)
    incomplete = ex->run(round);
    // This attempt's result of job i, if it has one (a stale or foreign file is none).
    auto attempt_result = [&](size_t i) -> std::optional<json> {
      auto r = read_result(job_dir(o.out, jobs[i]) / "result.json", jobs[i].name);
      if (!r || r->value("key", "") != keys[i] || r->value("run", "") != run_id) return std::nullopt;
      return r;
    };
    // A shared file system may show a file another node just wrote only after a while: a missing
    // result of a task the cluster says completed is waited for before its job is called lost.
    std::vector<size_t> late;
    for (size_t t = 0; incomplete.empty() && t < which.size(); ++t)
      if (!attempt_result(which[t]) && ex->result_may_appear(round, t)) late.push_back(which[t]);
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(ex->result_grace_s());
         !late.empty() && std::chrono::steady_clock::now() < deadline;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      std::vector<size_t> still;
      for (size_t i : late) {
        std::error_code ec;
        for (auto it = fs::directory_iterator(job_dir(o.out, jobs[i]), ec); !ec && it != fs::directory_iterator();
             it.increment(ec)) {
        }  // listing the folder refreshes an NFS client's view of it
        if (!attempt_result(i)) still.push_back(i);
      }
      late = still;
    }
    for (size_t t = 0; t < which.size(); ++t) {
      size_t i = which[t];
      auto r = attempt_result(i);
      if (!r && !incomplete.empty()) {
        results[i].reset();  // never ran (or was cancelled): reported as not run
        continue;
      }
      if (r && r->value("build", "") != loom_build_id()) {
        (*r)["status"] = "error";
        (*r)["message"] = "the job ran under another build of Loom (" + r->value("build", "?") + ", the runner's is " +
                          loom_build_id() + "): was Loom rebuilt during the run?";
      }
      if (!r) {  // the worker died without writing one: the node failed, or the cluster killed it
        r = JobOutcome().to_json();
        const std::string why = ex->lost_reason(round, t);
        // The cluster's own time limit (a backstop past the job's) is a timeout all the same, for
        // the job that had started (its log written in this round); a packed task's later jobs
        // never ran.
        std::error_code ec;
        auto logged = fs::last_write_time(job_dir(o.out, jobs[i]) / "log.txt", ec);
        const bool started = !ec && logged >= round_start;
        (*r)["status"] = started && why.find(" ended TIMEOUT ") != std::string::npos ? "timeout" : "lost";
        (*r)["message"] = "the job ended without a result: " + why;
        (*r)["name"] = jobs[i].name;
        (*r)["key"] = keys[i];
        (*r)["run"] = run_id;
        int before = results[i] && runs.count(results[i]->value("run", "")) ? results[i]->value("attempt", 0) : 0;
        (*r)["attempt"] = before + 1;
        (*r)["log"] = (fs::path("jobs") / jobs[i].name / "log.txt").string();
        (*r)["build"] = loom_build_id();
        // Written where no result is (a late one, if it appears now, is kept: rename does not check).
        if (!fs::exists(job_dir(o.out, jobs[i]) / "result.json"))
          write_atomically(job_dir(o.out, jobs[i]) / "result.json", r->dump(1));
      }
      results[i] = r;
    }
  }

  std::vector<ReportRow> rows;
  for (size_t i = 0; i < jobs.size(); ++i) {
    json r = results[i] ? *results[i] : json{{"status", "not_run"}, {"message", "not run: " + incomplete}};
    rows.push_back({jobs[i].name, jobs[i].group, jobs[i].workload, jobs[i].config_name, jobs[i].backend, r});
  }
  {
    std::ofstream all(o.out / "results.jsonl");
    for (const ReportRow& row : rows) all << row.result.dump() << "\n";
  }
  ReportSummary s = write_reports(o.out, m.name, rows, incomplete, o.coverage, m.coverage_waivers);
  for (const std::string& note : s.coverage_notes) std::cout << "coverage: " << note << "\n";
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!o.quiet || s.failures()) {
    std::cout << std::fixed << std::setprecision(1) << (incomplete.empty() ? "" : "INCOMPLETE (" + incomplete + "): ")
              << s.pass << " passed, " << s.fail << " failed, " << s.error << " errors, " << s.crash << " crashed, "
              << s.timeout << " timed out" << (s.lost ? ", " + std::to_string(s.lost) + " lost" : "")
              << (s.not_run ? ", " + std::to_string(s.not_run) + " not run" : "") << " of " << jobs.size()
              << " jobs in " << seconds << " s (" << cached << " cached); report: " << (o.out / "report.md").string()
              << "\n";
    for (const ReportRow& row : rows) {
      std::string st = row.result.value("status", "");
      if (st != "pass" && st != "not_run")  // (the jobs not run share one reason, said above)
        std::cout << "  " << st << ": " << row.name << ": " << row.result.value("message", "") << " ["
                  << (o.out / row.result.value("log", "")).string() << "]\n";
    }
  }
  close(lock);
  if (interrupted()) return 128 + interrupting_signal;  // 130 after Ctrl-C, 143 after SIGTERM
  if (!incomplete.empty()) return 3;
  return s.failures() ? 1 : 0;
}

}  // namespace loom::regress
