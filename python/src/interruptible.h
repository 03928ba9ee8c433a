// Long work called from Python (a model's run, an accelerator device's): without the GIL, one call
// at a time per object, Ctrl-C stopping it through runtime::SigintInterrupts.
#pragma once
#include <mutex>

#include "bindings.h"
#include "loom/runtime/interrupt.h"

namespace loom::python {

// Runs `work` without the GIL under `busy`. An interrupted run calls `interrupted()` (with the
// GIL, without `busy`) and is Python's KeyboardInterrupt; a Ctrl-C that came too late to stop the
// work is raised as KeyboardInterrupt by Python after it.
template <typename Work, typename OnInterrupt>
auto run_interruptible(std::mutex& busy, Work&& work, OnInterrupt&& interrupted) {
  runtime::SigintInterrupts sigint;
  try {
    auto result = [&] {
      py::gil_scoped_release released;
      std::lock_guard<std::mutex> turn(busy);
      return work();
    }();
    if (runtime::interrupt_requested()) PyErr_SetInterrupt();
    return result;
  } catch (const Interrupted&) {
    interrupted();
    throw;
  }
}

}  // namespace loom::python
