// Subcommand registry of the `loom` tool. Each cmd_*.cc file registers its subcommands with a
// static LOOM_REGISTER_COMMAND, so adding a subcommand touches no other file. A subcommand parses
// its arguments with CLI11 (cli.h), so `loom NAME --help` (and `loom help NAME`) lists its options.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace loom::tools {

struct Command {
  std::string name;
  std::string summary;  // one line for `loom help`
  std::function<int(const std::vector<std::string>& args)> run;
};

std::map<std::string, Command>& command_registry();

struct CommandRegistrar {
  explicit CommandRegistrar(Command c) { command_registry()[c.name] = std::move(c); }
};

}  // namespace loom::tools

#define LOOM_REGISTER_COMMAND_CAT2(a, b) a##b
#define LOOM_REGISTER_COMMAND_CAT(a, b) LOOM_REGISTER_COMMAND_CAT2(a, b)
#define LOOM_REGISTER_COMMAND(...)                                                \
  static ::loom::tools::CommandRegistrar LOOM_REGISTER_COMMAND_CAT(loom_command_, \
                                                                   __LINE__)(::loom::tools::Command{__VA_ARGS__})
