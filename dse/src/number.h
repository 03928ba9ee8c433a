// Strict decimal numbers for sweep values and workload texts.
#pragma once
#include <charconv>
#include <string>

namespace loom::dse::detail {

// The whole of `text` as a decimal number (no leading or trailing characters, no NaN).
inline bool parse_decimal(const std::string& text, double& value) {
  const char *b = text.data(), *e = b + text.size();
  auto [p, ec] = std::from_chars(b, e, value, std::chars_format::general);
  return b != e && ec == std::errc() && p == e && value == value;
}

}  // namespace loom::dse::detail
