#include "reset_presets.h"

#include <algorithm>
#include <set>

namespace loom::codegen::accel_backend {

void ResetPresets::note_reset(size_t insn, std::vector<uint32_t> entries) {
  for (uint32_t e : entries) zeroed_by_[e] = insn;
  reset_entries_[insn] = std::move(entries);
}

void ResetPresets::touch(const std::vector<uint32_t>& entries) {
  for (uint32_t e : entries) zeroed_by_.erase(e);
}

std::vector<size_t> ResetPresets::take(std::vector<uint32_t> added) {
  std::sort(added.begin(), added.end());
  if (added.empty() || std::adjacent_find(added.begin(), added.end()) != added.end()) return {};
  std::set<size_t> resets;
  for (uint32_t e : added) {
    auto it = zeroed_by_.find(e);
    if (it == zeroed_by_.end()) return {};
    resets.insert(it->second);
  }
  // Each reset whole: every entry it zeroed still its zero, and added to.
  for (size_t r : resets)
    for (uint32_t e : reset_entries_.at(r)) {
      auto it = zeroed_by_.find(e);
      if (it == zeroed_by_.end() || it->second != r || !std::binary_search(added.begin(), added.end(), e)) return {};
    }
  touch(added);
  return {resets.begin(), resets.end()};
}

}  // namespace loom::codegen::accel_backend
