#include "loom/runtime/env.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "loom/runtime/error.h"

namespace loom::runtime::env {

std::optional<std::string> text(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

std::optional<int64_t> integer(const char* name, int64_t min, int64_t max) {
  std::optional<std::string> v = text(name);
  if (!v) return std::nullopt;
  int64_t n = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || end != v->data() + v->size() || n < min || n > max)
    LOOM_THROW(ConfigError, "environment variable ", name, "='", *v, "': expected an integer from ", min, " to ", max);
  return n;
}

bool flag(const char* name) {
  std::optional<std::string> v = text(name);
  if (!v) return false;
  std::string s = *v;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (s == "1" || s == "true" || s == "on" || s == "yes") return true;
  if (s == "0" || s == "false" || s == "off" || s == "no") return false;
  LOOM_THROW(ConfigError, "environment variable ", name, "='", *v,
             "': expected a flag (1, true, on, yes or 0, false, off, no)");
}

}  // namespace loom::runtime::env
