// The one-line progress bar the executors draw on stderr while jobs run.
#pragma once
#include <cstddef>
#include <string>

namespace loom::regress {

// "[#####.....] 12/40 jobs, 2 running, 1 failed; <note>", redrawn in place; nothing when quiet.
void draw_progress(bool quiet, size_t done, size_t total, size_t running, size_t failed, const std::string& note = "");
// Ends the bar's line (when one was drawn).
void end_progress(bool quiet);

}  // namespace loom::regress
