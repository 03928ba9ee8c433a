#include "loom/sim/rtl_waivers.h"

#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "loom/runtime/error.h"

namespace loom::sim {

namespace {

using nlohmann::json;

// "[31:12,7]" -> {31, 12, 7, 7}; false when it is not a list of Verilog bit ranges, high first.
bool parse_ranges(const std::string& text, std::vector<long>& out) {
  if (text.size() < 3 || text.front() != '[' || text.back() != ']') return false;
  std::istringstream in(text.substr(1, text.size() - 2));
  for (std::string part; std::getline(in, part, ',');) {
    const size_t colon = part.find(':');
    const std::string hi = part.substr(0, colon), lo = colon == std::string::npos ? hi : part.substr(colon + 1);
    for (const std::string& d : {hi, lo})
      if (d.empty() || d.size() > 6 || d.find_first_not_of("0123456789") != std::string::npos) return false;
    const long h = std::stol(hi), l = std::stol(lo);
    if (h < l) return false;
    out.push_back(h);
    out.push_back(l);
  }
  return !out.empty();
}

}  // namespace

const char* to_string(RtlWaiverClass c) { return c == RtlWaiverClass::Structural ? "structural" : "bounded"; }

bool RtlToggleWaiver::covers(long bit) const {
  if (ranges.empty()) return true;
  for (size_t i = 0; i + 1 < ranges.size(); i += 2)
    if (bit <= ranges[i] && bit >= ranges[i + 1]) return true;
  return false;
}

RtlWaivers RtlWaivers::parse(const std::string& text, const std::string& source) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    LOOM_THROW(Error, "coverage waivers '", source, "': not JSON: ", e.what());
  }
  auto fail = [&](const std::string& where, const std::string& why) {
    LOOM_THROW(Error, "coverage waivers '", source, "'", where.empty() ? "" : " " + where, ": ", why);
  };
  if (!root.is_object()) fail("", "expected an object with a \"toggle\" list");
  for (auto& [key, value] : root.items())
    if (key != "toggle") fail("", "unknown key '" + key + "' (expected \"toggle\")");
  if (!root.contains("toggle") || !root["toggle"].is_array()) fail("", "\"toggle\" must be a list of waivers");
  RtlWaivers w;
  w.source_ = source;
  const std::set<std::string> keys = {"signals", "bits", "class", "reason"};
  for (size_t i = 0; i < root["toggle"].size(); ++i) {
    const json& e = root["toggle"][i];
    const std::string where = "toggle[" + std::to_string(i) + "]";
    if (!e.is_object()) fail(where, "expected an object");
    for (auto& [key, value] : e.items())
      if (!keys.count(key)) fail(where, "unknown key '" + key + "'");
    auto text_of = [&](const char* key, bool required) {
      if (!e.contains(key)) {
        if (required) fail(where, std::string("needs a \"") + key + "\"");
        return std::string();
      }
      if (!e[key].is_string() || (required && e[key].get<std::string>().empty()))
        fail(where, std::string("'") + key + "' must be a non-empty string");
      return e[key].get<std::string>();
    };
    RtlToggleWaiver t;
    t.reason = text_of("reason", true);
    t.bits = text_of("bits", false);
    if (!t.bits.empty() && !parse_ranges(t.bits, t.ranges))
      fail(where, "bits '" + t.bits + "' are not Verilog bit ranges such as \"[31:12,7]\"");
    const std::string cls = text_of("class", true);
    if (cls == "structural")
      t.waiver_class = RtlWaiverClass::Structural;
    else if (cls == "bounded")
      t.waiver_class = RtlWaiverClass::Bounded;
    else
      fail(where, "class '" + cls + "': expected structural or bounded");
    if (!e.contains("signals") || !e["signals"].is_array() || e["signals"].empty())
      fail(where, "needs \"signals\", a non-empty list of \"module.signal\"");
    for (const json& s : e["signals"]) {
      const std::string name = s.is_string() ? s.get<std::string>() : "";
      const size_t dot = name.find('.');
      if (dot == 0 || dot == std::string::npos || dot + 1 == name.size())
        fail(where, "signal " + s.dump() + " is not \"module.signal\"");
      t.module = name.substr(0, dot);
      t.signal = name.substr(dot + 1);
      w.by_signal_[{t.module, t.signal}].push_back(int(w.toggles_.size()));
      w.toggles_.push_back(t);
    }
  }
  return w;
}

RtlWaivers RtlWaivers::load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) LOOM_THROW(Error, "cannot read the coverage waivers ", path);
  std::stringstream ss;
  ss << f.rdbuf();
  return parse(ss.str(), path);
}

int RtlWaivers::find(const std::string& module, const std::string& signal, long bit) const {
  auto it = by_signal_.find({module, signal});
  if (it == by_signal_.end()) return -1;
  for (int i : it->second)
    if (toggles_[size_t(i)].covers(bit)) return i;
  return -1;
}

}  // namespace loom::sim
