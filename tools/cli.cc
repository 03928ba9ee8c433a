#include "cli.h"

#include "loom/runtime/error.h"

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

// A whole decimal integer, or -1 if `text` is anything else (empty, trailing junk, out of range).
long long whole_integer(const std::string& text) {
  size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    return -1;
  }
  return used == text.size() ? v : -1;
}

// --shape-var NAME=MIN..MAX.
runtime::ShapeVar parse_shape_var(const std::string& text) {
  auto eq = text.find('='), dots = text.find("..");
  long long lo = -1, hi = -1;
  if (eq != std::string::npos && dots != std::string::npos && dots > eq) {
    lo = whole_integer(text.substr(eq + 1, dots - eq - 1));
    hi = whole_integer(text.substr(dots + 2));
  }
  if (eq == 0 || lo < 0 || hi < lo)
    LOOM_THROW(Error, "--shape-var '", text, "' must be NAME=MIN..MAX with 0 <= MIN <= MAX (seq=1..512, past=0..511)");
  return {text.substr(0, eq), lo, hi};
}

}  // namespace loom::tools
