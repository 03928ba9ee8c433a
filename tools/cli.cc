#include "cli.h"

#include <filesystem>
#include <iostream>

namespace loom::tools {

int parse(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
      // CLI11 lists the extras last first; name the unknown options, then anything else.
      std::string options, others;
      for (const std::string& a : app.remaining()) (a.size() > 1 && a[0] == '-' ? options : others) += " " + a;
      what = options.empty()
                 ? "unexpected argument(s):" + others
                 : "unknown option(s):" + options + (others.empty() ? "" : "; unexpected argument(s):" + others);
    }
    std::cerr << app.get_name() << ": error: " << what << "\nRun `" << app.get_name() << " --help` for its options.\n";
    return 2;
  }
  return -1;
}

CLI::Validator positive_up_to(double hi) {
  return CLI::Validator(
      [hi](std::string& text) {
        double v = 0;
        if (detail::parse_number(text, v) && v > 0 && v <= hi) {
          text = detail::number_text(v);
          return std::string();
        }
        return "Value " + text + " not in range: above 0 and at most " + detail::number_text(hi);
      },
      "in (0, " + detail::number_text(hi) + "]");
}

CLI::Validator output_file() {
  return CLI::Validator(
      [](std::string& path) {
        namespace fs = std::filesystem;
        std::error_code ec;
        fs::path p(path), parent = p.parent_path();
        if (path.empty()) return std::string("cannot write to an empty path");
        if (!parent.empty() && !fs::is_directory(parent, ec))
          return "cannot write '" + path + "': no folder '" + parent.string() + "'";
        if (fs::is_directory(p, ec)) return "cannot write '" + path + "': it is a folder";
        return std::string();
      },
      "FILE");
}

}  // namespace loom::tools
