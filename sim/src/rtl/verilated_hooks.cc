// See verilated_hooks.h. Compiled into loom_verilated, whose sources are built with
// VL_USER_STOP_MAYBE, so vl_stop_maybe below replaces the Verilator runtime's own.
#include "verilated_hooks.h"

#include <verilated.h>

#include <cstdarg>
#include <cstdio>
#include <string>

namespace {
thread_local std::string g_last_line;  // the last complete line printed
thread_local std::string g_partial;    // printed text not yet ended by a newline
thread_local std::string g_stop;       // the recorded failure
}  // namespace

int loom_vl_printf(const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  char buf[1024];
  va_list copy;
  va_copy(copy, ap);
  int n = std::vsnprintf(buf, sizeof buf, format, copy);
  va_end(copy);
  int r = std::vprintf(format, ap);
  va_end(ap);
  if (n > 0) {
    g_partial += buf;
    for (size_t nl; (nl = g_partial.find('\n')) != std::string::npos;) {
      if (nl > 0) g_last_line = g_partial.substr(0, nl);
      g_partial.erase(0, nl + 1);
    }
  }
  return r;
}

namespace {
// (The thread's Verilator context is not touched: it may belong to another model.)
void record(const char* filename, int linenum, const char* what) {
  if (!g_stop.empty()) return;  // keep the first
  // The assertion printed "[time] %Error: file.sv:line: Assertion failed in <instance>: <message>".
  std::string line = g_last_line;
  if (size_t k = line.find("Assertion failed in "); k != std::string::npos) line.erase(0, k);
  g_stop = std::string(filename && *filename ? filename : "?") + ":" + std::to_string(linenum) + ": " +
           (line.empty() ? what : line);
}
}  // namespace

void vl_stop_maybe(const char* filename, int linenum, const char* hier, bool maybe) VL_MT_UNSAFE {
  (void)hier;
  (void)maybe;
  record(filename, linenum, "$stop");
}

namespace loom::sim::rtl {
bool rtl_stop_pending() { return !g_stop.empty(); }
std::string take_rtl_stop() {
  std::string s;
  s.swap(g_stop);
  g_last_line.clear();
  return s;
}
}  // namespace loom::sim::rtl
