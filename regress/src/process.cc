#include "loom/regress/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "loom/runtime/error.h"

namespace loom::regress {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// How a child that ended (waitpid's `status`) ended.
ChildStatus ended(int status, Clock::time_point t0) {
  ChildStatus s;
  s.seconds = since(t0);
  if (WIFSIGNALED(status)) {
    s.kind = ChildStatus::Signaled;
    s.code = WTERMSIG(status);
  } else {
    s.code = WEXITSTATUS(status);
  }
  return s;
}

// Waits for `pid` until `timeout_s`; then kills its process group and reaps it.
ChildStatus wait_bounded(pid_t pid, double timeout_s, Clock::time_point t0) {
  ChildStatus s;
  int status = 0;
  for (int sleep_us = 200;;) {
    // Ended? (not reaped yet: its group id stays its own until the group is killed below)
    siginfo_t info = {};
    int r = waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && info.si_pid == pid) break;
    if (r < 0 && errno != EINTR) LOOM_THROW(RuntimeError, "waitid: ", std::strerror(errno));
    if (since(t0) > timeout_s || stop_requested()) {
      kill(-pid, SIGKILL);  // the child's whole process group: a shell's children too
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      s.kind = stop_requested() ? ChildStatus::Stopped : ChildStatus::TimedOut;
      s.code = int(timeout_s);
      s.seconds = since(t0);
      return s;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    sleep_us = std::min(sleep_us * 2, 20000);
  }
  kill(-pid, SIGKILL);  // whatever the child left running in its group
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // Killed by SIGKILL: maybe by its own SIGTERM handler, when the cluster stopped the whole task
  // (scancel, a time limit) — then this worker's SIGTERM comes too: the job was stopped, not crashed.
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
    for (int k = 0; k < 20 && !stop_requested(); ++k) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (stop_requested()) {
    s.kind = ChildStatus::Stopped;
    s.seconds = since(t0);
    return s;
  }
  return ended(status, t0);
}

// A signal handler (async-signal-safe): kill this process's group, this process included.
void kill_own_group(int) { kill(0, SIGKILL); }

}  // namespace

std::atomic<bool>& stop_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}

std::string ChildStatus::describe() const {
  switch (kind) {
    case Exited:
      return "exit code " + std::to_string(code);
    case Signaled: {
      const char* name = sigabbrev_np(code);
      return std::string("killed by ") + (name ? std::string("SIG") + name : "signal " + std::to_string(code));
    }
    case TimedOut:
      return "over its time limit of " + std::to_string(code) + " s (killed)";
    case Stopped:
      return "stopped (the runner was stopped)";
  }
  return "?";
}

ChildStatus run_forked(const std::function<int()>& body, const std::string& log_path, double timeout_s) {
  int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log < 0) LOOM_THROW(RuntimeError, "cannot write '", log_path, "': ", std::strerror(errno));
  std::fflush(nullptr);
  auto t0 = Clock::now();
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(log);
    LOOM_THROW(RuntimeError, "fork: ", std::strerror(errno));
  }
  if (pid == 0) {
    // In a group of its own, or not at all: the handler below kills the whole group.
    if (setpgid(0, 0) != 0) _exit(126);
    // When the worker dies (or anyone sends SIGTERM), the job takes its whole process group with
    // it: a shell command's children too, which a parent-death signal alone would leave running.
    signal(SIGTERM, kill_own_group);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) kill_own_group(SIGTERM);  // the worker is already gone
    dup2(log, 1);
    dup2(log, 2);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) {
      dup2(null, 0);
      close(null);
    }
    int rc = 1;
    try {
      rc = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
    }
    std::fflush(nullptr);
    _exit(rc);
  }
  setpgid(pid, pid);  // also here: no race with the kill below
  close(log);
  return wait_bounded(pid, timeout_s, t0);
}

ChildStatus run_command(const std::vector<std::string>& argv, std::string* out, double timeout_s, bool own_group) {
  // Everything the child needs is made before the fork: between fork and exec a child of a
  // threaded process may call only async-signal-safe functions (no malloc, no stdio).
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  static const char kCannotRun[] = "cannot run the program\n";
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) LOOM_THROW(RuntimeError, "pipe: ", std::strerror(errno));
  std::string ignored;
  if (!out) out = &ignored;
  const bool capture = out != &ignored;
  std::fflush(nullptr);
  auto t0 = Clock::now();
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    LOOM_THROW(RuntimeError, "fork: ", std::strerror(errno));
  }
  if (pid == 0) {
    if (own_group)
      setpgid(0, 0);
    else
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // a job's command does not outlive the job's process
    if (capture) {
      dup2(fds[1], 1);
      dup2(fds[1], 2);
    }
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) {
      dup2(null, 0);
      close(null);
    }
    execvp(args[0], args.data());
    ssize_t ignored_rc = write(2, kCannotRun, sizeof kCannotRun - 1);
    (void)ignored_rc;
    _exit(127);
  }
  if (own_group) setpgid(pid, pid);
  close(fds[1]);
  // Read while waiting: a command whose output fills the pipe must not block forever.
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  out->clear();
  ChildStatus s;
  int status = 0;
  char buf[4096];
  for (bool done = false; !done;) {
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) out->append(buf, size_t(n));
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      done = true;
    } else if (since(t0) > timeout_s) {
      kill(own_group ? -pid : pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      close(fds[0]);
      s.kind = ChildStatus::TimedOut;
      s.code = int(timeout_s);
      s.seconds = since(t0);
      return s;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out->append(buf, size_t(n));
  close(fds[0]);
  return ended(status, t0);
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0;
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(ss, dir, ':');) {
    std::string p = (dir.empty() ? "." : dir) + "/" + program;
    struct stat st;
    if (stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::string self_executable() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) LOOM_THROW(RuntimeError, "cannot find the running executable (/proc/self/exe)");
  return std::string(buf, size_t(n));
}

}  // namespace loom::regress
