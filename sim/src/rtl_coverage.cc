#include "loom/sim/rtl_coverage.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "loom/runtime/error.h"

namespace loom::sim {

namespace {

constexpr char kHeader[] = "# SystemC::Coverage-3";
constexpr char kKeySep = '\x01', kValueSep = '\x02';

// "v_toggle/loom_fifo__W9_D4" -> toggle, "loom_fifo".
bool kind_of_page(const std::string& page, RtlCoverageKind& kind, std::string& module) {
  const size_t slash = page.find('/');
  if (slash == std::string::npos) return false;
  const std::string type = page.substr(0, slash);
  module = page.substr(slash + 1);
  if (const size_t p = module.find("__"); p != std::string::npos) module.resize(p);
  if (type == "v_line")
    kind = RtlCoverageKind::Line;
  else if (type == "v_branch")
    kind = RtlCoverageKind::Branch;
  else if (type == "v_toggle")
    kind = RtlCoverageKind::Toggle;
  else if (type == "v_user")
    kind = RtlCoverageKind::CoverProperty;
  else
    return false;
  return true;
}

std::string value_of(const std::map<std::string, std::string>& keys, const std::string& k) {
  auto it = keys.find(k);
  return it == keys.end() ? "" : it->second;
}

int line_of(const std::map<std::string, std::string>& keys) {
  const std::string l = value_of(keys, "l");
  return l.empty() || l.find_first_not_of("0123456789") != std::string::npos || l.size() > 9 ? 0 : std::stoi(l);
}

// The hierarchy as the report shows it: Verilator prefixes the model's name ("loom_accel.").
std::string instance_of(const std::string& hier) {
  const std::string top = "loom_accel.loom_accel";
  return hier.rfind(top, 0) == 0 ? hier.substr(top.size() - std::string("loom_accel").size()) : hier;
}

}  // namespace

const char* to_string(RtlCoverageKind k) {
  switch (k) {
    case RtlCoverageKind::Line:
      return "line";
    case RtlCoverageKind::Branch:
      return "branch";
    case RtlCoverageKind::Toggle:
      return "toggle";
    case RtlCoverageKind::CoverProperty:
      return "cover";
  }
  return "?";
}

RtlCoverage RtlCoverage::parse(const std::string& text, const std::string& source) {
  RtlCoverage c;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  auto fail = [&](const std::string& why) {
    LOOM_THROW(Error, source, ":", n, ": not Verilator coverage data: ", why);
  };
  while (std::getline(in, line)) {
    ++n;
    if (n == 1) {
      if (line != kHeader) fail("the first line is not '" + std::string(kHeader) + "'");
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("C '", 0) != 0) fail("a point starts with C '");
    const size_t close = line.rfind("' ");
    if (close == std::string::npos || close < 3) fail("no closing quote before the count");
    const std::string key = line.substr(3, close - 3), count_text = line.substr(close + 2);
    if (count_text.empty() || count_text.size() > 19 || count_text.find_first_not_of("0123456789") != std::string::npos)
      fail("the count '" + count_text + "' is not a whole number");
    Point p;
    for (size_t at = 0; at < key.size();) {
      if (key[at] != kKeySep) fail("keys are separated by \\001");
      const size_t value = key.find(kValueSep, at);
      size_t next = key.find(kKeySep, at + 1);
      if (next == std::string::npos) next = key.size();
      if (value == std::string::npos || value > next) fail("a key without a value (\\002)");
      p.keys[key.substr(at + 1, value - at - 1)] = key.substr(value + 1, next - value - 1);
      at = next;
    }
    if (!p.keys.count("page")) fail("a point without a page");
    p.known_kind = kind_of_page(p.keys["page"], p.kind, p.module);
    c.counts_[key] += std::stoull(count_text);
    c.points_.emplace(key, std::move(p));
  }
  if (n == 0) fail("the file is empty");
  return c;
}

RtlCoverage RtlCoverage::load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) LOOM_THROW(Error, "cannot read the coverage file ", path);
  std::stringstream ss;
  ss << f.rdbuf();
  return parse(ss.str(), path);
}

void RtlCoverage::merge(const RtlCoverage& other) {
  for (const auto& [key, count] : other.counts_) {
    counts_[key] += count;
    points_.emplace(key, other.points_.at(key));
  }
}

std::string RtlCoverage::text() const {
  std::string s = std::string(kHeader) + "\n";
  for (const auto& [key, count] : counts_) s += "C '" + key + "' " + std::to_string(count) + "\n";
  return s;
}

void RtlCoverage::save(const std::string& path) const {
  const std::string tmp = path + ".part." + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text();
    if (!f.flush()) LOOM_THROW(Error, "cannot write the coverage file ", path);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) LOOM_THROW(Error, "cannot write the coverage file ", path, ": ", ec.message());
}

// Under an exclusive lock on PATH.lock, so that processes adding to one file do not lose counts.
void RtlCoverage::accumulate_into(const std::string& path) const {
  const std::string lock_path = path + ".lock";
  const int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) LOOM_THROW(Error, "cannot write the coverage file ", path, " (its lock ", lock_path, ")");
  struct Unlock {
    int fd;
    ~Unlock() { close(fd); }  // closing releases the lock
  } unlock{fd};
  if (flock(fd, LOCK_EX) != 0) LOOM_THROW(Error, "cannot lock the coverage file ", path);
  if (!std::filesystem::exists(path)) return save(path);
  RtlCoverage all = load(path);
  all.merge(*this);
  all.save(path);
}

