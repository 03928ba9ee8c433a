#include "synth_record.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "loom/runtime/disk_cache.h"
#include "loom/runtime/error.h"

namespace loom::tools {

namespace fs = std::filesystem;

namespace {

// A second seed for the key's other half: two independent 64-bit hashes.
constexpr uint64_t kSecondSeed = 0x9e3779b97f4a7c15ull;
constexpr const char* kWhat = "loom hw-report record: yosys' statistics of one synthesis and the key of its inputs";

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) LOOM_THROW(Error, "cannot read '", p.string(), "'");
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

}  // namespace

SynthInputs synth_inputs(const std::string& yosys_version, const std::string& script, const fs::path& out_dir,
                         const fs::path& rtl_dir, const fs::path& package, const std::vector<fs::path>& rtl_files) {
  std::string portable = script;
  // The longer path first: one folder may sit inside the other.
  std::vector<std::pair<std::string, std::string>> folders{{out_dir.string(), "$OUT"}, {rtl_dir.string(), "$RTL"}};
  if (folders[0].first.size() < folders[1].first.size()) std::swap(folders[0], folders[1]);
  for (const auto& [path, name] : folders) replace_all(portable, path, name);
  SynthInputs inputs;
  inputs["yosys"] = runtime::content_hash(yosys_version);
  inputs["script"] = runtime::content_hash(portable);
  inputs[package.filename().string()] = runtime::binary_digest(read_bytes(package));
  for (const fs::path& f : rtl_files) inputs["rtl/" + f.filename().string()] = runtime::binary_digest(read_bytes(f));
  return inputs;
}

std::string synth_key(const SynthInputs& inputs) {
  std::string text;
  for (const auto& [name, hash] : inputs) text += name + " " + hash + "\n";
  return runtime::content_hash(text) + runtime::content_hash(text, kSecondSeed);
}

SynthRecord read_synth_record(const fs::path& file) {
  const std::string where = "hw-report record '" + file.string() + "'";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_bytes(file));
  } catch (const nlohmann::json::exception& e) {
    LOOM_THROW(ConfigError, where, ": not JSON (", e.what(), ")");
  }
  SynthRecord r;
  try {
    r.key = j.at("key").get<std::string>();
    r.inputs = j.at("inputs").get<SynthInputs>();
    r.yosys_version = j.at("yosys").get<std::string>();
    r.stat_json = j.at("stat").dump(1) + "\n";
  } catch (const nlohmann::json::exception& e) {
    LOOM_THROW(ConfigError, where, ": ", e.what(), " (expected key, inputs, yosys and stat)");
  }
  if (r.inputs.empty() || synth_key(r.inputs) != r.key)
    LOOM_THROW(ConfigError, where, ": its key is not the key of the inputs it lists (edited or damaged; write a ",
               "fresh one with --record)");
  return r;
}

void write_synth_record(const fs::path& file, const SynthRecord& record) {
  nlohmann::json j;
  j["what"] = kWhat;
  j["key"] = record.key;
  j["inputs"] = record.inputs;
  j["yosys"] = record.yosys_version;
  try {
    j["stat"] = nlohmann::json::parse(record.stat_json);
  } catch (const nlohmann::json::exception& e) {
    LOOM_THROW(Error, "yosys' statistics are not JSON (", e.what(), ")");
  }
  if (!runtime::write_file_atomically(file, j.dump(1) + "\n")) LOOM_THROW(Error, "cannot write '", file.string(), "'");
}

std::vector<std::string> changed_synth_inputs(const SynthInputs& recorded, const SynthInputs& now) {
  std::vector<std::string> changes;
  for (const auto& [name, hash] : now) {
    auto it = recorded.find(name);
    if (it == recorded.end())
      changes.push_back(name + " added");
    else if (it->second != hash)
      changes.push_back(name + " changed");
  }
  for (const auto& [name, hash] : recorded)
    if (!now.count(name)) changes.push_back(name + " removed");
  std::sort(changes.begin(), changes.end());
  return changes;
}

}  // namespace loom::tools
