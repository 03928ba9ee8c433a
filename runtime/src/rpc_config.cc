#include "rpc_config.h"

#include <nlohmann/json.hpp>

#include "loom/runtime/error.h"

namespace loom::rpc {

namespace {

nlohmann::json parse(const std::string& text, const char* whose) {
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object()) LOOM_THROW(DeviceError, "the ", whose, " accelerator config is not a JSON object");
    return j;
  } catch (const nlohmann::json::exception& e) {
    LOOM_THROW(DeviceError, "the ", whose, " accelerator config is not JSON: ", e.what());
  }
}

std::string name_of(const nlohmann::json& j) {
  return j.contains("name") && j["name"].is_string() ? "'" + j["name"].get<std::string>() + "'" : "(unnamed)";
}

}  // namespace

void check_same_config(const std::string& model_json, const std::string& server_json) {
  nlohmann::json m = parse(model_json, "model's"), s = parse(server_json, "server's");
  auto hardware = [](const nlohmann::json& j, const std::string& key) { return key != "name" && !j[key].is_object(); };
  for (const auto* side : {&m, &s})
    for (auto it = side->begin(); it != side->end(); ++it) {
      const std::string& key = it.key();
      if (!hardware(*side, key)) continue;
      bool both = m.contains(key) && s.contains(key);
      if (!both || m[key] != s[key])
        LOOM_THROW(DeviceError, "the model was compiled for accelerator config ", name_of(m),
                   ", the server's device is ", name_of(s), ": ", key, " is ",
                   m.contains(key) ? m[key].dump() : "absent", " in the model's and ",
                   s.contains(key) ? s[key].dump() : "absent", " in the server's");
    }
}

}  // namespace loom::rpc
