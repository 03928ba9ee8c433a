// `loom`: the command-line entry point. Subcommands live in cmd_*.cc files and parse their own
// options with CLI11 (cli.h).
#include <algorithm>
#include <exception>
#include <iostream>

#include "command.h"

namespace loom::tools {

std::map<std::string, Command>& command_registry() {
  static std::map<std::string, Command> registry;
  return registry;
}

// `loom help`: the commands; `loom help NAME`: NAME's options (as `loom NAME --help`).
static int print_help(const std::vector<std::string>& args) {
  auto& reg = command_registry();
  if (args.size() == 1 && reg.count(args[0]) && args[0] != "help") return reg[args[0]].run({"--help"});
  if (!args.empty() && args[0] != "help" && args[0] != "--help" && args[0] != "-h") {
    std::cerr << "loom help: error: unknown command '" << args[0] << "' (try `loom help`)\n";
    return 2;
  }
  std::cout << "usage: loom <command> [options]\n\ncommands:\n";
  for (auto& [name, cmd] : reg)
    std::cout << "  " << name << std::string(14 - std::min<size_t>(13, name.size()), ' ') << cmd.summary << "\n";
  std::cout << "\n`loom <command> --help` (or `loom help <command>`) lists a command's options.\n";
  return 0;
}

LOOM_REGISTER_COMMAND("help", "show the commands, or one command's options", print_help);

}  // namespace loom::tools

int main(int argc, char** argv) {
  using namespace loom::tools;
  std::string name = argc > 1 ? argv[1] : "help";
  if (name == "--help" || name == "-h") name = "help";
  try {
    std::vector<std::string> args(argv + std::min(argc, 2), argv + argc);
    auto& reg = command_registry();
    auto it = reg.find(name);
    if (it == reg.end()) {
      std::cerr << "loom: unknown command '" << name << "' (try `loom help`)\n";
      return 2;
    }
    return it->second.run(args);
  } catch (const std::exception& e) {  // loom::Error and everything else
    std::cerr << "loom " << name << ": error: " << e.what() << "\n";
    return 1;
  } catch (...) {
    std::cerr << "loom " << name << ": error: unknown exception\n";
    return 1;
  }
}
