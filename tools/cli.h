// Option parsing of the `loom` subcommands, with CLI11: every subcommand builds a CLI::App, so
// unknown options, missing values and positionals, malformed numbers ("16abc") and out-of-range
// values are errors naming the option, and `loom <command> --help` lists its options.
#pragma once
#include <CLI/CLI.hpp>

#include <charconv>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/runtime/dim_expr.h"

namespace loom::tools {

// Parses `args` (the command line after the subcommand's name) with `app`. Returns -1 to go on,
// or the exit code: 0 after printing the help (--help), 2 after printing a usage error.
int parse(CLI::App& app, const std::vector<std::string>& args);

// A whole decimal integer, or -1 if `text` is anything else (empty, trailing junk, out of range).
long long whole_integer(const std::string& text);
// --shape-var NAME=MIN..MAX (Error naming the text otherwise).
runtime::ShapeVar parse_shape_var(const std::string& text);

namespace detail {
// The whole of `text` as a decimal number (no sign for unsigned types, no hex or octal, no
// leading or trailing characters); false if it is not one or does not fit T.
template <typename T>
bool parse_number(const std::string& text, T& value) {
  const char *b = text.data(), *e = b + text.size();
  if constexpr (std::is_floating_point_v<T>) {
    auto [p, ec] = std::from_chars(b, e, value, std::chars_format::general);
    return b != e && ec == std::errc() && p == e && value == value;  // no NaN
  } else {
    auto [p, ec] = std::from_chars(b, e, value, 10);  // "-1" is no unsigned number: no wrapping
    return b != e && ec == std::errc() && p == e;
  }
}
template <typename T>
std::string number_text(T v) {
  std::ostringstream os;
  if constexpr (std::is_floating_point_v<T>) os.precision(17);
  os << v;
  return os.str();
}
}  // namespace detail

// A decimal number in [lo, hi], parsed strictly: "Value 16abc not in range 1 to 4096". Use it with
// Option::transform (see number_option): it rewrites the text in canonical form, so that CLI11's
// own conversion reads exactly the value checked (CLI11 alone takes "010" as octal, wraps "-1" into
// unsigned types and saturates on overflow).
template <typename T>
CLI::Validator in_range(T lo, T hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) {
        T v{};
        if (detail::parse_number(text, v) && !(v < lo) && !(hi < v)) {
          text = detail::number_text(v);
          return std::string();
        }
        return "Value " + text + " not in range " + detail::number_text(lo) + " to " + detail::number_text(hi);
      },
      hi != std::numeric_limits<T>::max()      ? "in [" + detail::number_text(lo) + ", " + detail::number_text(hi) + "]"
      : lo != std::numeric_limits<T>::lowest() ? ">= " + detail::number_text(lo)
                                               : std::string());
}

// `name` as an option holding a decimal number in [lo, hi].
template <typename T, typename L, typename H>
CLI::Option* number_option(CLI::App& app, const std::string& name, T& value, const std::string& help, L lo, H hi) {
  return app.add_option(name, value, help)->transform(in_range<T>(T(lo), T(hi)));
}

// A real number in (0, hi]: "Value 0 not in range: above 0 and at most 4096".
CLI::Validator positive_up_to(double hi);

// A file to write: its folder must exist and it must not be a folder itself. Checked while
// parsing, so a bad path fails before any work starts: "cannot write 'x/y': no folder 'x'".
CLI::Validator output_file();

}  // namespace loom::tools