std::map<std::string, std::pair<const RtlCoverage::Point*, uint64_t>> RtlCoverage::sources() const {
  std::map<std::string, std::pair<const Point*, uint64_t>> s;
  for (const auto& [key, count] : counts_) {
    const Point& p = points_.at(key);
    if (!p.known_kind) continue;
    std::string id = key;
    if (p.kind != RtlCoverageKind::CoverProperty) {
      id.clear();
      for (const auto& [k, v] : p.keys)  // the page without the parameterization: "v_line/loom_fifo"
        if (k != "h") id += k + "=" + (k == "page" ? std::string(to_string(p.kind)) + "/" + p.module : v) + kKeySep;
    }
    auto& slot = s[id];
    slot.first = &p;
    slot.second += count;
  }
  return s;
}

std::map<std::string, std::map<RtlCoverageKind, RtlCoverageFigure>> RtlCoverage::by_module() const {
  std::map<std::string, std::map<RtlCoverageKind, RtlCoverageFigure>> m;
  for (const auto& [id, pc] : sources()) {
    RtlCoverageFigure& f = m[pc.first->module][pc.first->kind];
    if (waived(*pc.first, pc.second)) {
      ++f.waived;
      continue;
    }
    ++f.points;
    f.hit += pc.second > 0;
  }
  return m;
}

RtlCoverageFigure RtlCoverage::total(RtlCoverageKind kind) const {
  RtlCoverageFigure t;
  for (const auto& [module, kinds] : by_module()) {
    auto it = kinds.find(kind);
    if (it == kinds.end()) continue;
    t.hit += it->second.hit;
    t.points += it->second.points;
    t.waived += it->second.waived;
  }
  return t;
}

std::vector<RtlCoverProperty> RtlCoverage::cover_properties() const {
  std::vector<RtlCoverProperty> v;
  for (const auto& [id, pc] : sources()) {
    const Point& p = *pc.first;
    if (p.kind != RtlCoverageKind::CoverProperty) continue;
    v.push_back({instance_of(value_of(p.keys, "h")), value_of(p.keys, "f"), line_of(p.keys), pc.second});
  }
  std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.instance < b.instance; });
  return v;
}

std::vector<RtlCoverageHole> RtlCoverage::holes(RtlCoverageKind kind) const {
  std::vector<RtlCoverageHole> v;
  for (const auto& [id, pc] : sources()) {
    const Point& p = *pc.first;
    if (p.kind != kind || pc.second > 0 || waived(p, pc.second)) continue;
    v.push_back({kind, p.module, value_of(p.keys, "f"), line_of(p.keys), value_of(p.keys, "o")});
  }
  std::sort(v.begin(), v.end(), [](auto& a, auto& b) {
    return std::tie(a.module, a.file, a.line, a.what) < std::tie(b.module, b.file, b.line, b.what);
  });
  return v;
}

namespace {

// "count_q[3]" -> "count_q", 3; "mem_q[2][7]" -> "mem_q[2]", 7; "halt" -> "halt", -1.
std::pair<std::string, long> split_bit(const std::string& what) {
  if (what.empty() || what.back() != ']') return {what, -1};
  const size_t open = what.rfind('[');
  if (open == std::string::npos) return {what, -1};
  const std::string digits = what.substr(open + 1, what.size() - open - 2);
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
    return {what, -1};
  return {what.substr(0, open), std::stol(digits)};
}

// Bits, highest first, as Verilog ranges: {31, 30, ..., 9, 3} -> "[31:9,3]".
std::string ranges_text(std::vector<long> bits) {
  std::sort(bits.rbegin(), bits.rend());
  std::string t;
  for (size_t i = 0; i < bits.size();) {
    size_t j = i;
    while (j + 1 < bits.size() && bits[j + 1] == bits[j] - 1) ++j;
    t += (t.empty() ? "" : ",") + std::to_string(bits[i]) + (j > i ? ":" + std::to_string(bits[j]) : "");
    i = j + 1;
  }
  return "[" + t + "]";
}

}  // namespace

std::vector<RtlToggleHoles> RtlCoverage::toggle_holes_by_signal() const {
  struct Signal {
    std::vector<long> unhit;
    size_t points = 0;
  };
  std::map<std::pair<std::string, std::string>, Signal> signals;
  for (const auto& [id, pc] : sources()) {
    const Point& p = *pc.first;
    if (p.kind != RtlCoverageKind::Toggle || waived(p, pc.second)) continue;
    const auto [signal, bit] = split_bit(value_of(p.keys, "o"));
    Signal& s = signals[{p.module, signal}];
    ++s.points;
    if (!pc.second) s.unhit.push_back(bit);
  }
  std::vector<RtlToggleHoles> v;
  for (const auto& [name, s] : signals) {
    if (s.unhit.empty()) continue;
    const bool one_bit = s.unhit.size() == 1 && s.unhit[0] < 0;
    v.push_back({name.first, name.second, one_bit ? "" : ranges_text(s.unhit), s.unhit.size(), s.points});
  }
  std::stable_sort(v.begin(), v.end(),
                   [](const RtlToggleHoles& a, const RtlToggleHoles& b) { return a.unhit > b.unhit; });
  return v;
}

int RtlCoverage::waiver_of(const Point& p) const {
  if (p.kind != RtlCoverageKind::Toggle || waivers_.empty()) return -1;
  const auto [signal, bit] = split_bit(value_of(p.keys, "o"));
  return waivers_.find(p.module, signal, bit);
}

std::vector<RtlWaiverUse> RtlCoverage::waiver_uses() const {
  std::vector<RtlWaiverUse> uses(waivers_.toggles().size());
  for (const auto& [id, pc] : sources())
    if (const int w = waiver_of(*pc.first); w >= 0) {
      if (pc.second)
        ++uses[size_t(w)].hit;
      else
        ++uses[size_t(w)].waived;
    }
  return uses;
}

}  // namespace loom::sim
