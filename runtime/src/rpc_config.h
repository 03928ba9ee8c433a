// Internal to the RPC device: whether a client's model and the server's device agree on the
// accelerator (the runtime does not interpret configs; it compares their JSON).
#pragma once
#include <string>

namespace loom::rpc {

// Throws DeviceError naming both configs and the first field that differs. Compared: every
// top-level field that is not an object (the hardware parameters), except "name"; backend
// options (objects such as "rtl") may differ.
void check_same_config(const std::string& model_json, const std::string& server_json);

}  // namespace loom::rpc
