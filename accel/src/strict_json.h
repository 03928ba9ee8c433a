// JSON as Loom's data files are read: a key given twice in one object is a ConfigError naming
// `what` (nlohmann would keep the last silently), as is text that is not JSON.
#pragma once
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/runtime/error.h"

namespace loom::accel {

// The text of the data file at `path`; ConfigError `unreadable` when it cannot be opened.
inline std::string read_data_file(const std::string& path, const std::string& unreadable) {
  std::ifstream in(path);
  if (!in) LOOM_THROW(ConfigError, unreadable);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline nlohmann::json parse_strict_json(const std::string& text, const std::string& what) {
  std::vector<std::set<std::string>> keys;
  auto cb = [&](int, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    if (ev == nlohmann::json::parse_event_t::object_start) keys.emplace_back();
    if (ev == nlohmann::json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    if (ev == nlohmann::json::parse_event_t::key && !keys.empty() &&
        !keys.back().insert(parsed.get<std::string>()).second)
      LOOM_THROW(ConfigError, what, ": field '", parsed.get<std::string>(), "' is given twice");
    return true;
  };
  try {
    return nlohmann::json::parse(text, cb);
  } catch (const nlohmann::json::exception& e) {
    LOOM_THROW(ConfigError, what, ": not valid JSON (", e.what(), ")");
  }
}

}  // namespace loom::accel
