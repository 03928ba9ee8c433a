// The Slurm executor: each round is one `sbatch --array` job array whose task k runs the round's
// job k (`loom regress --worker`); squeue tracks it, scontrol (or sacct) says how lost tasks ended,
// scancel stops it on Ctrl-C. The array's id is kept in slurm/state.json so that a runner killed
// and restarted waits for the array it left running instead of submitting the jobs again.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "loom/regress/process.h"
#include "loom/regress/progress.h"
#include "loom/regress/runner.h"
#include "loom/runtime/error.h"

namespace loom::regress {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// Pending reasons under which no node can start the task until an administrator acts (squeue's %r
// gives some in words: "Nodes required for job are DOWN, DRAINED or reserved ...").
bool blocked_reason(const std::string& r) {
  for (const char* b : {"ReqNodeNotAvail", "NodeDown", "PartitionDown", "PartitionInactive", "PartitionNodeLimit",
                        "Nodes_required", "BadConstraints", "InvalidAccount", "InvalidQOS", "DOWN, DRAINED"})
    if (r.find(b) != std::string::npos) return true;
  return false;
}

std::string shell_quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

std::string first_line(const std::string& s) {
  std::string t = s.substr(0, s.find('\n'));
  return t.empty() ? s : t;
}

class SlurmExecutor : public Executor {
 public:
  explicit SlurmExecutor(const RunOptions& o) : o_(o), self_(o.loom.empty() ? self_executable() : o.loom) {
    for (const char* tool : {"sbatch", "squeue", "scancel", "scontrol"})
      if (!on_path(tool))
        LOOM_THROW(Error, "--slurm: '", tool,
                   "' is not on PATH (Slurm's client commands: Debian's slurm-client or slurm-wlm), or run --local");
    fs::create_directories(o_.out / "slurm");
  }
  std::string name() const override { return "slurm"; }

  std::string run(const Round& round) override {
    fs::path script = o_.out / "slurm" / ("round" + std::to_string(round.index) + ".sh");
    {
      std::ofstream f(script);
      f << "#!/bin/sh\n# loom regress: task k of the array runs job k of " << round.file.string() << "\n"
        << "exec " << shell_quote(self_) << " regress --worker " << shell_quote(o_.out.string()) << " --round "
        << round.index << " --task \"$SLURM_ARRAY_TASK_ID\"\n";
    }
    fs::permissions(script, fs::perms::owner_all, fs::perm_options::add);
    double longest = 0;
    for (const JobSpec& j : round.tasks) longest = std::max(longest, j.timeout_s);
    // Slurm's limit is a backstop past the worker's own (whole minutes: Slurm has no finer one).
    std::string time = o_.slurm.time.empty() ? std::to_string(int(std::ceil((longest + 60) / 60))) : o_.slurm.time;
    std::vector<std::string> argv = {
        "sbatch",
        "--parsable",
        "--job-name=loom-regress",
        "--array=0-" + std::to_string(round.tasks.size() - 1) +
            (o_.slurm.max_running > 0 ? "%" + std::to_string(o_.slurm.max_running) : ""),
        "--output=" + (o_.out / "slurm" / (std::to_string(round.index) + "_%a.out")).string(),
        "--time=" + time,
        "--chdir=" + o_.out.string()};
    if (!o_.slurm.partition.empty()) argv.push_back("--partition=" + o_.slurm.partition);
    if (!o_.slurm.account.empty()) argv.push_back("--account=" + o_.slurm.account);
    for (const auto& a : o_.slurm.sbatch_args) argv.push_back(a);
    argv.push_back(script.string());
    std::string out;
    ChildStatus s = run_command(argv, &out, 60);
    std::string id = first_line(out).substr(0, first_line(out).find(';'));
    if (s.kind != ChildStatus::Exited || s.code != 0 || id.empty() ||
        id.find_first_not_of("0123456789") != std::string::npos)
      return "sbatch refused the job array (" + s.describe() + "): " + (out.empty() ? "no output" : first_line(out));
    array_ = id;
    json state = {{"slurm_job", id}, {"round", round.index}, {"run", round_run(round)}};
    std::ofstream(o_.out / "slurm" / "state.json") << state.dump() << "\n";
    if (!o_.quiet) std::cerr << "submitted job array " << id << " (" << round.tasks.size() << " tasks)\n";
    std::string stop = wait(id, round.tasks);
    fs::remove(o_.out / "slurm" / "state.json");
    return stop;
  }

  std::string lost_reason(const Round&, size_t task) override {
    std::string out;
    std::string id = array_ + "_" + std::to_string(task);
    ChildStatus s = run_command({"scontrol", "-o", "show", "job", id}, &out, 30);
    if (s.kind == ChildStatus::Exited && s.code == 0) {
      auto field = [&](const std::string& key) {
        size_t p = out.find(" " + key + "=");
        if (p == std::string::npos) return std::string();
        p += key.size() + 2;
        return out.substr(p, out.find(' ', p) - p);
      };
      return "Slurm task " + id + " ended " + field("JobState") + " (reason " + field("Reason") + ", exit code " +
             field("ExitCode") + ", node " + field("NodeList") + ")";
    }
    return "Slurm task " + id + " ended without a result and Slurm no longer knows it (" + first_line(out) + ")";
  }

