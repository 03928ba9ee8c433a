// "Did you mean" for names a user types: config fields, manifest keys, layer names, options.
#pragma once
#include <string>
#include <vector>

namespace loom {

// The known name closest to `name` by edit distance (insertions, deletions, substitutions and
// swaps of neighbours, case ignored), or "" when none is within a third of the longer name.
std::string closest_name(const std::string& name, const std::vector<std::string>& known);

// " (did you mean 'block_in'?)" when closest_name finds one, else "".
std::string did_you_mean(const std::string& name, const std::vector<std::string>& known);

}  // namespace loom
