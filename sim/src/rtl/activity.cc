#include "loom/sim/activity.h"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "gtkwave/fstapi.h"
#include "loom/runtime/error.h"

namespace loom::sim {

namespace {

struct Reading {
  std::vector<std::string> last;  // per handle, its last value
  std::vector<uint64_t> toggles;  // per handle
  void change(fstHandle h, const unsigned char* value) {
    std::string& prev = last[h];
    const char* v = reinterpret_cast<const char*>(value);
    const size_t n = std::strlen(v);
    if (prev.size() == n)
      for (size_t k = 0; k < n; ++k) {
        const char a = prev[k], b = v[k];
        toggles[h] += (a == '0' && b == '1') || (a == '1' && b == '0');
      }
    prev.assign(v, n);
  }
};

void on_change(void* user, uint64_t, fstHandle h, const unsigned char* value) {
  static_cast<Reading*>(user)->change(h, value);
}

}  // namespace

std::vector<SignalActivity> fst_toggles(const std::string& path) {
  void* ctx = fstReaderOpen(path.c_str());
  if (!ctx) LOOM_THROW(DeviceError, "cannot read the waveform '", path, "' (not an FST file?)");
  std::vector<SignalActivity> signals;
  std::vector<int> index_of;  // per handle: its signal, or -1
  std::vector<std::string> scopes;
  const fstHandle max = fstReaderGetMaxHandle(ctx);
  index_of.assign(size_t(max) + 1, -1);
  while (fstHier* h = fstReaderIterateHier(ctx)) {
    if (h->htyp == FST_HT_SCOPE) {
      scopes.emplace_back(h->u.scope.name);
    } else if (h->htyp == FST_HT_UPSCOPE) {
      if (!scopes.empty()) scopes.pop_back();
    } else if (h->htyp == FST_HT_VAR && h->u.var.handle <= max && index_of[h->u.var.handle] < 0) {
      // Below TOP and the top module's own scope: the names a flattened netlist gives.
      std::string name;
      for (size_t k = std::min<size_t>(2, scopes.size()); k < scopes.size(); ++k) name += scopes[k] + ".";
      name += h->u.var.name;
      if (size_t space = name.find(' '); space != std::string::npos) name.resize(space);  // " [7:0]"
      index_of[h->u.var.handle] = int(signals.size());
      signals.push_back({name, int(h->u.var.length), 0});
    }
  }
  Reading r;
  r.last.resize(size_t(max) + 1);
  r.toggles.assign(size_t(max) + 1, 0);
  fstReaderSetFacProcessMaskAll(ctx);
  fstReaderIterBlocks(ctx, on_change, &r, nullptr);
  fstReaderClose(ctx);
  for (size_t h = 0; h < index_of.size(); ++h)
    if (index_of[h] >= 0) signals[size_t(index_of[h])].toggles = r.toggles[h];
  return signals;
}

namespace {

// Each net's mean load in module `m` of a yosys JSON netlist.
std::map<std::string, double> loads_of(const nlohmann::json& m) {
  // Each bit's load: the cell inputs it feeds.
  std::map<int64_t, double> load;
  const nlohmann::json cells = m.value("cells", nlohmann::json::object()),
                       nets = m.value("netnames", nlohmann::json::object());
  for (auto& [name, cell] : cells.items()) {
    const std::string type = cell.value("type", "");
    const nlohmann::json conn = cell.value("connections", nlohmann::json::object()),
                         dirs = cell.value("port_directions", nlohmann::json::object());
    const bool multiplier = type == "$mul" || type == "$macc";
    for (auto& [port, bits] : conn.items()) {
      if (dirs.value(port, "input") != "input") continue;
      double each = 1;
      if (multiplier && (port == "A" || port == "B") && conn.contains(port == "A" ? "B" : "A"))
        each = double(conn[port == "A" ? "B" : "A"].size());
      for (const auto& b : bits)
        if (b.is_number_integer()) load[b.get<int64_t>()] += each;
    }
  }
  std::map<std::string, double> out;
  for (auto& [name, net] : nets.items()) {
    const nlohmann::json bits = net.value("bits", nlohmann::json::array());
    if (bits.empty()) continue;
    double sum = 0;
    for (const auto& b : bits)
      if (b.is_number_integer()) sum += load.count(b.get<int64_t>()) ? load[b.get<int64_t>()] : 0.0;
    std::string n = name;
    if (!n.empty() && n[0] == '\\') n.erase(0, 1);
    out[n] = sum / double(bits.size());
  }
  return out;
}

}  // namespace

std::map<std::string, double> netlist_loads(const std::string& path, const std::string& top) {
  std::ifstream f(path);
  if (!f) LOOM_THROW(Error, "cannot read the netlist '", path, "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    LOOM_THROW(Error, "netlist '", path, "': not JSON (", e.what(), ")");
  }
  if (!j.is_object() || !j.contains("modules") || !j["modules"].is_object() || !j["modules"].contains(top))
    LOOM_THROW(Error, "netlist '", path, "' has no module '", top, "'");
  try {
    return loads_of(j["modules"][top]);
  } catch (const nlohmann::json::exception& e) {
    LOOM_THROW(Error, "netlist '", path, "': module '", top, "' is not a yosys netlist (", e.what(), ")");
  }
}

double weighted_activity(const std::vector<SignalActivity>& toggles, const std::map<std::string, double>& loads,
                         double* matched) {
  double total = 0, with_load = 0, all = 0;
  for (const SignalActivity& s : toggles) {
    auto it = loads.find(s.name);
    const double load = it == loads.end() ? 1.0 : it->second;
    total += double(s.toggles) * load;
    all += double(s.toggles);
    if (it != loads.end()) with_load += double(s.toggles);
  }
  if (matched) *matched = all > 0 ? with_load / all : 0;
  return total;
}

}  // namespace loom::sim
