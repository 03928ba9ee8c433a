// Placement files: a JSON object from node names to the devices their kernels run on
// (BuildOptions::placement), e.g. {"fc": "cpu", "layer4.1.conv2": "cuda"}.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "loom/graph/build.h"
#include "loom/runtime/error.h"

namespace loom::graph {

std::map<std::string, runtime::KernelDevice> parse_placement(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    LOOM_THROW(ConfigError, origin, ": not JSON: ", e.what());
  }
  if (!j.is_object())
    LOOM_THROW(ConfigError, origin,
               ": a placement is a JSON object from node names to devices, like {\"fc\": \"cpu\"}");
  std::map<std::string, runtime::KernelDevice> out;
  for (const auto& [node, device] : j.items()) {
    std::string d = device.is_string() ? device.get<std::string>() : device.dump();
    bool known = false;
    for (runtime::KernelDevice k :
         {runtime::KernelDevice::CPU, runtime::KernelDevice::Cuda, runtime::KernelDevice::Accel})
      if (d == runtime::device_name(k)) {
        out[node] = k;
        known = true;
      }
    if (!known) LOOM_THROW(ConfigError, origin, ": node '", node, "': '", d, "' is not a device (cpu, cuda, accel)");
  }
  return out;
}

std::map<std::string, runtime::KernelDevice> read_placement(const std::string& path) {
  std::ifstream f(path);
  if (!f) LOOM_THROW(ConfigError, "cannot read the placement file '", path, "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  return parse_placement(ss.str(), "placement file '" + path + "'");
}

}  // namespace loom::graph
