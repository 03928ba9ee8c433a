// Internal to loom_sim: the XRT layer under BoardDevice (xrt_layer.cc, built where XRT is found;
// xrt_layer_missing.cc elsewhere).
#pragma once
#include <memory>
#include <string>

#include "loom/runtime/board_device.h"

namespace loom::sim {

// The config's "xrt" object: {"device": index (0), "xclbin": path (required), "kernel": name
// ("loom_accel"), "memory_group": index (0)}. DeviceError naming what is missing or not found.
std::unique_ptr<BoardLayer> make_xrt_layer(const std::string& config_json);
// What make_xrt_layer checks before it loads anything: the device is there and an xclbin file is
// given that exists. The same DeviceError, without opening the kernel.
void check_xrt_layer(const std::string& config_json);

}  // namespace loom::sim
