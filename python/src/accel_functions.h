// loom.accel.Function: a function built for the accelerator from a schedule (loom.build(...,
// target='accel')), run on a loom.accel.Device (accel_functions.cc).
#pragma once
#include <memory>
#include <vector>

#include "bindings.h"
#include "devices.h"
#include "loom/codegen/accel.h"

namespace loom::python {

class AccelFunction {
 public:
  AccelFunction(codegen::AccelModule module, accel::AccelConfig config, std::vector<bool> is_output);
  // f(*arrays, device=None): inputs then outputs (written), or the inputs alone (outputs returned);
  // on `device`, or on an fsim device of the function's config that the function keeps.
  py::object call(const py::args& args, const py::object& device);

  const codegen::AccelModule& module() const { return module_; }
  const accel::AccelConfig& config() const { return config_; }
  // The last call's instruction count, cycles and counters (None before the first).
  const py::object& stats() const { return stats_; }

 private:
  codegen::AccelModule module_;
  accel::AccelConfig config_;
  std::vector<bool> is_output_;
  std::unique_ptr<Device> own_device_;
  py::object stats_ = py::none();
};

}  // namespace loom::python
