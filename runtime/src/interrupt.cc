#include "loom/runtime/interrupt.h"

#include <atomic>
#include <csignal>
#include <mutex>

namespace loom::runtime {

namespace {

std::atomic<bool> g_requested{false};
std::mutex g_mutex;  // guards the scope count and the saved handler
int g_scopes = 0;
bool g_installed = false;  // SIGINT was not ignored when the first scope began: ours replaced it
struct sigaction g_previous;

void on_sigint(int) { g_requested.store(true, std::memory_order_relaxed); }

}  // namespace

void request_interrupt() noexcept { g_requested.store(true, std::memory_order_relaxed); }
bool interrupt_requested() noexcept { return g_requested.load(std::memory_order_relaxed); }
void clear_interrupt() noexcept { g_requested.store(false, std::memory_order_relaxed); }

void check_interrupt(const char* what) {
  if (g_requested.load(std::memory_order_relaxed)) LOOM_THROW(Interrupted, "interrupted: ", what);
}

SigintInterrupts::SigintInterrupts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_scopes++ > 0) return;
  clear_interrupt();
  sigaction(SIGINT, nullptr, &g_previous);
  g_installed = g_previous.sa_handler != SIG_IGN;  // a process that ignores Ctrl-C keeps ignoring it
  if (!g_installed) return;
  struct sigaction sa = {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
}

SigintInterrupts::~SigintInterrupts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (--g_scopes > 0) return;
  if (g_installed) sigaction(SIGINT, &g_previous, nullptr);
  clear_interrupt();  // a request belongs to the scope it came in: later work outside one is not stopped
}

}  // namespace loom::runtime
