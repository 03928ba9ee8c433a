// The Slurm executor: each round is one `sbatch --array` job array (several past --max-array
// tasks: Slurm's MaxArraySize) whose task k runs the round's job offset+k (`loom regress
// --worker`); squeue tracks it, scontrol says how lost tasks ended (Slurm without slurmdbd keeps no
// sacct history), scancel stops it on Ctrl-C. The arrays' ids are kept in slurm/state.json until
// they have left the queue, so that a runner killed and restarted waits for the arrays it left
// running instead of submitting the jobs again.
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

// Pending reasons under which no node can start the task until someone acts (squeue's %r gives
// some in words: "Nodes required for job are DOWN, DRAINED or reserved ...").
bool blocked_reason(const std::string& r) {
  for (const char* b : {"ReqNodeNotAvail", "NodeDown", "PartitionDown", "PartitionInactive", "PartitionNodeLimit",
                        "PartitionTimeLimit", "Nodes_required", "BadConstraints", "InvalidAccount", "InvalidQOS",
                        "JobHeldAdmin", "JobHeldUser", "DOWN, DRAINED"})
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

bool all_digits(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

// The job id sbatch --parsable printed ("ID" or "ID;CLUSTER" on a line of its own; sites add
// warnings and notices on other lines), or "".
std::string parsable_id(const std::string& out) {
  std::string id;
  std::stringstream ss(out);
  for (std::string line; std::getline(ss, line);) {
    std::string head = line.substr(0, line.find(';'));
    if (all_digits(head)) id = head;
  }
  return id;
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
  double result_grace_s() const override { return 20; }
  bool result_may_appear(const Round& round, size_t task) override {
    return lost_reason(round, task).find(" ended COMPLETED ") != std::string::npos;
  }

  std::string run(const Round& round) override {
    arrays_.clear();
    task_states_.clear();
    const std::string run_id = round_run(round);
    double longest = 0;
    for (const JobSpec& j : round.tasks) longest = std::max(longest, j.timeout_s);
    // Slurm's limit is a backstop past the worker's own (whole minutes: Slurm has no finer one).
    const size_t pack = size_t(std::max(1, o_.slurm.pack));
    const std::string time =
        o_.slurm.time.empty() ? std::to_string(int(std::ceil((double(pack) * longest + 60) / 60))) : o_.slurm.time;
    const size_t chunk = size_t(std::max(1, o_.slurm.max_array)) * pack;  // jobs per array
    for (size_t offset = 0; offset < round.tasks.size(); offset += chunk) {
      size_t n = std::min(chunk, round.tasks.size() - offset);
      std::string id, why = submit(round, offset, n, time, run_id, id);
      if (!why.empty()) {  // what was submitted already is cancelled: a round runs whole or not at all
        bool gone = true;
        for (const std::string& a : array_ids()) gone &= cancel(a);
        if (gone) fs::remove(state_path());  // else their ids stay for the next run to wait for
        return why;
      }
      arrays_.push_back({id, offset, n});
      save_state(run_id, round.index);
      if (!o_.quiet)
        std::cerr << "submitted job array " << id << " (" << (n + pack - 1) / pack << " tasks, " << n << " jobs"
                  << (offset ? ", from job " + std::to_string(offset) : "") << ")\n";
    }
    std::string stop = wait(round.tasks);
    if (stop.empty() || cancelled_) fs::remove(state_path());  // else the arrays may still run: keep their ids
    return stop;
  }

  std::string lost_reason(const Round&, size_t task) override {
    for (const auto& a : arrays_)
      if (task >= a.offset && task < a.offset + a.count) {
        std::string id = a.id + "_" + std::to_string((task - a.offset) / size_t(std::max(1, o_.slurm.pack)));
        // Asked once per array task and round: a packed task's jobs share the answer.
        auto known = task_states_.find(id);
        if (known != task_states_.end()) return known->second;
        return task_states_[id] = task_state(id);
      }
    return "its Slurm task is unknown";
  }

 private:
  // What Slurm says of how array task `id` ended.
  std::string task_state(const std::string& id) {
    std::string out;
    ChildStatus s = run_command({"scontrol", "-o", "show", "job", id}, &out, 30);
    if (s.kind == ChildStatus::Exited && s.code == 0) {
      auto field = [&](const std::string& key) {
        size_t p = out.find(" " + key + "=");
        if (p == std::string::npos) return std::string("?");
        p += key.size() + 2;
        return out.substr(p, out.find(' ', p) - p);
      };
      return "Slurm task " + id + " ended " + field("JobState") + " (reason " + field("Reason") + ", exit code " +
             field("ExitCode") + ", node " + field("NodeList") + ")";
    }
    // Past MinJobAge the controller has forgotten the task; a cluster with accounting still knows.
    std::string acct;
    ChildStatus a = run_command({"sacct", "-n", "-P", "-X", "-j", id, "-o", "State,ExitCode,NodeList"}, &acct, 30);
    std::string line = first_line(acct);
    size_t b1 = line.find('|'), b2 = b1 == std::string::npos ? b1 : line.find('|', b1 + 1);
    if (a.kind == ChildStatus::Exited && a.code == 0 && b2 != std::string::npos)
      return "Slurm task " + id + " ended " + line.substr(0, b1) + " (exit code " + line.substr(b1 + 1, b2 - b1 - 1) +
             ", node " + line.substr(b2 + 1) + "; sacct)";
    return "Slurm task " + id + " ended without a result and Slurm no longer knows it (" + first_line(out) + ")";
  }

 public:
  std::optional<std::string> resume(std::string& stop) override {
    json state;
    try {
      std::ifstream f(state_path());
      if (!f) return std::nullopt;
      state = json::parse(f);
      arrays_.clear();
      for (const json& a : state.at("arrays"))
        arrays_.push_back({a.at("id").get<std::string>(), a.at("offset").get<size_t>(), a.at("count").get<size_t>()});
      state.at("run").get<std::string>();
    } catch (const std::exception& e) {
      LOOM_THROW(Error, "'", state_path().string(), "' is damaged (", e.what(),
                 "): if no job array of an earlier run is still queued, remove it");
    }
    if (!o_.quiet) {
      std::cerr << "resuming: waiting for the previous runner's job array";
      for (const auto& a : arrays_) std::cerr << " " << a.id;
      std::cerr << "\n";
    }
    stop = wait({});
    if (stop.empty() || cancelled_) fs::remove(state_path());
    return state["run"].get<std::string>();
  }

 private:
  struct Array {
    std::string id;
    size_t offset = 0, count = 0;
  };

  fs::path state_path() const { return o_.out / "slurm" / "state.json"; }

  void save_state(const std::string& run_id, int round) {
    json arrays = json::array();
    for (const auto& a : arrays_) arrays.push_back({{"id", a.id}, {"offset", a.offset}, {"count", a.count}});
    std::ofstream(state_path()) << json{{"run", run_id}, {"round", round}, {"arrays", arrays}}.dump() << "\n";
  }

  static std::string round_run(const Round& round) {
    std::ifstream f(round.file);
    std::string line;
    std::getline(f, line);
    return line.empty() ? "" : json::parse(line).value("run", "");
  }

  // Submits tasks [offset, offset + n) of the round as one array; "" and its id, or why not.
  std::string submit(const Round& round, size_t offset, size_t n, const std::string& time, const std::string& run_id,
                     std::string& id) {
    const size_t pack = size_t(std::max(1, o_.slurm.pack));  // jobs per task
    fs::path script = o_.out / "slurm" / ("round" + std::to_string(round.index) + "_" + std::to_string(offset) + ".sh");
    {
      std::ofstream f(script);
      f << "#!/bin/sh\n# loom regress: task k of the array runs jobs " << offset << "+" << pack << "k ... of "
        << round.file.string() << "\nexec " << shell_quote(self_) << " regress --worker "
        << shell_quote(o_.out.string()) << " --round " << round.index << " --task \"$((SLURM_ARRAY_TASK_ID * " << pack
        << " + " << offset << "))\" --count " << pack << "\n";
    }
    fs::permissions(script, fs::perms::owner_all, fs::perm_options::add);
    // A name of this run and chunk: how the array is found if sbatch's answer is lost.
    const std::string job_name =
        "loom-regress-" + run_id.substr(0, 8) + "-" + std::to_string(round.index) + "-" + std::to_string(offset);
    std::vector<std::string> argv = {
        "sbatch",
        "--parsable",
        "--job-name=" + job_name,
        "--array=0-" + std::to_string((n + pack - 1) / pack - 1) +
            (o_.slurm.max_running > 0 ? "%" + std::to_string(o_.slurm.max_running) : ""),
        "--output=" +
            (o_.out / "slurm" / (std::to_string(round.index) + "_" + std::to_string(offset) + "_%a.out")).string(),
        "--time=" + time,
        "--chdir=" + o_.out.string()};
    if (!o_.slurm.partition.empty()) argv.push_back("--partition=" + o_.slurm.partition);
    if (!o_.slurm.account.empty()) argv.push_back("--account=" + o_.slurm.account);
    for (const auto& a : o_.slurm.sbatch_args) argv.push_back(a);
    argv.push_back(script.string());
    std::string out;
    ChildStatus s = run_command(argv, &out, 60);
    id = parsable_id(out);
    if (s.kind == ChildStatus::Exited && s.code == 0 && !id.empty()) return "";
    {
      // sbatch failed, timed out or printed no id: the controller may have taken the array all the
      // same ("Socket timed out" after the submission went through).
      std::string q;
      ChildStatus qs = run_command({"squeue", "-h", "--name=" + job_name, "-o", "%F"}, &q, 30);
      id = qs.kind == ChildStatus::Exited && qs.code == 0 ? parsable_id(q) : "";
      if (!id.empty()) return "";
    }
    return "sbatch refused the job array (" + s.describe() + "): " + (out.empty() ? "no output" : first_line(out));
  }

  // The arrays' tasks still known to squeue (task id -> "STATE REASON"); false if squeue failed
  // for another reason than the arrays having left the queue.
  bool poll(const std::vector<std::string>& arrays, std::map<std::string, std::string>& tasks) {
    std::string ids;
    for (const auto& a : arrays) ids += (ids.empty() ? "" : ",") + a;
    std::string out;
    ChildStatus s = run_command({"squeue", "-h", "-r", "-j", ids, "-o", "%i|%T|%r"}, &out, 30);
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

  // scancel, then wait (at most a minute) until squeue no longer lists the tasks.
  bool cancel(const std::string& id) {
    std::string out;
    run_command({"scancel", id}, &out, 30);
    auto t0 = Clock::now();
    std::map<std::string, std::string> tasks;
    bool gone = false;
    while (!gone && std::chrono::duration<double>(Clock::now() - t0).count() < 60) {
      gone = poll({id}, tasks) && tasks.empty();
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return gone;
  }

  std::string cancel_all(const std::string& why) {
    bool gone = true;
    std::string ids;
    for (const std::string& a : array_ids()) {
      gone &= cancel(a);
      ids += (ids.empty() ? "" : ", ") + a;
    }
    cancelled_ = gone;
    end_progress(o_.quiet);
    return why + ": job array " + ids +
           (gone ? " was cancelled" : " was cancelled, but squeue still lists tasks of it after a minute");
  }

  // Polls until the arrays leave the queue. `jobs`: the round's jobs, whose results count as done.
  std::string wait(const std::vector<JobSpec>& jobs) {
    Clock::time_point blocked_since{}, failing_since{};
    bool blocked = false, failing = false;
    cancelled_ = false;
    std::map<std::string, std::string> tasks;
    for (;;) {
      if (interrupted()) return cancel_all(interruption());
      if (!poll(array_ids(), tasks)) {
        if (!failing) failing_since = Clock::now();
        failing = true;
        if (std::chrono::duration<double>(Clock::now() - failing_since).count() > 300) {
          end_progress(o_.quiet);
          return "squeue has failed for 5 minutes (" + last_error_ +
                 "); the job arrays are left as they are (their ids in " + state_path().string() +
                 "; run again to wait for them)";
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
          std::string status = job_status(o_.out, j.name);
          done += !status.empty();
          failed += !status.empty() && status != "pass";
        }
        const bool now_blocked = running == 0 && pending_blocked > 0;
        if (now_blocked && !blocked) blocked_since = Clock::now();
        blocked = now_blocked;
        double blocked_s = blocked ? std::chrono::duration<double>(Clock::now() - blocked_since).count() : 0;
        draw_progress(
            o_.quiet, done, jobs.empty() ? tasks.size() + done : jobs.size(), running, failed,
            blocked ? std::to_string(pending_blocked) + " pending: no node can run them (" + reason + ")" : "Slurm");
        if (blocked && o_.slurm.pending_timeout_s > 0 && blocked_s > o_.slurm.pending_timeout_s) {
          std::ostringstream os;
          os << pending_blocked << " tasks pended for " << int(blocked_s) << " s with no node to run them (" << reason
             << ")";
          return cancel_all(os.str());
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(int(o_.slurm.poll_s * 1000)));
    }
    end_progress(o_.quiet);
    return "";
  }

  std::vector<std::string> array_ids() const {
    std::vector<std::string> ids;
    for (const auto& a : arrays_) ids.push_back(a.id);
    return ids;
  }

  RunOptions o_;
  std::string self_, last_error_;
  std::vector<Array> arrays_;
  std::map<std::string, std::string> task_states_;  // array task id -> how it ended (this round)
  bool cancelled_ = false;
};

}  // namespace

std::unique_ptr<Executor> make_slurm_executor(const RunOptions& o) { return std::make_unique<SlurmExecutor>(o); }

}  // namespace loom::regress
