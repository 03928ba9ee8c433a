// Small helpers the benches share: the CPU they ran on, comma-separated option lists, counts
// given on the command line, and the output of a baseline's helper command (PyTorch, ONNX Runtime).
#pragma once
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace loom::bench {

// "AMD EPYC (family 25, model 1)": the model name alone does not tell Zen generations apart.
inline std::string cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, name = "unknown CPU", family, model;
  while (std::getline(f, line)) {
    auto value = [&] { return line.substr(line.find(':') + 2); };
    if (line.rfind("model name", 0) == 0 && name == "unknown CPU")
      name = value();
    else if (line.rfind("cpu family", 0) == 0 && family.empty())
      family = value();
    else if (line.rfind("model\t", 0) == 0 && model.empty())
      model = value();
  }
  return name + " (family " + family + ", model " + model + ")";
}

// "a,b,c" -> {"a", "b", "c"}.
inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

// A whole number in [1, max] given to `option`; std::invalid_argument naming the option and the
// value otherwise ("abc", "-1", "3x", a number past max).
inline int count_option(const std::string& value, const char* option, int max) {
  size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size() || n < 1 || n > max)
    throw std::invalid_argument(std::string(option) + ": '" + value + "' is not a whole number in [1, " +
                                std::to_string(max) + "]");
  return int(n);
}

// Everything `command` prints on stdout ("" if it cannot be started).
inline std::string command_output(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(command.c_str(), "r"), pclose);
  if (!p) return "";
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p.get())) out += buf;
  return out;
}

}  // namespace loom::bench
