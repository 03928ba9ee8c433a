// Running another program to completion with its output in a file (the system linker, yosys):
// posix_spawn, so no shell reads the arguments and no fork copies this process's page tables.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace loom::runtime {

struct LoggedRun {
  enum class End { Exited, Signaled, TimedOut, NotStarted };
  End end = End::NotStarted;
  int status = 0;     // Exited: the exit code; Signaled: the signal
  std::string error;  // NotStarted: why (the system's message)
  bool ok() const { return end == End::Exited && status == 0; }
};

// Runs argv[0] (looked up on PATH) with stdout and stderr into `log` and waits for it; past
// `timeout_s` seconds (0: no limit) it is killed and the run ends TimedOut.
LoggedRun run_logged(const std::vector<std::string>& argv, const std::filesystem::path& log, double timeout_s = 0);

}  // namespace loom::runtime
