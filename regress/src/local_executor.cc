// The local executor: a pool of worker processes over this machine's cores.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "loom/regress/process.h"
#include "loom/regress/progress.h"
#include "loom/regress/runner.h"
#include "loom/runtime/error.h"

extern char** environ;

namespace loom::regress {

namespace fs = std::filesystem;

namespace {

class LocalExecutor : public Executor {
 public:
  explicit LocalExecutor(const RunOptions& o)
      : out_(o.out),
        jobs_(o.jobs > 0 ? o.jobs : int(std::max(1u, std::thread::hardware_concurrency()))),
        quiet_(o.quiet),
        self_(o.loom.empty() ? self_executable() : o.loom) {}
  std::string name() const override { return "local (" + std::to_string(jobs_) + " at once)"; }

  std::string run(const Round& round) override {
    std::map<pid_t, size_t> running;
    size_t next = 0, done = 0, failed = 0;
    std::string stop;
    std::chrono::steady_clock::time_point stopped_at;
    while (done < round.tasks.size()) {
      if (interrupted() && stop.empty()) {
        stop = interruption() + ": the running jobs were stopped";
        for (auto& [pid, t] : running) kill(pid, SIGTERM);  // each worker kills its job's processes
        stopped_at = std::chrono::steady_clock::now();
      }
      if (!stop.empty() && std::chrono::steady_clock::now() - stopped_at > std::chrono::seconds(10))
        for (auto& [pid, t] : running) kill(-pid, SIGKILL);
      bool spawned = false;
      while (stop.empty() && running.size() < size_t(jobs_) && next < round.tasks.size()) {
        running[spawn(round, next)] = next;
        ++next;
        spawned = true;
      }
      if (spawned) draw_progress(quiet_, done, round.tasks.size(), running.size(), failed);
      if (running.empty()) break;  // stopped before the rest were started
      // Each worker by its pid: never another child's status (a program embedding the runner).
      bool reaped = false;
      for (auto it = running.begin(); it != running.end();) {
        int status = 0;
        pid_t r = waitpid(it->first, &status, WNOHANG);
        if (r == 0 || (r < 0 && errno == EINTR)) {
          ++it;
          continue;
        }
        size_t t = it->second;
        it = running.erase(it);
        ++done;
        reaped = true;
        failed += job_status(out_, round.tasks[t].name) != "pass";  // (no result: the runner reports it)
      }
      if (reaped) {
        draw_progress(quiet_, done, round.tasks.size(), running.size(), failed);
        continue;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    end_progress(quiet_);
    return stop;
  }

 private:
  // `loom regress --worker OUT --round R --task K`, in its own process group, killed with the runner.
  pid_t spawn(const Round& round, size_t task) {
    std::vector<std::string> argv = {self_,
                                     "regress",
                                     "--worker",
                                     out_.string(),
                                     "--round",
                                     std::to_string(round.index),
                                     "--task",
                                     std::to_string(task),
                                     "--die-with-parent"};
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    // The worker's own messages (not the job's: that is the job's log.txt).
    std::string log = (out_ / "rounds" / (std::to_string(round.index) + "_" + std::to_string(task) + ".out")).string();
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, self_.c_str(), &fa, &attr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) LOOM_THROW(RuntimeError, "cannot start a worker (", self_, "): ", std::strerror(rc));
    return pid;
  }

  fs::path out_;
  int jobs_;
  bool quiet_;
  std::string self_;
};

}  // namespace

std::unique_ptr<Executor> make_local_executor(const RunOptions& o) { return std::make_unique<LocalExecutor>(o); }

}  // namespace loom::regress
