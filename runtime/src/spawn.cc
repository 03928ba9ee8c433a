#include "loom/runtime/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

extern char** environ;

namespace loom::runtime {

LoggedRun run_logged(const std::vector<std::string>& argv, const std::filesystem::path& log, double timeout_s) {
  LoggedRun r;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int err = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    r.error = std::strerror(err);
    return r;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  for (;;) {
    pid_t got = waitpid(pid, &status, timeout_s > 0 ? WNOHANG : 0);
    if (got == pid) break;
    if (got < 0 && errno != EINTR) {
      r.error = std::string("lost the process: ") + std::strerror(errno);
      return r;
    }
    if (timeout_s > 0 && got == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        r.end = LoggedRun::End::TimedOut;
        return r;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  if (WIFEXITED(status)) {
    r.end = LoggedRun::End::Exited;
    r.status = WEXITSTATUS(status);
  } else {
    r.end = LoggedRun::End::Signaled;
    r.status = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }
  return r;
}

}  // namespace loom::runtime
