// Internal to loom_sim: the config JSON a simulator backend is opened with (runtime's
// make_accel_device): the accelerator config, plus an optional object of the backend's own
// options under its name ("fsim", "rtl").
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "loom/accel/config.h"
#include "loom/runtime/backend_options.h"
#include "loom/runtime/error.h"
#include "loom/sim/rtl_sim.h"

namespace loom::sim {

struct BackendConfig {
  accel::AccelConfig config;
  nlohmann::json options = nlohmann::json::object();
};

inline BackendConfig parse_backend_config(const std::string& json, const std::string& backend) {
  BackendConfig b;
  if (json.empty()) {
    b.config = accel::default_config();
    return b;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const std::exception& e) {
    LOOM_THROW(ConfigError, backend, " backend: the config is not valid JSON: ", e.what());
  }
  if (!j.is_object()) LOOM_THROW(ConfigError, backend, " backend: the config must be a JSON object");
  if (j.contains(backend)) {
    b.options = j[backend];
    j.erase(backend);
    if (!b.options.is_object())
      LOOM_THROW(ConfigError, backend, " backend: \"", backend, "\" must be an object of simulator options");
  }
  b.config = accel::AccelConfig::from_json(j.dump());
  return b;
}

// The rtl backend's options (rtl_sim.cc), which the systemc backend takes too, and RtlSimOptions
// from their values (ConfigError naming `backend` for an empty waveform or timeline window).
BackendOptionSchema rtl_option_schema();
RtlSimOptions rtl_options_from(const std::string& backend, const BackendOptionValues& values);

}  // namespace loom::sim
