// The one-line progress bar the executors draw on stderr while jobs run.
#pragma once
#include <cstddef>
#include <string>

namespace loom::regress {

// Whether stderr is a terminal: the bar is drawn only there (a pipe or a log file would keep its
// carriage returns and escape codes).
bool progress_on_terminal();
// "[#####.....] 12/40 jobs, 2 running, 1 failed; <note>", redrawn in place; nothing when quiet.
// Where stderr is no terminal, only a changed note, as a plain line ("3/40 jobs: <note>").
void draw_progress(bool quiet, size_t done, size_t total, size_t running, size_t failed, const std::string& note = "");
// Ends the bar's line (when one was drawn).
void end_progress(bool quiet);

}  // namespace loom::regress
