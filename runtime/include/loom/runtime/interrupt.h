// Stopping long work on request (Ctrl-C from Python): a process-wide flag that a signal handler or
// another thread sets and long loops poll (AccelDevice::wait while a simulator runs a stream, the
// graph executor between kernels). A poll that finds it set throws Interrupted.
#pragma once
#include "loom/runtime/error.h"

namespace loom {
// The work was stopped on request; the object doing it (a device mid-run) is left as it was.
LOOM_DECLARE_ERROR(Interrupted);
}  // namespace loom

namespace loom::runtime {

void request_interrupt() noexcept;  // async-signal-safe
bool interrupt_requested() noexcept;
void clear_interrupt() noexcept;
// Throws Interrupted ("interrupted: <what>") when an interrupt has been requested.
void check_interrupt(const char* what);

// While one lives (on the thread that receives SIGINT, the main thread), SIGINT requests an
// interrupt instead of what it did before; the previous handler comes back, and the request is
// cleared, when the last one goes. A process that ignores SIGINT keeps ignoring it. Not for
// signal-handling code of its own: it replaces the SIGINT disposition of the whole process for its
// lifetime.
class SigintInterrupts {
 public:
  SigintInterrupts();
  ~SigintInterrupts();
  SigintInterrupts(const SigintInterrupts&) = delete;
  SigintInterrupts& operator=(const SigintInterrupts&) = delete;
};

}  // namespace loom::runtime
