// Rounding presets: a requantization's rounding constant, added to accumulators in place on the
// ALU after the GEMMs, costs one pass over them; the reset before the GEMMs costs another. A MOV
// of the constant instead of the reset (the same one cycle an entry) gives the same sums, since
// the accumulators' addition wraps around, and the ADD pass is gone.
#include <algorithm>
#include <set>

#include "accel_emitter.h"

namespace loom::codegen::accel_backend {

void Emitter::forget_resets(const std::vector<uint32_t>& entries) {
  for (uint32_t e : entries) zeroed_by_.erase(e);
}

void Emitter::note_reset(const accel::UopKernel& zero) {
  const size_t index = drv_.stream().size() - 1;
  std::vector<uint32_t> entries = kernel_entries(zero, UopField::Dst);
  for (uint32_t e : entries) zeroed_by_[e] = index;
  reset_entries_[index] = std::move(entries);
}

void Emitter::alu(const accel::UopKernel& k, accel::AluOp op, bool use_imm, int32_t imm) {
  forget_resets(kernel_entries(k, UopField::Dst));
  if (!use_imm) forget_resets(kernel_entries(k, UopField::Src));
  drv_.alu(k, op, use_imm, imm);
}

bool Emitter::emit_round_preset(const accel::UopKernel& k, int32_t imm) {
  std::vector<uint32_t> added = kernel_entries(k, UopField::Dst);
  std::sort(added.begin(), added.end());
  if (added.empty() || std::adjacent_find(added.begin(), added.end()) != added.end()) return false;
  // Every entry zeroed by a reset still pristine, and every entry those resets zero added to.
  std::set<size_t> resets;
  for (uint32_t e : added) {
    auto it = zeroed_by_.find(e);
    if (it == zeroed_by_.end()) return false;
    resets.insert(it->second);
  }
  for (size_t r : resets) {
    for (uint32_t e : reset_entries_.at(r)) {
      auto it = zeroed_by_.find(e);
      if (it == zeroed_by_.end() || it->second != r || !std::binary_search(added.begin(), added.end(), e)) return false;
    }
  }
  for (size_t r : resets) drv_.preset_reset(r, imm);
  forget_resets(added);
  return true;
}

}  // namespace loom::codegen::accel_backend
