#include "loom/runtime/suggest.h"

#include <algorithm>
#include <cctype>

namespace loom {

namespace {

// Optimal string alignment distance (Damerau-Levenshtein without repeated edits of one substring).
size_t edit_distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  auto lower = [](char c) { return std::tolower(static_cast<unsigned char>(c)); };
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

}  // namespace

std::string closest_name(const std::string& name, const std::vector<std::string>& known) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const std::string& k : known) {
    size_t d = edit_distance(name, k);
    if (d < best_d) best_d = d, best = k;
  }
  if (best.empty() || best_d == 0) return best;
  size_t longer = std::max(name.size(), best.size());
  return best_d * 3 <= longer ? best : std::string();
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& known) {
  std::string c = closest_name(name, known);
  return c.empty() ? std::string() : " (did you mean '" + c + "'?)";
}

}  // namespace loom
