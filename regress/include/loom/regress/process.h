// Child processes of the runner: a job run in a forked child with a time limit (a crash or a
// hang is the job's result, never the runner's), and commands run with their output captured.
#pragma once
#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace loom::regress {

struct ChildStatus {
  enum Kind { Exited, Signaled, TimedOut, Stopped } kind = Exited;  // Stopped: by stop_requested()
  int code = 0;                                                     // exit code, or the signal
  double seconds = 0;
  std::string describe() const;  // "exit code 3", "killed by SIGSEGV", "over its time limit of 5 s"
};

// Set (by a SIGTERM handler) to make run_forked kill its child and return Stopped.
std::atomic<bool>& stop_requested();

// Runs `body` in a forked child (its own process group; stdout and stderr into `log_path`; the
// group killed when the caller dies or the child gets SIGTERM) and waits at most `timeout_s`, then
// kills the child's whole process group. The child's exit code is what `body` returns.
ChildStatus run_forked(const std::function<int()>& body, const std::string& log_path, double timeout_s);

// Runs argv (argv[0] searched on PATH) with stdin closed, waiting at most `timeout_s`; its stdout
// and stderr are returned in `out` (null: they go where the caller's go). Exit code 127 when the program cannot be
// started. `own_group`: in a process group of its own (killed whole on timeout); else in the caller's, so that whoever
// kills the caller's group (a job's time limit) kills the command too.
ChildStatus run_command(const std::vector<std::string>& argv, std::string* out, double timeout_s,
                        bool own_group = true);

// Whether `program` is an executable on PATH.
bool on_path(const std::string& program);

// The path of the running executable (/proc/self/exe).
std::string self_executable();

}  // namespace loom::regress
