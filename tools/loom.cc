// `loom`: the command-line entry point. Subcommands live in cmd_*.cc files.
#include <algorithm>
#include <exception>
#include <iostream>

#include "command.h"
#include "loom/runtime/error.h"

namespace loom::tools {

std::map<std::string, Command>& command_registry() {
  static std::map<std::string, Command> registry;
  return registry;
}

Options::Options(const std::vector<std::string>& args, const std::vector<std::string>& flags) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) == 0) {
      std::string key = a.substr(2);
      auto eq = key.find('=');
      if (eq != std::string::npos) {
        values_[key.substr(0, eq)] = key.substr(eq + 1);
      } else if (std::find(flags.begin(), flags.end(), key) != flags.end() || i + 1 == args.size()) {
        values_[key] = "1";
      } else {
        values_[key] = args[++i];
      }
    } else {
      positional_.push_back(a);
    }
  }
}

std::string Options::get(const std::string& key, const std::string& fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

long long Options::get_int(const std::string& key, long long fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  try {
    return std::stoll(it->second);
  } catch (const std::exception&) {
    LOOM_THROW(Error, "option --", key, " expects an integer, got '", it->second, "'");
  }
}

static int print_help(const std::vector<std::string>& args) {
  auto& reg = command_registry();
  if (!args.empty() && reg.count(args[0])) {
    std::cout << reg[args[0]].usage << "\n";
    return 0;
  }
  std::cout << "usage: loom <command> [options]\n\ncommands:\n";
  for (auto& [name, cmd] : reg) std::cout << "  " << name << std::string(14 - std::min<size_t>(13, name.size()), ' ') << cmd.summary << "\n";
  std::cout << "\n`loom help <command>` shows a command's options.\n";
  return 0;
}

LOOM_REGISTER_COMMAND("help", "show commands, or one command's usage", "loom help [command]", print_help);

}  // namespace loom::tools

namespace loom::sim {
void register_functional_sim();
void register_rtl_sim();
}

int main(int argc, char** argv) {
  using namespace loom::tools;
  // Accelerator backends register by name; referencing them here also keeps their libraries linked.
  loom::sim::register_functional_sim();
#ifdef LOOM_HAVE_RTL
  loom::sim::register_rtl_sim();
#endif
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string name = args.empty() ? "help" : args[0];
  if (!args.empty()) args.erase(args.begin());
  auto& reg = command_registry();
  auto it = reg.find(name);
  if (it == reg.end()) {
    std::cerr << "loom: unknown command '" << name << "' (try `loom help`)\n";
    return 2;
  }
  try {
    return it->second.run(args);
  } catch (const loom::Error& e) {
    std::cerr << "loom " << name << ": error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "loom " << name << ": error: " << e.what() << "\n";
    return 1;
  }
}
