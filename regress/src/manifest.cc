#include "loom/regress/manifest.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "loom/accel/config.h"
#include "loom/regress/job_kind.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"
#include "loom/sim/backends.h"
#include "loom/sim/rtl_waivers.h"
#ifdef LOOM_HAVE_YAML
#include <yaml-cpp/yaml.h>
#endif

namespace loom::regress {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// The line and column of byte `pos` of `text` (1-based).
std::string line_of(const std::string& text, size_t pos) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < pos && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

// `s` with every character outside [A-Za-z0-9._-] as '-'.
std::string as_folder_name(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '-';
  return s;
}

// A folder name from a workload: characters outside [A-Za-z0-9._-] as '-', a file by its name.
std::string slug(const Workload& w, const std::string& text) {
  std::string s = w.kind == "program" || (w.kind == "model" && fs::path(w.target).has_parent_path())
                      ? w.kind + "-" + fs::path(w.target).filename().string() +
                            (w.image ? "-" + std::to_string(w.image) : std::string())
                      : text;
  return as_folder_name(s);
}

// 0.5, 600, 604800: a bound as a person writes it.
std::string number_text(double v) {
  std::ostringstream os;
  os << std::setprecision(10) << v;
  return os.str();
}

// Reads a manifest's JSON value at `where` with the checks every field needs.
struct Reader {
  std::string origin;
  std::string where;  // "group 'convs'", "the manifest"

  [[noreturn]] void fail(const std::string& what) const {
    LOOM_THROW(Error, "manifest '", origin, "': ", where, ": ", what);
  }
  void known_keys(const json& obj, const std::set<std::string>& keys) const {
    for (auto& [k, v] : obj.items())
      if (!keys.count(k)) {
        std::vector<std::string> all(keys.begin(), keys.end());
        fail("unknown key '" + k + "' (" + join(all) + ")");
      }
  }
  double number(const json& obj, const std::string& key, double fallback, double lo, double hi) const {
    if (!obj.contains(key)) return fallback;
    const json& v = obj.at(key);
    if (!v.is_number() || !(v.get<double>() >= lo) || !(v.get<double>() <= hi))
      fail("'" + key + "' must be a number in [" + number_text(lo) + ", " + number_text(hi) + "], got " + v.dump());
    return v.get<double>();
  }
  int64_t whole(const json& obj, const std::string& key, int64_t fallback, int64_t lo, int64_t hi) const {
    if (!obj.contains(key)) return fallback;
    const json& v = obj.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      fail("'" + key + "' must be a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
           v.dump());
    return v.get<int64_t>();
  }
  std::vector<std::string> strings(const json& obj, const std::string& key) const {
    if (!obj.contains(key)) return {};
    const json& v = obj.at(key);
    std::vector<std::string> out;
    if (v.is_string()) return {v.get<std::string>()};
    if (!v.is_array() || v.empty()) fail("'" + key + "' must be a string or a non-empty list of strings");
    for (const json& e : v) {
      if (!e.is_string()) fail("'" + key + "' must list strings, got " + e.dump());
      if (std::find(out.begin(), out.end(), e.get<std::string>()) != out.end())
        fail("'" + key + "' lists '" + e.get<std::string>() + "' twice");
      out.push_back(e.get<std::string>());
    }
    return out;
  }
};

// "random:{1..500}": one workload per number of the range (at most one range, 100,000 numbers).
// Braces of other forms ("${HOME}", "{ a; }") are left as they are; a command's own brace range
// ("{1..3}") is expanded too, so commands write it another way (seq).
std::vector<std::string> expand_range(const std::string& text, const Reader& r) {
  static const std::regex range(R"(\{([0-9]{1,18})\.\.([0-9]{1,18})\})");
  std::smatch m;
  if (!std::regex_search(text, m, range)) return {text};
  const std::string before = m.prefix(), after = m.suffix();
  if (std::regex_search(after, range)) r.fail("workload '" + text + "': at most one {FIRST..LAST} range per workload");
  const uint64_t first = std::stoull(m[1]), last = std::stoull(m[2]);
  if (last < first || last - first >= 100000)
    r.fail("workload '" + text + "': the range must count up and hold at most 100000 numbers");
  std::vector<std::string> v;
  for (uint64_t k = first; k <= last; ++k) v.push_back(before + std::to_string(k) + after);
  return v;
}

// A name that is one folder: letters, digits, '.', '_' and '-', and not "." or "..".
bool folder_name(const std::string& n) {
  return !n.empty() && n != "." && n != ".." &&
         n.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == std::string::npos;
}

bool known_backend(const std::string& b) {
  auto all = accel_backends();
  return std::find(all.begin(), all.end(), b) != all.end() || rpc::is_url(b);
}

// A config entry: "default", a JSON file (relative to the manifest), or an object of fields over
// the default. Returns the full config JSON, validated.
json resolve_config(const std::string& name, const json& entry, const std::string& base_dir, const Reader& r) {
  json cfg = json::parse(accel::default_config().to_json());
  std::string origin = "'" + name + "'";
  if (entry.is_string() && entry.get<std::string>() == "default") {
    // the built-in default
  } else if (entry.is_string()) {
    fs::path p = fs::path(base_dir) / entry.get<std::string>();
    std::ifstream f(p);
    if (!f) r.fail("config '" + name + "': cannot read '" + fs::absolute(p).lexically_normal().string() + "'");
    std::stringstream ss;
    ss << f.rdbuf();
    try {
      cfg = json::parse(ss.str());
    } catch (const json::parse_error& e) {
      r.fail("config '" + name + "': '" + p.string() + "' is not JSON: " + e.what());
    }
    origin = p.string();
  } else if (entry.is_object()) {
    for (auto& [k, v] : entry.items()) cfg[k] = v;
    cfg["name"] = name;
  } else {
    r.fail("config '" + name + "' must be \"default\", a JSON file or an object of config fields");
  }
  try {
    accel::AccelConfig c = accel::AccelConfig::from_json(cfg.dump(), origin);
    return json::parse(c.to_json());
  } catch (const Error& e) {
    r.fail(e.what());  // "accelerator config 'NAME': ..."
  }
}

#ifdef LOOM_HAVE_YAML
// A YAML document as the JSON it stands for: plain scalars that read as numbers, booleans or null
// are those; quoted ones stay strings.
json yaml_to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& e : n) a.push_back(yaml_to_json(e));
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = yaml_to_json(kv.second);
      return o;
    }
    case YAML::NodeType::Scalar:
      break;
  }
  const std::string& v = n.Scalar();
  if (n.Tag() == "!") return v;  // quoted
  if (v == "true" || v == "false") return v == "true";
  if (v == "null" || v == "~") return nullptr;
  int64_t i = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), i);
  if (ec == std::errc() && p == v.data() + v.size() && !v.empty()) return i;
  double d = 0;
  auto [q, ed] = std::from_chars(v.data(), v.data() + v.size(), d);
  if (ed == std::errc() && q == v.data() + v.size() && !v.empty() && std::isfinite(d)) return d;
  return v;  // text, and "nan" or "inf" too: no manifest field wants them
}
#endif

}  // namespace

