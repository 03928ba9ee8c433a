// Subcommand registry of the `loom` tool. Each cmd_*.cc file registers its subcommands with a
// static LOOM_REGISTER_COMMAND, so adding a subcommand touches no other file.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace loom::tools {

struct Command {
  std::string name;
  std::string summary;  // one line for `loom help`
  std::string usage;    // full usage text for `loom help NAME`
  std::function<int(const std::vector<std::string>& args)> run;
};

std::map<std::string, Command>& command_registry();

struct CommandRegistrar {
  explicit CommandRegistrar(Command c) { command_registry()[c.name] = std::move(c); }
};

// Simple `--key value` / `--flag` option parsing shared by subcommands.
class Options {
 public:
  Options(const std::vector<std::string>& args, const std::vector<std::string>& flags = {});
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  std::string get(const std::string& key, const std::string& fallback = "") const;
  long long get_int(const std::string& key, long long fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

}  // namespace loom::tools

#define LOOM_REGISTER_COMMAND_CAT2(a, b) a##b
#define LOOM_REGISTER_COMMAND_CAT(a, b) LOOM_REGISTER_COMMAND_CAT2(a, b)
#define LOOM_REGISTER_COMMAND(...)                                                             \
  static ::loom::tools::CommandRegistrar LOOM_REGISTER_COMMAND_CAT(loom_command_, __LINE__)( \
      ::loom::tools::Command{__VA_ARGS__})
