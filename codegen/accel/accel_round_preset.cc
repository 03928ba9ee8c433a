// Rounding presets: a requantization's rounding constant, added to accumulators in place on the
// ALU after the GEMMs, costs one pass over them; the reset before the GEMMs costs another. A MOV
// of the constant instead of the reset (the same one cycle an entry) gives the same sums, since
// the accumulators' addition wraps around, and the ADD pass is gone.
#include "accel_emitter.h"

namespace loom::codegen::accel_backend {

void Emitter::note_reset(const accel::UopKernel& zero) {
  resets_.note_reset(drv_.stream().size() - 1, zero.entries(UopField::Dst));
}

void Emitter::alu(const accel::UopKernel& k, accel::AluOp op, bool use_imm, int32_t imm) {
  resets_.touch(k.entries(UopField::Dst));
  if (!use_imm) resets_.touch(k.entries(UopField::Src));
  drv_.alu(k, op, use_imm, imm);
}

bool Emitter::emit_round_preset(const accel::UopKernel& k, int32_t imm) {
  const std::vector<size_t> resets = resets_.take(k.entries(UopField::Dst));
  for (size_t r : resets) drv_.preset_reset(r, imm);
  return !resets.empty();
}

}  // namespace loom::codegen::accel_backend
