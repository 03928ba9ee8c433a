#include "loom/runtime/backend_options.h"

#include <cmath>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "loom/runtime/error.h"
#include "loom/runtime/suggest.h"

namespace loom {

namespace {

std::mutex& schemas_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, BackendOptionSchema>& schemas() {
  static std::map<std::string, BackendOptionSchema> s;
  return s;
}

// Shortest text of a bound: 1000000 rather than 1e+06, 4e9 as 4000000000.
std::string bound_text(double v) {
  std::ostringstream os;
  if (v == std::floor(v) && std::fabs(v) < 9e18)
    os << static_cast<long long>(v);
  else
    os << v;
  return os.str();
}

[[noreturn]] void bad_value(const std::string& backend, const BackendOption& o, const nlohmann::json& v) {
  LOOM_THROW(ConfigError, backend, " backend: option \"", o.key, "\" must be ", o.range_text(), ", got ", v.dump());
}

}  // namespace

BackendOption BackendOption::count(std::string key, double min, double max, std::string help, std::string fallback) {
  BackendOption o;
  o.key = std::move(key);
  o.kind = Kind::Count;
  o.min = min;
  o.max = max;
  o.help = std::move(help);
  o.fallback = std::move(fallback);
  return o;
}

BackendOption BackendOption::number(std::string key, double min, double max, Ends ends, std::string help,
                                    std::string fallback) {
  BackendOption o = count(std::move(key), min, max, std::move(help), std::move(fallback));
  o.kind = Kind::Number;
  o.min_open = ends == Ends::OpenBelow;
  o.max_open = ends == Ends::OpenAbove;
  return o;
}

BackendOption BackendOption::boolean(std::string key, std::string help, std::string fallback) {
  BackendOption o = count(std::move(key), 0, 1, std::move(help), std::move(fallback));
  o.kind = Kind::Flag;
  return o;
}

BackendOption BackendOption::choice(std::string key, std::vector<std::string> choices, std::string help,
                                    std::string fallback) {
  BackendOption o = count(std::move(key), 0, 0, std::move(help), std::move(fallback));
  o.kind = Kind::Choice;
  o.choices = std::move(choices);
  return o;
}

BackendOption BackendOption::output_file(std::string key, std::string help) {
  BackendOption o = count(std::move(key), 0, 0, std::move(help));
  o.kind = Kind::OutputFile;
  return o;
}

BackendOption BackendOption::needing(std::string other) const {
  BackendOption o = *this;
  o.needs = std::move(other);
  return o;
}

BackendOption BackendOption::with_flag(std::string cli_flag) const {
  BackendOption o = *this;
  o.flag = std::move(cli_flag);
  return o;
}

std::string BackendOption::cli_flag() const {
  if (!flag.empty()) return flag;
  std::string f = "--" + key;
  for (char& c : f)
    if (c == '_') c = '-';
  return f;
}

std::string BackendOption::range_text() const {
  switch (kind) {
    case Kind::Count:
      return "an integer in [" + bound_text(min) + ", " + bound_text(max) + "]";
    case Kind::Number:
      return "a number in " + std::string(min_open ? "(" : "[") + bound_text(min) + ", " + bound_text(max) +
             (max_open ? ")" : "]");
    case Kind::Flag:
      return "true or false";
    case Kind::Choice: {
      std::string s = "one of ";
      for (size_t i = 0; i < choices.size(); ++i) s += (i ? ", " : "") + choices[i];
      return s;
    }
    case Kind::OutputFile:
      return "a file path";
  }
  return "";
}

void register_accel_backend_options(const std::string& backend, BackendOptionSchema schema) {
  std::lock_guard<std::mutex> lock(schemas_mutex());
  schemas()[backend] = std::move(schema);
}

const BackendOptionSchema& accel_backend_options(const std::string& backend) {
  static const BackendOptionSchema none;
  std::lock_guard<std::mutex> lock(schemas_mutex());
  auto it = schemas().find(backend);
  return it == schemas().end() ? none : it->second;  // entries are never erased: the reference stays valid
}

uint64_t BackendOptionValues::count(const std::string& key, uint64_t fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : std::get<uint64_t>(it->second);
}
double BackendOptionValues::number(const std::string& key, double fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : std::get<double>(it->second);
}
bool BackendOptionValues::flag(const std::string& key, bool fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : std::get<bool>(it->second);
}
std::string BackendOptionValues::text(const std::string& key, const std::string& fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : std::get<std::string>(it->second);
}

BackendOptionValues read_backend_options(const std::string& backend, const std::string& section_json) {
  const BackendOptionSchema& schema = accel_backend_options(backend);
  nlohmann::json j = nlohmann::json::object();
  if (!section_json.empty()) {
    try {
      j = nlohmann::json::parse(section_json);
    } catch (const std::exception& e) {
      LOOM_THROW(ConfigError, backend, " backend: its options are not valid JSON: ", e.what());
    }
  }
  if (!j.is_object()) LOOM_THROW(ConfigError, backend, " backend: its options must be a JSON object, got ", j.dump());
  std::vector<std::string> keys;
  for (const BackendOption& o : schema) keys.push_back(o.key);
  BackendOptionValues out;
  for (auto& [key, v] : j.items()) {
    const BackendOption* o = nullptr;
    for (const BackendOption& c : schema)
      if (c.key == key) o = &c;
    if (!o) {
      std::string list;
      for (const std::string& k : keys) list += (list.empty() ? "" : ", ") + k;
      LOOM_THROW(ConfigError, backend, " backend: unknown option \"", key, "\"", did_you_mean(key, keys),
                 list.empty() ? "; it takes no options" : "; its options: " + list);
    }
    switch (o->kind) {
      case BackendOption::Kind::Count:
        if (!v.is_number_unsigned() || double(v.get<uint64_t>()) < o->min || double(v.get<uint64_t>()) > o->max)
          bad_value(backend, *o, v);
        out.values_[key] = v.get<uint64_t>();
        break;
      case BackendOption::Kind::Number: {
        if (!v.is_number()) bad_value(backend, *o, v);
        double x = v.get<double>();
        if (!std::isfinite(x) || x < o->min || x > o->max || (o->min_open && x == o->min) ||
            (o->max_open && x == o->max))
          bad_value(backend, *o, v);
        out.values_[key] = x;
        break;
      }
      case BackendOption::Kind::Flag:
        if (!v.is_boolean()) bad_value(backend, *o, v);
        out.values_[key] = v.get<bool>();
        break;
      case BackendOption::Kind::Choice: {
        bool known = false;
        if (v.is_string())
          for (const std::string& c : o->choices) known |= c == v.get<std::string>();
        if (!known) bad_value(backend, *o, v);
        out.values_[key] = v.get<std::string>();
        break;
      }
      case BackendOption::Kind::OutputFile:
        if (!v.is_string() || v.get<std::string>().empty()) bad_value(backend, *o, v);
        out.values_[key] = v.get<std::string>();
        break;
    }
  }
  for (const BackendOption& o : schema)
    if (!o.needs.empty() && out.has(o.key) && !out.has(o.needs))
      LOOM_THROW(ConfigError, backend, " backend: option \"", o.key, "\" needs \"", o.needs, "\"");
  return out;
}

}  // namespace loom
