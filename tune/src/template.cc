// What every template shares: the configuration space, the printed form of a configuration, and
// the defaults of the measurement hooks a template of the other kind does not have.
#include <algorithm>
#include <sstream>

#include "loom/runtime/error.h"
#include "loom/tune/template.h"

namespace loom::tune {

std::string config_str(const Config& c) {
  std::ostringstream s;
  for (auto& [k, v] : c) s << (s.tellp() ? " " : "") << k << "=" << v;
  return s.str();
}

int knob(const Config& c, const std::string& name) {
  auto it = c.find(name);
  if (it == c.end()) LOOM_THROW(ConfigError, "tuning config '", config_str(c), "' has no knob '", name, "'");
  return it->second;
}

std::vector<int> divisors(int64_t n, int64_t limit) {
  std::vector<int> d;
  for (int64_t v = 1; v <= std::min(n, limit); ++v)
    if (n % v == 0) d.push_back(int(v));
  return d;
}

std::vector<Config> Template::space() const {
  std::vector<Config> out{Config{}};
  for (const Knob& k : knobs()) {
    std::vector<Config> next;
    for (const Config& c : out)
      for (int v : k.values) {
        Config d = c;
        d[k.name] = v;
        next.push_back(std::move(d));
      }
    out = std::move(next);
  }
  std::vector<Config> valid_ones;
  for (Config& c : out)
    if (valid(c)) valid_ones.push_back(std::move(c));
  return valid_ones;
}

runtime::Module Template::build(const Config&) const {
  LOOM_THROW(InternalError, "template ", op(), " is measured in simulated cycles, not built for this CPU");
}

std::vector<NDArray> Template::arguments(uint64_t) const {
  LOOM_THROW(InternalError, "template ", op(), " is measured in simulated cycles, not built for this CPU");
}

Simulated Template::simulate(const Config&, uint64_t) const {
  LOOM_THROW(InternalError, "template ", op(), " is timed on this CPU, not simulated");
}

}  // namespace loom::tune
