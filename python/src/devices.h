// loom.accel.Device: one accelerator backend's device held by Python (devices.cc), shared with
// the functions built for the accelerator (accel_functions.cc), which run on one.
#pragma once
#include <memory>
#include <mutex>
#include <string>

#include "bindings.h"
#include "interruptible.h"
#include "loom/accel/config.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"

namespace loom::python {

class Device {
 public:
  // `options`: the backend's options section (runtime/backend_options.h), as Python gave them.
  Device(std::string backend, accel::AccelConfig config, const py::dict& options);

  const std::string& backend() const { return backend_; }
  const accel::AccelConfig& config() const { return config_; }
  bool closed() const { return device_ == nullptr; }
  // Closing frees the device (and finishes the files it writes: an RTL timeline, a waveform).
  void close();

  // Runs `work` on the device without the GIL, one call at a time, Ctrl-C stopping a run the host
  // waits for: an interrupted run is Python's KeyboardInterrupt and closes the device (its run
  // was abandoned half-way). DeviceError naming `what` when the device is closed.
  template <typename Work>
  auto run(const std::string& what, Work&& work) {
    return run_interruptible(
        *busy_, [&] { return work(get(what)); },
        [&] {
          std::lock_guard<std::mutex> turn(*busy_);
          device_.reset();
        });
  }
  // The device for work that needs neither the GIL released nor interrupts (a register, a copy).
  AccelDevice& get(const std::string& what);

 private:
  std::string backend_;
  accel::AccelConfig config_;
  std::unique_ptr<AccelDevice> device_;
  std::shared_ptr<std::mutex> busy_ = std::make_shared<std::mutex>();
};

}  // namespace loom::python