  std::optional<std::string> resume() override {
    std::ifstream f(o_.out / "slurm" / "state.json");
    if (!f) return std::nullopt;
    json state;
    try {
      state = json::parse(f);
    } catch (const std::exception&) {
      return std::nullopt;
    }
    std::string id = state.value("slurm_job", "");
    std::map<std::string, std::string> tasks;
    if (id.empty() || !poll(id, tasks) || tasks.empty()) {
      fs::remove(o_.out / "slurm" / "state.json");
      return state.value("run", "");  // ended: its results are there to take
    }
    if (!o_.quiet)
      std::cerr << "resuming: the previous runner's job array " << id << " still has " << tasks.size()
                << " tasks; waiting for them\n";
    array_ = id;
    std::string stop = wait(id, {});
    if (!stop.empty()) return std::string();
    fs::remove(o_.out / "slurm" / "state.json");
    return state.value("run", "");
  }

 private:
  static std::string round_run(const Round& round) {
    std::ifstream f(round.file);
    std::string line;
    std::getline(f, line);
    return line.empty() ? "" : json::parse(line).value("run", "");
  }

  // The array's tasks still known to squeue (task id -> "STATE REASON"); false if squeue failed
  // for another reason than the array having left the queue.
  bool poll(const std::string& id, std::map<std::string, std::string>& tasks) {
    std::string out;
    ChildStatus s = run_command({"squeue", "-h", "-r", "-j", id, "-o", "%i|%T|%r"}, &out, 30);
    tasks.clear();
    if (s.kind != ChildStatus::Exited || s.code != 0) {
      if (out.find("Invalid job id") != std::string::npos) return true;  // purged: nothing left
      last_error_ = first_line(out);
      return false;
    }
    std::stringstream ss(out);
    for (std::string line; std::getline(ss, line);) {
      size_t a = line.find('|'), b = line.find('|', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      tasks[line.substr(0, a)] = line.substr(a + 1, b - a - 1) + " " + line.substr(b + 1);
    }
    return true;
  }

  void cancel(const std::string& id) {
    std::string out;
    run_command({"scancel", id}, &out, 30);
    auto t0 = Clock::now();
    std::map<std::string, std::string> tasks;
    while (std::chrono::duration<double>(Clock::now() - t0).count() < 60) {
      if (poll(id, tasks) && tasks.empty()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  // Polls until the array leaves the queue. `jobs`: the round's jobs, whose results count as done.
  std::string wait(const std::string& id, const std::vector<JobSpec>& jobs) {
    Clock::time_point blocked_since{}, failing_since{};
    bool blocked = false, failing = false;
    std::map<std::string, std::string> tasks;
    for (;;) {
      if (interrupted()) {
        cancel(id);
        end_progress(o_.quiet);
        return "interrupted (Ctrl-C): job array " + id + " was cancelled";
      }
      if (!poll(id, tasks)) {
        if (!failing) failing_since = Clock::now();
        failing = true;
        if (std::chrono::duration<double>(Clock::now() - failing_since).count() > 300) {
          end_progress(o_.quiet);
          return "squeue has failed for 5 minutes (" + last_error_ + "); job array " + id + " left as it is";
        }
      } else {
        failing = false;
        if (tasks.empty()) break;
        size_t running = 0, pending_blocked = 0;
        std::string reason;
        for (auto& [t, st] : tasks) {
          running += st.rfind("RUNNING", 0) == 0 || st.rfind("COMPLETING", 0) == 0;
          if (st.rfind("PENDING", 0) == 0 && blocked_reason(st)) {
            ++pending_blocked;
            reason = st.substr(8);
          }
        }
        size_t done = 0, failed = 0;
        for (const JobSpec& j : jobs) {
          std::ifstream f(o_.out / "jobs" / j.name / "result.json");
          if (!f) continue;
          ++done;
          try {
            failed += json::parse(f).value("status", "") != "pass";
          } catch (const std::exception&) {
          }
        }
        const bool now_blocked = running == 0 && pending_blocked > 0;
        if (now_blocked && !blocked) blocked_since = Clock::now();
        blocked = now_blocked;
        double blocked_s = blocked ? std::chrono::duration<double>(Clock::now() - blocked_since).count() : 0;
        draw_progress(o_.quiet, done, jobs.empty() ? tasks.size() + done : jobs.size(), running, failed,
                      blocked ? std::to_string(pending_blocked) + " pending: no node can run them (" + reason + ")"
                              : "job array " + id);
        if (blocked && o_.slurm.pending_timeout_s > 0 && blocked_s > o_.slurm.pending_timeout_s) {
          cancel(id);
          end_progress(o_.quiet);
          std::ostringstream os;
          os << pending_blocked << " tasks of job array " << id << " pended for " << int(blocked_s)
             << " s with no node to run them (" << reason << "); the array was cancelled";
          return os.str();
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(int(o_.slurm.poll_s * 1000)));
    }
    end_progress(o_.quiet);
    return "";
  }

  RunOptions o_;
  std::string self_, array_, last_error_;
};

}  // namespace

std::unique_ptr<Executor> make_slurm_executor(const RunOptions& o) { return std::make_unique<SlurmExecutor>(o); }

}  // namespace loom::regress