Workload parse_workload(const std::string& text) {
  size_t colon = text.find(':');
  if (colon == std::string::npos || colon + 1 == text.size()) {
    std::string forms;
    for (const std::string& k : job_kind_names()) forms += (forms.empty() ? "" : ", ") + job_kind(k).syntax();
    LOOM_THROW(Error, "workload '", text, "': expected one of ", forms);
  }
  const std::string kind = text.substr(0, colon);
  const JobKind* k = find_job_kind(kind);
  if (!k) LOOM_THROW(Error, "workload '", text, "': ", unknown_job_kind(kind));
  return k->parse(text.substr(colon + 1), text);
}

json JobSpec::to_json() const {
  json e = {{"reference", expect.reference}};
  if (expect.max_cycles) e["max_cycles"] = *expect.max_cycles;
  if (expect.min_utilization) e["min_utilization"] = *expect.min_utilization;
  if (expect.min_accuracy) e["min_accuracy"] = *expect.min_accuracy;
  json j = {{"name", name},           {"group", group},     {"workload", workload}, {"config_name", config_name},
            {"config", config},       {"backend", backend}, {"device", device},     {"expect", e},
            {"timeout_s", timeout_s}, {"retries", retries}, {"seed", seed},         {"inputs", inputs},
            {"files", files}};
  if (!inputs_from.empty()) j["inputs_from"] = inputs_from;
  if (!params.empty()) j["params"] = params;
  if (rtl_coverage) j["rtl_coverage"] = true;
  return j;
}

