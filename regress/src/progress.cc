#include "loom/regress/progress.h"

#include <unistd.h>

#include <iostream>
#include <mutex>

namespace loom::regress {

bool progress_on_terminal() {
  static const bool tty = isatty(STDERR_FILENO) == 1;
  return tty;
}

void draw_progress(bool quiet, size_t done, size_t total, size_t running, size_t failed, const std::string& note) {
  if (quiet || total == 0) return;
  if (!progress_on_terminal()) {
    // A pipe or a log gets what the bar would say that matters (why tasks wait), once per change,
    // as a plain line.
    static std::mutex mu;
    static std::string last;
    std::lock_guard<std::mutex> lock(mu);
    if (!note.empty() && note != last) std::cerr << done << "/" << total << " jobs: " << note << std::endl;
    last = note;
    return;
  }
  const size_t width = 30, filled = width * done / total;
  std::cerr << "\r[" << std::string(filled, '#') << std::string(width - filled, '.') << "] " << done << "/" << total
            << " jobs, " << running << " running" << (failed ? ", " + std::to_string(failed) + " failed" : "")
            << (note.empty() ? "" : "; " + note) << "\033[K" << std::flush;
}

void end_progress(bool quiet) {
  if (!quiet && progress_on_terminal()) std::cerr << "\n";
}

}  // namespace loom::regress
