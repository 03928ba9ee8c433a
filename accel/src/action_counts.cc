#include "loom/accel/action_counts.h"

namespace loom::accel {

ActionCounts count_actions(const std::vector<Instruction>& stream, const AccelConfig& c) {
  ActionCounts n(size_t(AccelCounter::Count), 0);
  auto add = [&](AccelCounter k, uint64_t v) { n[size_t(k)] += v; };
  const uint64_t lanes = uint64_t(c.batch) * c.block_out;
  for (const Instruction& i : stream) {
    const uint64_t moved = uint64_t(i.y_size) * i.x_size;
    const uint64_t written = uint64_t(i.y_pad0 + i.y_size + i.y_pad1) * (i.x_pad0 + i.x_size + i.x_pad1);
    const uint64_t steps = uint64_t(i.iter_out) * i.iter_in * (i.uop_end - i.uop_begin);
    switch (i.opcode) {
      case Opcode::Load:
        switch (i.mem) {
          case MemType::Uop:
            add(AccelCounter::UopLoadInsns, 1);
            add(AccelCounter::DmaLoadBytesUop, moved * uint64_t(entry_bytes(c, i.mem)));
            break;
          case MemType::Acc:
            add(AccelCounter::AccLoadInsns, 1);
            add(AccelCounter::DmaLoadBytesAcc, moved * uint64_t(entry_bytes(c, i.mem)));
            add(AccelCounter::PadEntriesAcc, written - moved);
            break;
          case MemType::Wgt:
            add(AccelCounter::LoadInsns, 1);
            add(AccelCounter::DmaLoadBytesWgt, moved * uint64_t(entry_bytes(c, i.mem)));
            add(AccelCounter::PadEntriesWgt, written - moved);
            break;
          default:
            add(AccelCounter::LoadInsns, 1);
            add(AccelCounter::DmaLoadBytesInp, moved * uint64_t(entry_bytes(c, i.mem)));
            add(AccelCounter::PadEntriesInp, written - moved);
            break;
        }
        break;
      case Opcode::Store:
        add(AccelCounter::StoreInsns, 1);
        add(AccelCounter::DmaStoreBytes, moved * uint64_t(entry_bytes(c, MemType::Out)));
        break;
      case Opcode::Gemm:
        add(AccelCounter::GemmInsns, 1);
        if (i.reset)
          add(AccelCounter::GemmResetSteps, steps);
        else
          add(AccelCounter::GemmMacs, steps * lanes * uint64_t(c.block_in));
        break;
      case Opcode::Alu:
        add(AccelCounter::AluInsns, 1);
        add(AccelCounter::AluOps, steps * lanes);
        if (!i.use_imm) add(AccelCounter::AluVectorOps, steps * lanes);
        break;
      case Opcode::Finish:
        break;
    }
  }
  return n;
}

}  // namespace loom::accel