JobSpec JobSpec::from_json(const json& j) {
  JobSpec s;
  try {
    s.name = j.at("name").get<std::string>();
    s.group = j.at("group").get<std::string>();
    s.workload = j.at("workload").get<std::string>();
    s.config_name = j.at("config_name").get<std::string>();
    s.config = j.at("config");
    s.backend = j.at("backend").get<std::string>();
    s.device = j.at("device");
    const json& e = j.at("expect");
    s.expect.reference = e.at("reference").get<std::string>();
    if (e.contains("max_cycles")) s.expect.max_cycles = e["max_cycles"].get<uint64_t>();
    if (e.contains("min_utilization")) s.expect.min_utilization = e["min_utilization"].get<double>();
    if (e.contains("min_accuracy")) s.expect.min_accuracy = e["min_accuracy"].get<double>();
    s.timeout_s = j.at("timeout_s").get<double>();
    s.retries = j.at("retries").get<int>();
    s.seed = j.at("seed").get<uint64_t>();
    s.inputs = j.at("inputs").get<int>();
    s.files = j.at("files").get<std::vector<std::string>>();
    s.inputs_from = j.value("inputs_from", std::string());
    s.params = j.value("params", json::object());
    s.rtl_coverage = j.value("rtl_coverage", false);
  } catch (const json::exception& e) {
    LOOM_THROW(Error, "job description ", j.dump().substr(0, 120), ": ", e.what());
  }
  return s;
}

Manifest parse_manifest(const std::string& text, const std::string& origin, const std::string& base_dir) {
  sim::register_backends();
  json root;
  const std::string ext = fs::path(origin).extension().string();
  if (ext == ".yaml" || ext == ".yml") {
#ifdef LOOM_HAVE_YAML
    try {
      root = yaml_to_json(YAML::Load(text));
    } catch (const YAML::Exception& e) {
      LOOM_THROW(Error, "manifest '", origin, "' line ", e.mark.line + 1, ", column ", e.mark.column + 1, ": ", e.msg);
    }
#else
    LOOM_THROW(Error, "manifest '", origin,
               "': this loom was built without YAML support (libyaml-cpp-dev); write the manifest as JSON");
#endif
  } else {
    try {
      root = json::parse(text);
    } catch (const json::parse_error& e) {
      std::string what = e.what();
      size_t cut = what.find("syntax error");
      LOOM_THROW(Error, "manifest '", origin, "' ", line_of(text, e.byte ? e.byte - 1 : 0), ": ",
                 cut == std::string::npos ? what : what.substr(cut));
    }
  }
  Reader top{origin, "the manifest"};
  if (!root.is_object()) top.fail("expected an object with \"jobs\"");
  top.known_keys(root, {"name", "configs", "jobs", "timeout_s", "retries", "seed", "device", "coverage_waivers"});
  Manifest m;
  m.path = origin;
  m.name = root.value("name", fs::path(origin).stem().string());
  if (!root.contains("name") || root["name"].is_string()) {
  } else {
    top.fail("'name' must be a string");
  }
  if (root.contains("coverage_waivers")) {
    if (!root["coverage_waivers"].is_string() || root["coverage_waivers"].get<std::string>().empty())
      top.fail("'coverage_waivers' must name a file (relative to the manifest)");
    m.coverage_waivers =
        fs::absolute(fs::path(base_dir) / root["coverage_waivers"].get<std::string>()).lexically_normal().string();
    try {
      sim::RtlWaivers::load(m.coverage_waivers);  // malformed waivers fail here, before any job runs
    } catch (const Error& e) {
      top.fail(std::string("'coverage_waivers': ") + e.what());
    }
  }
  const double timeout = top.number(root, "timeout_s", 600, 1, 7 * 86400);
  const int retries = int(top.whole(root, "retries", 1, 0, 10));
  const uint64_t seed = uint64_t(top.whole(root, "seed", 1, 0, INT64_MAX));
  std::map<std::string, json> configs = {{"default", json::parse(accel::default_config().to_json())}};
  if (root.contains("configs")) {
    if (!root["configs"].is_object()) top.fail("'configs' must map names to configs");
    for (auto& [name, entry] : root["configs"].items()) {
      if (!folder_name(name))
        top.fail("config name '" + name + "' may hold only letters, digits, '.', '_' and '-' (it names folders)");
      configs[name] = resolve_config(name, entry, base_dir, top);
    }
  }
  if (!root.contains("jobs") || !root["jobs"].is_array() || root["jobs"].empty())
    top.fail("'jobs' must be a non-empty list of job groups");
  std::set<std::string> names, groups;
  for (size_t gi = 0; gi < root["jobs"].size(); ++gi) {
    const json& g = root["jobs"][gi];
    Reader r{origin, "jobs[" + std::to_string(gi) + "]"};
    if (!g.is_object()) r.fail("expected an object");
    if (!g.contains("name") || !g["name"].is_string() || g["name"].get<std::string>().empty())
      r.fail("every job group needs a \"name\"");
    std::string group = g["name"];
    r.where += " ('" + group + "')";
    if (!folder_name(group)) r.fail("the name may hold only letters, digits, '.', '_' and '-' (it names a folder)");
    if (!groups.insert(group).second) r.fail("a group of this name comes earlier");
    r.known_keys(g, {"name", "workloads", "configs", "backends", "expect", "timeout_s", "retries", "seed", "inputs",
                     "inputs_from", "device", "files", "params"});
    // Files the group's jobs read besides their workload's (a script a command runs, a model a
    // command loads): their contents are part of the cache key.
    std::vector<std::string> group_files;
    for (const std::string& f : r.strings(g, "files")) {
      fs::path abs = fs::absolute(fs::path(base_dir) / f).lexically_normal();
      if (!fs::is_regular_file(abs)) r.fail("'files': no file '" + abs.string() + "'");
      group_files.push_back(abs.string());
    }
    // The workloads: strings, or {"name", "workload"} to name one.
    if (!g.contains("workloads") || !g["workloads"].is_array() || g["workloads"].empty())
      r.fail("'workloads' must be a non-empty list");
    std::vector<std::pair<std::string, std::string>> workloads;  // (slug, text)
    for (const json& w : g["workloads"]) {
      if (w.is_string()) {
        for (const std::string& text : expand_range(w.get<std::string>(), r)) workloads.emplace_back("", text);
      } else if (w.is_object() && w.size() == 2 && w.contains("name") && w["name"].is_string() &&
                 w.contains("workload") && w["workload"].is_string()) {
        std::string name = w["name"];
        if (!folder_name(name))
          r.fail("workload name '" + name + "' may hold only letters, digits, '.', '_' and '-' (it names a folder)");
        workloads.emplace_back(name, w["workload"].get<std::string>());
      } else {
        r.fail("a workload is a string or {\"name\": ..., \"workload\": ...}, got " + w.dump());
      }
    }
    std::vector<std::string> config_names = r.strings(g, "configs");
    const bool configs_given = !config_names.empty();
    if (!configs_given) config_names = {"default"};
    for (const auto& c : config_names)
      if (!configs.count(c)) {
        std::vector<std::string> all;
        for (auto& [k, v] : configs) all.push_back(k);
        r.fail("unknown config '" + c + "' (" + join(all) + ")");
      }
    std::vector<std::string> backends = r.strings(g, "backends");
    if (backends.empty()) r.fail("'backends' must list the backends to run on");
    for (const auto& b : backends)
      if (!known_backend(b))
        r.fail("unknown backend '" + b + "' (" + join(accel_backends()) + ", rpc://HOST:PORT/BACKEND)");
    Expectation expect;
    bool reference_given = false;
    if (g.contains("expect")) {
      const json& e = g["expect"];
      if (!e.is_object()) r.fail("'expect' must be an object");
      Reader er{origin, r.where + " expect"};
      er.known_keys(e, {"reference", "max_cycles", "min_utilization", "min_accuracy"});
      if (e.contains("reference")) {
        if (!e["reference"].is_string()) er.fail("'reference' must be \"cpu\", \"none\" or a backend");
        expect.reference = e["reference"];
        reference_given = true;
        if (expect.reference != "cpu" && expect.reference != "none" && !known_backend(expect.reference))
          er.fail("reference '" + expect.reference + "' is not cpu, none or a backend (" + join(accel_backends()) +
                  ")");
      }
      if (e.contains("max_cycles")) expect.max_cycles = uint64_t(er.whole(e, "max_cycles", 0, 1, INT64_MAX));
      if (e.contains("min_utilization")) expect.min_utilization = er.number(e, "min_utilization", 0, 0, 1);
      if (e.contains("min_accuracy")) expect.min_accuracy = er.number(e, "min_accuracy", 0, 0, 1);
    }
    json device = g.value("device", root.value("device", json::object()));
    if (!device.is_object()) r.fail("'device' must be an object of backend options");
    // A section per backend, named as the backend reads it (board-rtl reads "rtl").
    std::set<std::string> sections;
    for (const std::string& b : accel_backends()) sections.insert(b.rfind("board-", 0) == 0 ? b.substr(6) : b);
    for (auto& [k, v] : device.items())
      if (!sections.count(k) || !v.is_object())
        r.fail("'device': '" + k + "' is not one of the backends' option sections (" +
               join({sections.begin(), sections.end()}) + "), each an object: {\"rtl\": {\"dram_latency\": 40}}");
    const double job_timeout = r.number(g, "timeout_s", timeout, 1, 7 * 86400);
    const int job_retries = int(r.whole(g, "retries", retries, 0, 10));
    const uint64_t job_seed = uint64_t(r.whole(g, "seed", int64_t(seed), 0, INT64_MAX));
    const int inputs = int(r.whole(g, "inputs", 1, 1, 1000));
    // Parameters of the group's workload kind (dse-point: {"vthreads": 2}); part of the cache key.
    const json params = g.value("params", json::object());
    if (!params.is_object()) r.fail("'params' must be an object");
    // A folder of .npy inputs for model workloads: its files join the cache key.
    std::string inputs_from;
    if (g.contains("inputs_from")) {
      if (!g["inputs_from"].is_string()) r.fail("'inputs_from' must be a folder (a string)");
      fs::path abs = fs::absolute(fs::path(base_dir) / g["inputs_from"].get<std::string>()).lexically_normal();
      if (!fs::is_directory(abs)) r.fail("'inputs_from': no folder '" + abs.string() + "'");
      std::vector<std::string> npys;
      for (auto& e : fs::directory_iterator(abs))
        if (e.path().extension() == ".npy") npys.push_back(e.path().string());
      std::sort(npys.begin(), npys.end());
      if (npys.size() < size_t(inputs))
        r.fail("'inputs_from': '" + abs.string() + "' holds " + std::to_string(npys.size()) +
               " .npy files, fewer than the group's " + std::to_string(inputs) + " inputs");
      npys.resize(size_t(inputs));
      group_files.insert(group_files.end(), npys.begin(), npys.end());
      inputs_from = abs.string();
    }

    for (const auto& [given_slug, text] : workloads) {
      Workload w;
      try {
        w = parse_workload(text);
      } catch (const Error& e) {
        r.fail(e.what());
      }
      std::vector<std::string> files = group_files;
      // Called inside the kind's resolve, whose errors get the group's prefix below.
      auto file = [&](const std::string& p) {
        fs::path abs = fs::absolute(fs::path(base_dir) / p).lexically_normal();
        if (!fs::is_regular_file(abs)) LOOM_THROW(Error, "workload '", text, "': no file '", abs.string(), "'");
        files.push_back(abs.string());
        return abs.string();
      };
      const JobKind& kind = job_kind(w.kind);
      ResolvedWorkload rw;
      try {
        rw = kind.resolve(w, text, file);
      } catch (const Error& e) {
        r.fail(e.what());
      }
      const bool own_config = rw.own_config;
      if (own_config && configs_given)
        r.fail("workload '" + text + "' carries its accelerator config: leave 'configs' out of this group");
      Expectation ex = expect;
      if (!reference_given) ex.reference = rw.default_reference;
      if (ex.reference == "cpu" && !rw.cpu_reference && rw.no_reference.empty())
        r.fail("workload '" + text + "' has no CPU reference: expect a backend, or \"reference\": \"none\"");
      if (ex.reference != "none" && !rw.no_reference.empty())
        r.fail("workload '" + text + "' is a " + w.kind + ": " + rw.no_reference +
               "; give \"reference\": \"none\" or leave it out");
      if (ex.min_accuracy && !rw.accuracy)
        r.fail("min_accuracy needs a model workload that Loom quantizes (model:NAME or model:FILE.onnx)");
      if (!inputs_from.empty() && !rw.model_inputs)
        r.fail("'inputs_from' gives a model's inputs: workload '" + text + "' is no model");
      try {
        kind.check_params(params);
      } catch (const Error& e) {
        r.fail("workload '" + text + "': " + e.what());
      }
      for (const auto& c : config_names)
        for (const auto& b : backends) {
          JobSpec s;
          s.group = group;
          s.workload = rw.text;  // with absolute paths, so that a worker anywhere finds the files
          s.config_name = own_config ? "own" : c;
          s.config = own_config ? json() : configs.at(c);
          s.backend = b;
          s.device = device;
          s.expect = ex;
          s.timeout_s = job_timeout;
          s.retries = job_retries;
          s.seed = job_seed;
          s.inputs = inputs;
          s.inputs_from = inputs_from;
          s.params = params;
          s.files = files;
          s.name = group + "/" + (given_slug.empty() ? slug(w, text) : given_slug) + "/" + s.config_name + "/" +
                   as_folder_name(b);
          if (!names.insert(s.name).second)
            r.fail("two jobs are named '" + s.name + "' (give the workloads distinct names: {\"name\", \"workload\"})");
          m.jobs.push_back(std::move(s));
        }
    }
  }
  return m;
}

Manifest load_manifest(const std::string& path) {
  std::ifstream f(path);
  if (!f) LOOM_THROW(Error, "cannot read the manifest '", path, "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_manifest(ss.str(), path, fs::path(path).parent_path().string());
}

}  // namespace loom::regress
